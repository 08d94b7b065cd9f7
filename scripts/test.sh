#!/usr/bin/env bash
# Every test, as CI runs it (after `cargo fmt --check` and `cargo clippy`): the Rust test
# suite, the lean-library check, the documentation build, every example and the Python
# package (scripts/test_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --release

# The library without the CLI (default-features = false) must not pull in clap.
if cargo tree --no-default-features -e normal --prefix none | grep -E '^clap(_[a-z]+)? '; then
    echo "error: the library without default features depends on clap (above)" >&2
    exit 1
fi
cargo check --no-default-features --lib

# Documentation: no broken links, no warnings.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps

# Examples: each runs to completion.
for example in examples/*.rs; do
    name="$(basename "$example" .rs)"
    echo "== example $name"
    cargo run --release --quiet --example "$name"
done

# The Python package: its crate's format and lints, a pinned venv, `pip install ./python`,
# and its pytest suite.
bash scripts/test_python.sh
