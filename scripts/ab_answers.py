#!/usr/bin/env python3
"""Compare the answers of two `pld` binaries on random DP-SGD queries.

Usage: python3 scripts/ab_answers.py CASES SEED BINARY_OLD BINARY_NEW [--delta-queries]
                                       [--min-rate R] [--mixes]

Draws CASES queries (σ from 0.4 to 5, Poisson rate from 1e-4 to 0.5, 10 to 10⁶ steps,
δ in {1e-3, 1e-5, 1e-8, 1e-10}; log-uniform, seeded by SEED), asks both binaries for ε(δ)
with default settings, and flags each query where the new binary's upper end is looser than
the old one's (by more than 1e-12 relative), where it no longer meets the tolerance the old
one met, or where either fails. Every query's brackets are printed; the last line counts
the flagged ones, and the exit code is 1 if there are any.

With --mixes, each case is instead the random mix `scripts/mix_sweep.py` draws for the same
CASES and SEED (case i is its case i), asked ε(δ) at its δ: the check for a change that
reaches every mechanism and sampling scheme. The last line also gives both binaries' total
seconds.

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
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mix_sweep import draw_case  # noqa: E402


def run(command, asked):
    """(lower, upper, tolerance met, stopped by, seconds) of the `asked` ("epsilon" or
    "delta") bracket `command` prints, or None if it failed."""
    start = time.perf_counter()
    process = subprocess.run(command, capture_output=True, text=True, timeout=900)
    seconds = round(time.perf_counter() - start, 2)
    if process.returncode != 0:
        return None
    result = json.loads(process.stdout)
    settings = result["settings"]
    bracket = result[asked]
    # (float(): an infinite end is written as the string "inf".)
    return (float(bracket["lower"]), float(bracket["upper"]), settings["tolerance_met"],
            settings.get("stopped_by"), seconds)


def query(binary, sigma, rate, steps, asked, value):
    """As `run`, for DP-SGD: `asked` "epsilon" gives ε(δ = value), "delta" gives
    δ(ε = value)."""
    given = "delta" if asked == "epsilon" else "epsilon"
    return run([
        binary, asked, "--sigma", str(sigma), "--sampling-rate", str(rate),
        "--steps", str(steps), f"--{given}", repr(value), "--format", "json",
    ], asked)


def query_spec(binary, spec_path, delta):
    """As `run`, for ε(δ) of the composition in the JSON file `spec_path`."""
    return run([binary, "epsilon", "--spec", spec_path, "--delta", repr(delta), "--format",
                "json"], "epsilon")


def compare(old, new):
    """The flags of one case's pair of answers."""
    if old is None or new is None:
        return ["FAILED"]
    flags = []
    if new[1] > old[1] * (1 + 1e-12):
        flags.append("UPPER LOOSER")
    if old[2] and not new[2]:
        flags.append("TOLERANCE LOST")
    return flags


def mixes(cases, seed, old_binary, new_binary):
    """The --mixes comparison; returns the number of flagged cases."""
    draw = random.Random(seed)
    flagged, seconds = 0, [0.0, 0.0]
    for i in range(cases):
        spec, delta = draw_case(draw)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
            json.dump(spec, file)
            path = file.name
        try:
            old = query_spec(old_binary, path, delta)
            new = query_spec(new_binary, path, delta)
        finally:
            os.unlink(path)
        for k, answer in enumerate((old, new)):
            seconds[k] += answer[4] if answer else 0.0
        flags = compare(old, new)
        flagged += bool(flags)
        changed = old is not None and new is not None and old[:4] != new[:4]
        print(f"case {i}: δ {delta:g}: old {old} new {new}"
              f"{'  changed' if changed else ''}{'  ' + ', '.join(flags) if flags else ''}",
              flush=True)
    print(f"seconds in all: old {seconds[0]:.1f}, new {seconds[1]:.1f}")
    return flagged


def main():
    args = sys.argv[1:]
    delta_queries = "--delta-queries" in args
    use_mixes = "--mixes" in args
    args = [a for a in args if a not in ("--delta-queries", "--mixes")]
    min_rate = 1e-4
    if "--min-rate" in args:
        at = args.index("--min-rate")
        min_rate = float(args[at + 1])
        del args[at:at + 2]
    if len(args) != 4:
        sys.exit(__doc__)
    cases, seed = int(args[0]), int(args[1])
    old_binary, new_binary = args[2], args[3]
    if use_mixes:
        flagged = mixes(cases, seed, old_binary, new_binary)
        print(f"flagged: {flagged} of {cases}")
        sys.exit(1 if flagged else 0)
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
        flags = compare(old, new)
        flagged += bool(flags)
        print(f"σ {sigma} q {rate} steps {steps} δ {delta}: old {old} new {new}"
              f"{'  ' + ', '.join(flags) if flags else ''}")
    print(f"flagged: {flagged} of {cases}")
    sys.exit(1 if flagged else 0)


if __name__ == "__main__":
    main()
