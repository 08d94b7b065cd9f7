#!/usr/bin/env python3
"""Random heterogeneous mixes through `pld compare`: is the PLD upper bound ever above another
guaranteed upper bound the same command prints?

Usage: python3 scripts/mix_rows.py CASES SEED [PLD]   (PLD default target/release/pld)

Draws the cases of scripts/mix_sweep.py (same generator, same SEED gives the same mixes),
asks `pld compare` at default settings, and flags a case when the `pld_upper` row exceeds an
upper-bound row of an analytic accountant (RDP, zCDP, the composition theorems) by more than
1e-9 relative (rounding), or the heterogeneous optimal composition's row by more than 1e-3
relative (the default tolerance: the accountant does not take that 0.1–1 s computation, and
its upper end, settled on the grid, may sit within the tolerance above it). Also flags a
`pld_lower` row above any upper-bound row (an unsound bracket) and a failed run. The last line
counts them; exit code 1 if any case is flagged. Standard library only; about 2 minutes for
300 cases on two cores.

Seeds 8202 (300 cases), 8203 (200) and 8204 (300): 0 flagged; 2, 4 and 1 cases above the
optimal composition, by at most 6e-5 relative.
"""

import json
import os
import random
import subprocess
import sys
import tempfile

from mix_sweep import draw_case  # (this script's folder is on the path when it is run)

ROUNDING = 1e-9
OPTIMAL_SLACK = 1e-3


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cases, seed = int(sys.argv[1]), int(sys.argv[2])
    binary = sys.argv[3] if len(sys.argv) > 3 else "target/release/pld"
    r = random.Random(seed)
    flagged = above_optimal = 0
    for i in range(cases):
        spec, delta = draw_case(r)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
            json.dump(spec, file)
            path = file.name
        run = subprocess.run([binary, "compare", "--quiet", "--spec", path, "--delta",
                              str(delta), "--format", "json"],
                             capture_output=True, text=True, timeout=900)
        os.unlink(path)
        label = f"case {i}: δ {delta:g} {json.dumps(spec)}"
        if run.returncode != 0:
            flagged += 1
            print(f"FLAGGED {label}: exit {run.returncode}: {run.stderr.strip()[:300]}", flush=True)
            continue
        rows = json.loads(run.stdout)["rows"]
        number = lambda row: row["epsilon"] if isinstance(row["epsilon"], float) else None
        by_method = {row["method"]: number(row) for row in rows}
        upper, lower = by_method.get("pld_upper"), by_method.get("pld_lower")
        problems = []
        for row in rows:
            value = number(row)
            if row["kind"] != "upper_bound" or row["method"] == "pld_upper" or value is None:
                continue
            if lower is not None and lower > value * (1 + ROUNDING):
                problems.append(f"pld_lower {lower} above {row['method']} {value}")
            if upper is None:
                continue
            slack = OPTIMAL_SLACK if row["method"] == "optimal_composition" else ROUNDING
            if upper > value * (1 + slack):
                problems.append(f"pld_upper {upper} above {row['method']} {value}")
            elif upper > value * (1 + ROUNDING):
                above_optimal += 1
        if problems:
            flagged += 1
            print(f"FLAGGED {label}: {'; '.join(problems)}", flush=True)
    print(f"{cases} cases (seed {seed}): {flagged} flagged, {above_optimal} within the "
          f"tolerance above the optimal composition")
    sys.exit(1 if flagged else 0)


if __name__ == "__main__":
    main()
