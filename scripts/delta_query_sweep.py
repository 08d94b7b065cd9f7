#!/usr/bin/env python3
"""δ(ε) queries on Poisson-sampled discrete Gaussians: how many meet their tolerance?

Usage: python3 scripts/delta_query_sweep.py [PLD]   (default target/release/pld; build it first)

For σ in {0.8, 1, 2, 5}, q in {1e-3, 0.01, 0.1} and 1000 or 5000 runs (24 cases), it asks
`pld epsilon` for the upper end ε at δ = 1e-5, then `pld delta` at that ε (printed to six
digits) with default settings, and prints the δ bracket, its width in target widths, the
grid step, whether the tolerance (1e-4 of δ) was met or why not, and the seconds the δ query
took. The last line
counts the misses. Such compositions' lower ends converge about like the grid step, not its
square, so these queries need steps of a few 1e-6 nats and meet the size limits of the
grids (see the README's "How it works"). A measurement, not a test: exit code 0 whatever
the count. Standard library only; about 15 s on two cores.
"""

import json
import os
import sys
import tempfile
import time

from delta_sweep import run  # (this script's folder is on the path when it is run)


def main():
    pld = sys.argv[1] if len(sys.argv) > 1 else "target/release/pld"
    missed = total = 0
    for sigma in [0.8, 1, 2, 5]:
        for rate in [0.001, 0.01, 0.1]:
            for runs in [1000, 5000]:
                spec = {"events": [{"mechanism": "discrete_gaussian", "sigma": sigma,
                                    "sampling": {"poisson": rate}, "count": runs}]}
                with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
                    json.dump(spec, file)
                    path = file.name
                epsilon = run(pld, ["epsilon", "--spec", path, "--delta", "1e-5"])
                epsilon = f"{epsilon['epsilon']['upper']:.6g}"
                start = time.monotonic()
                answer = run(pld, ["delta", "--spec", path, "--epsilon", epsilon])
                seconds = time.monotonic() - start
                os.unlink(path)
                settings, delta = answer["settings"], answer["delta"]
                met = settings["tolerance_met"]
                total += 1
                missed += not met
                verdict = "met" if met else f"NOT met: {settings.get('stopped_by')}"
                # The bracket's width in target widths (at most 1 when met).
                widths = settings["bracket_width"] / settings["target_width"]
                print(f"σ {sigma:<4} q {rate:<6} {runs:>5} runs  δ({epsilon:>8}) "
                      f"[{delta['lower']:.6e}, {delta['upper']:.6e}]  "
                      f"{widths:5.2f} target widths  step {settings['grid_step']:.3g}  "
                      f"{verdict}  {seconds:.2f} s",
                      flush=True)
    print(f"missed: {missed} of {total}")


if __name__ == "__main__":
    main()
