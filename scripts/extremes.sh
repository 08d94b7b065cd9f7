#!/usr/bin/env bash
# DP-SGD at the corners of the documented range: σ in [0.3, 1e4], q in [1e-9, 1], T up to
# 1e9 steps, δ = 1e-5, default tolerance. Prints, per case, the wall time, the process's
# peak resident memory (Linux; from `pld -v`), the bracket and whether the tolerance was met,
# and flags every case slower than 2 s, or that exits with anything but 0.
#
# Usage: scripts/extremes.sh            (build first: cargo build --release)
# Environment: PLD (binary, default target/release/pld), TIMEOUT (seconds, default 60).
# Exit status: 0 when every case answered within 2 s, 1 otherwise.
set -u
PLD=${PLD:-target/release/pld}
TIMEOUT=${TIMEOUT:-60}
slow=0
printf '%-8s %-6s %-11s %8s %9s  %-44s %s\n' sigma q steps seconds peak_MiB \
  "epsilon [lower, upper]" met
for sigma in 0.3 1 30 1e4; do
  for q in 1e-9 1e-3 0.5 1; do
    for steps in 1 1e6 1e9; do
      start=$(date +%s.%N)
      out=$(timeout "$TIMEOUT" "$PLD" epsilon -v --sigma "$sigma" --sampling-rate "$q" \
        --steps "$steps" --delta 1e-5 --format csv 2>&1)
      status=$?
      seconds=$(echo "$(date +%s.%N) - $start" | bc)
      peak=$(echo "$out" | sed -n 's/.*peak resident memory so far \([0-9]*\) MiB.*/\1/p')
      # The CSV row after its header: delta,epsilon_upper,epsilon_lower,…,tolerance_met,…
      row=$(echo "$out" | grep -A1 '^delta,' | tail -1)
      upper=$(echo "$row" | cut -d, -f2)
      lower=$(echo "$row" | cut -d, -f3)
      met=$(echo "$row" | cut -d, -f8)
      flag=""
      if [ "$status" -ne 0 ]; then flag="  <-- exit $status"; slow=1; fi
      if [ "$(echo "$seconds > 2" | bc)" -eq 1 ]; then flag="$flag  <-- over 2 s"; slow=1; fi
      printf '%-8s %-6s %-11s %8.3f %9s  [%-20s %-21s %s%s\n' "$sigma" "$q" "$steps" \
        "$seconds" "${peak:-?}" "$lower," "$upper]" "$met" "$flag"
    done
  done
done
exit $slow
