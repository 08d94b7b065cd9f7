#!/usr/bin/env bash
# The Python package's checks and tests, as CI runs them (the last step of scripts/test.sh):
# `cargo fmt --check` and `cargo clippy -D warnings` on its Rust crate (python/, a workspace
# of its own, so the root's checks never need Python), a venv (python/.venv) with the pinned
# test requirements, the package built and installed by `pip install ./python` exactly as a
# user does, and pytest on python/tests against the installed package.
#
# Environment: PYTHON (default python3, 3.9 or later) makes the venv; CARGO_TARGET_DIR is
# shared with the root build so that dependencies compile once.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
python="${PYTHON:-python3}"
venv="$root/python/.venv"

echo "== python: cargo fmt and clippy (python/)"
(cd python && cargo fmt -- --check && cargo clippy --all-targets --quiet -- -D warnings)

echo "== python: venv with the pinned requirements (python/requirements-test.txt)"
# Rebuilt whenever the requirements change; otherwise reused between runs.
if [ ! -x "$venv/bin/python" ] || ! cmp -s python/requirements-test.txt "$venv/requirements-test.txt"; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r python/requirements-test.txt
    cp python/requirements-test.txt "$venv/requirements-test.txt"
fi

echo "== python: pip install ./python"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps ./python
# The package's own dependencies (numpy) are satisfied by the pinned environment.
"$venv/bin/python" -m pip check --disable-pip-version-check

echo "== python: pytest python/tests"
# The `pld` binary the equality tests compare with (built already by `cargo test --release`).
cargo build --release --quiet --bin pld
PLD_BINARY="$CARGO_TARGET_DIR/release/pld" "$venv/bin/python" -m pytest python/tests -p no:cacheprovider -q -rs
