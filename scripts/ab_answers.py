#!/usr/bin/env python3
"""Compare the answers of two `pld` binaries on random DP-SGD queries.

Usage: python3 scripts/ab_answers.py CASES SEED BINARY_OLD BINARY_NEW

Draws CASES queries (σ from 0.4 to 5, Poisson rate from 1e-4 to 0.5, 10 to 10⁶ steps,
δ in {1e-3, 1e-5, 1e-8, 1e-10}; log-uniform, seeded by SEED), asks both binaries for ε(δ)
with default settings, and flags each query where the new binary's upper end is looser than
the old one's (by more than 1e-12 relative), where it no longer meets the tolerance the old
one met, or where either fails. Every query's brackets are printed; the last line counts
the flagged ones, and the exit code is 1 if there are any.

Both ends are guaranteed bounds either way: this is the check that a change to how grids
are chosen (which never affects soundness) does not make answers worse. Standard library
only.

Example (the session's own build against an older one):
    python3 scripts/ab_answers.py 40 1 /tmp/pld_old target/release/pld
"""

import json
import random
import subprocess
import sys


def answer(binary, sigma, rate, steps, delta):
    """(lower, upper, tolerance met, stopped by) of one query, or None if it failed."""
    command = [
        binary, "epsilon", "--sigma", str(sigma), "--sampling-rate", str(rate),
        "--steps", str(steps), "--delta", str(delta), "--format", "json",
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        return None
    result = json.loads(run.stdout)
    settings = result["settings"]
    epsilon = result["epsilon"]
    return (epsilon["lower"], epsilon["upper"], settings["tolerance_met"],
            settings.get("stopped_by"))


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    cases, seed = int(sys.argv[1]), int(sys.argv[2])
    old_binary, new_binary = sys.argv[3], sys.argv[4]
    draw = random.Random(seed)
    flagged = 0
    for _ in range(cases):
        sigma = round(10 ** draw.uniform(-0.4, 0.7), 3)
        rate = round(10 ** draw.uniform(-4, -0.3), 5)
        steps = int(10 ** draw.uniform(1, 6))
        delta = draw.choice([1e-3, 1e-5, 1e-8, 1e-10])
        old = answer(old_binary, sigma, rate, steps, delta)
        new = answer(new_binary, sigma, rate, steps, delta)
        flags = []
        if old is None or new is None:
            flags.append("FAILED")
        else:
            if new[1] > old[1] * (1 + 1e-12):
                flags.append("UPPER LOOSER")
            if old[2] and not new[2]:
                flags.append("TOLERANCE LOST")
        flagged += bool(flags)
        print(f"σ {sigma} q {rate} steps {steps} δ {delta:g}: old {old} new {new}"
              f"{'  ' + ', '.join(flags) if flags else ''}")
    print(f"flagged: {flagged} of {cases}")
    sys.exit(1 if flagged else 0)


if __name__ == "__main__":
    main()
