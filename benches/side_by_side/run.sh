#!/usr/bin/env bash
# Side-by-side timing of `pld` (whole process) and of the Python package (in-process) against
# Google's dp_accounting 0.6.0 (see vs_dp_accounting.py),
# then the engine against the realfft floor of its transforms (benches/fft_floor.rs).
# Makes the pinned venv of the fixture generators (fixtures/.venv) if missing, builds the
# release binary, then runs the comparison. Needs PyPI the first time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV=fixtures/.venv
if [ ! -x "$VENV/bin/python" ]; then
  PY="${PYTHON:-}"
  if [ -z "$PY" ]; then
    if command -v python3.11 >/dev/null 2>&1; then PY=python3.11; else PY=python3; fi
  fi
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r fixtures/requirements.txt
# The Python package, for the in-process table (built from ./python as a user installs it;
# its one dependency, numpy, is in the pinned environment already).
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" "$VENV/bin/python" -m pip install \
  --disable-pip-version-check --quiet --force-reinstall --no-deps ./python
cargo build --release --quiet --bin pld
# `pld` is timed from a copy, as `cargo install` or a package places it, unless PLD names a
# binary: the file the linker has just written starts about 5% slower than a copy of the
# same bytes (more page faults as its code is first read, 969 against 810 per query on
# σ 1, q 0.01, 10³ steps: `perf stat -r 40`; whole process B/A 0.949 on σ 0.8, q 0.004,
# 10⁵ steps, alternated 41 times). scripts/ab_timing.py copies both builds for this reason.
if [ -z "${PLD:-}" ]; then
  COPY_DIR=$(mktemp -d)
  trap 'rm -rf "$COPY_DIR"' EXIT
  cp target/release/pld "$COPY_DIR/pld"
  export PLD="$COPY_DIR/pld"
fi
PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" benches/side_by_side/vs_dp_accounting.py
# The same cases at --grid-step 1e-4 against the realfft floor of the transforms they use.
echo
cargo bench --quiet --bench fft_floor 2>/dev/null
