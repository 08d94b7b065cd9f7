#!/bin/sh
# Nightly-style long soundness sweep (tests/soundness.rs, `soundness_long`).
# Usage: scripts/soundness_sweep.sh [CASES] [SEED]
# Defaults: 5000 cases, seed = the date (YYYYMMDD), so each night checks new cases; a
# failure prints the seed and case index to re-run with SOUNDNESS_SEED=... SOUNDNESS_ONLY=...
set -eu
cd "$(dirname "$0")/.."
CASES="${1:-5000}"
SEED="${2:-$(date +%Y%m%d)}"
echo "soundness sweep: $CASES cases, seed $SEED"
SOUNDNESS_CASES="$CASES" SOUNDNESS_SEED="$SEED" \
    cargo test --release --test soundness soundness_long -- --ignored --nocapture
