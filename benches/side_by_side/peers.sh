#!/usr/bin/env bash
# Side-by-side timing of `pld` against Opake 0.16.1 and prv_accountant 0.2.0 (see
# vs_peers.py). Makes the pinned venv benches/side_by_side/.venv-peers if missing (Opake
# needs CPython 3.13: set PYTHON313 to its interpreter if `python3.13` is not on the PATH),
# builds the release binary, then runs the comparison. Needs PyPI the first time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV=benches/side_by_side/.venv-peers
if [ ! -x "$VENV/bin/python" ]; then
  PY="${PYTHON313:-}"
  if [ -z "$PY" ]; then
    if command -v python3.13 >/dev/null 2>&1; then
      PY=python3.13
    else
      echo "peers.sh: Opake 0.16.1 needs CPython 3.13 (it fails to import on 3.11 and 3.12);" >&2
      echo "put python3.13 on the PATH or set PYTHON313=/path/to/python3.13" >&2
      exit 2
    fi
  fi
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
  -r benches/side_by_side/peers-requirements.txt
# Its DP-SGD accounting factories, without the training stack it declares (torch).
"$VENV/bin/python" -m pip install --disable-pip-version-check --quiet --no-deps \
  opake-dpsgd==0.16.1
cargo build --release --quiet --bin pld
# `pld` timed from a copy unless PLD names a binary (see run.sh).
if [ -z "${PLD:-}" ]; then
  COPY_DIR=$(mktemp -d)
  trap 'rm -rf "$COPY_DIR"' EXIT
  cp target/release/pld "$COPY_DIR/pld"
  export PLD="$COPY_DIR/pld"
fi
PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" benches/side_by_side/vs_peers.py
