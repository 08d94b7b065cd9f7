#!/usr/bin/env python3
"""Compare the answers of two `pld` binaries on random DP-SGD queries.

Usage: python3 scripts/ab_answers.py CASES SEED BINARY_OLD BINARY_NEW [--delta-queries]
                                       [--min-rate R]

Draws CASES queries (σ from 0.4 to 5, Poisson rate from 1e-4 to 0.5, 10 to 10⁶ steps,
δ in {1e-3, 1e-5, 1e-8, 1e-10}; log-uniform, seeded by SEED), asks both binaries for ε(δ)
with default settings, and flags each query where the new binary's upper end is looser than
the old one's (by more than 1e-12 relative), where it no longer meets the tolerance the old
one met, or where either fails. Every query's brackets are printed; the last line counts
the flagged ones, and the exit code is 1 if there are any.

With --delta-queries, each case asks δ(ε) instead, at the ε the old binary's ε(δ) query
gave as its upper end (so δ is near the drawn one). --min-rate R draws the sampling rate
from R (log-uniform) instead of 1e-4, with up to 10⁸ steps when R < 1e-4.

Both ends are guaranteed bounds either way: this is the check that a change to how grids
are chosen (which never affects soundness) does not make answers worse. Standard library
only.

Example (the session's own build against an older one):
    python3 scripts/ab_answers.py 40 1 /tmp/pld_old target/release/pld
"""

import json
import math
import random
import subprocess
import sys
import time


def query(binary, sigma, rate, steps, asked, value):
    """(lower, upper, tolerance met, stopped by, seconds) of one query, or None if it failed:
    `asked` "epsilon" gives ε(δ = value), "delta" gives δ(ε = value)."""
    given = "delta" if asked == "epsilon" else "epsilon"
    command = [
        binary, asked, "--sigma", str(sigma), "--sampling-rate", str(rate),
        "--steps", str(steps), f"--{given}", repr(value), "--format", "json",
    ]
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    seconds = round(time.perf_counter() - start, 2)
    if run.returncode != 0:
        return None
    result = json.loads(run.stdout)
    settings = result["settings"]
    bracket = result[asked]
    return (bracket["lower"], bracket["upper"], settings["tolerance_met"],
            settings.get("stopped_by"), seconds)


def main():
    args = sys.argv[1:]
    delta_queries = "--delta-queries" in args
    args = [a for a in args if a != "--delta-queries"]
    min_rate = 1e-4
    if "--min-rate" in args:
        at = args.index("--min-rate")
        min_rate = float(args[at + 1])
        del args[at:at + 2]
    if len(args) != 4:
        sys.exit(__doc__)
    cases, seed = int(args[0]), int(args[1])
    old_binary, new_binary = args[2], args[3]
    draw = random.Random(seed)
    flagged = 0
    for _ in range(cases):
        sigma = round(10 ** draw.uniform(-0.4, 0.7), 3)
        rate = 10 ** draw.uniform(math.log10(min_rate), -0.3)
        # (Rounded as before --min-rate existed, so that earlier seeds draw the same cases.)
        rate = round(rate, 5) if min_rate >= 1e-4 else float(f"{rate:.5g}")
        most_steps = 8 if min_rate < 1e-4 else 6
        steps = int(10 ** draw.uniform(1, most_steps))
        delta = draw.choice([1e-3, 1e-5, 1e-8, 1e-10])
        if delta_queries:
            reference = query(old_binary, sigma, rate, steps, "epsilon", delta)
            if reference is None or not reference[1] > 0:
                print(f"σ {sigma} q {rate} steps {steps} δ {delta:g}: no ε to ask δ at")
                continue
            epsilon = reference[1]
            old = query(old_binary, sigma, rate, steps, "delta", epsilon)
            new = query(new_binary, sigma, rate, steps, "delta", epsilon)
            delta = f"({delta:g}) at ε {epsilon:.6g}"
        else:
            old = query(old_binary, sigma, rate, steps, "epsilon", delta)
            new = query(new_binary, sigma, rate, steps, "epsilon", delta)
        flags = []
        if old is None or new is None:
            flags.append("FAILED")
        else:
            if new[1] > old[1] * (1 + 1e-12):
                flags.append("UPPER LOOSER")
            if old[2] and not new[2]:
                flags.append("TOLERANCE LOST")
        flagged += bool(flags)
        print(f"σ {sigma} q {rate} steps {steps} δ {delta}: old {old} new {new}"
              f"{'  ' + ', '.join(flags) if flags else ''}")
    print(f"flagged: {flagged} of {cases}")
    sys.exit(1 if flagged else 0)


if __name__ == "__main__":
    main()
