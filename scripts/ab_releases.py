#!/usr/bin/env python3
"""Compare the answers of two `pld` binaries on random releases of mechanisms with atoms.

Usage: python3 scripts/ab_releases.py CASES SEED BINARY_OLD BINARY_NEW [MECHANISMS]

MECHANISMS is a comma-separated list among laplace, discrete_laplace, discrete_gaussian,
randomized_response, eps_delta, random_allocation and shuffle (default: laplace; the last
two are Gaussian noise with those batch samplings). Each case draws one of them (scale,
σ or ε and count log-uniform; Laplace noise Poisson-sampled, sampled as a fixed batch or not
sampled; the atom mechanisms Poisson-sampled or not; allocated and shuffled steps with t
from 2 to 2000 steps per epoch, 1 to 200 epochs, and for random allocation one participation
or, in a quarter of the cases, up to 4), adds a Gaussian event to about 30% of the
releases, picks δ among 1e-3 … 1e-15, seeded by SEED, and asks both binaries for ε(δ) with
default settings. Both ends are guaranteed bounds either way; this is the check that a change
to how grids are chosen or rounded does not make answers worse. A case is flagged when
either binary fails, when the two brackets are disjoint (one of them would then be wrong),
or when the new binary no longer meets a tolerance the old one met. Every case is printed
with both (lower, upper, tolerance met, seconds, stopped by); the last line counts the
flagged cases, the cases newly meeting the tolerance and those whose bracket is over 1.5
times as wide, and sums the times. Exit code 1 if any case is flagged. Standard library only.

Example (the session's own build against an older one):
    python3 scripts/ab_releases.py 100 2 /tmp/pld_old target/release/pld laplace
"""

import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

MECHANISMS = ["laplace", "discrete_laplace", "discrete_gaussian", "randomized_response",
              "eps_delta", "random_allocation", "shuffle"]


def answer(binary, spec, delta):
    """(lower, upper, tolerance met, seconds, stopped by) of ε(δ), or None if it failed."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(spec, file)
        path = file.name
    try:
        start = time.monotonic()
        run = subprocess.run([binary, "epsilon", "--spec", path, "--delta", str(delta),
                              "--format", "json"], capture_output=True, text=True, timeout=600)
        seconds = time.monotonic() - start
    finally:
        os.unlink(path)
    if run.returncode != 0:
        return None
    result = json.loads(run.stdout)
    number = lambda v: float("inf") if isinstance(v, str) else float(v)
    epsilon, settings = result["epsilon"], result["settings"]
    return (number(epsilon["lower"]), number(epsilon["upper"]), settings["tolerance_met"],
            round(seconds, 4), settings.get("stopped_by"))


def release(draw, mechanisms):
    """A random specification and δ."""
    log_uniform = lambda low, high: math.exp(draw.uniform(math.log(low), math.log(high)))
    kind = draw.choice(mechanisms)
    if kind in ("random_allocation", "shuffle"):
        steps = int(log_uniform(2, 2000))
        batches = {"steps_per_epoch": steps}
        if kind == "random_allocation" and draw.random() < 0.25 and steps > 2:
            batches["participations"] = draw.randint(2, min(4, steps - 1))
        event = {"mechanism": "gaussian", "sigma": log_uniform(0.6, 5), "sensitivity": 1.0,
                 "sampling": {kind: batches}, "count": int(log_uniform(1, 200))}
        delta = draw.choice([1e-3, 1e-5, 1e-6, 1e-7, 1e-9, 1e-10, 1e-12, 1e-15])
        return {"neighbouring": "add_remove", "events": [event]}, delta
    sampling = draw.choice(["poisson", "fixed", "none", "poisson"])
    if kind != "laplace" and sampling == "fixed":
        sampling = "none"
    relation = {"poisson": "add_remove", "fixed": "replace"}.get(sampling) or draw.choice(
        ["add_remove", "replace"])
    if kind == "laplace":
        event = {"mechanism": "laplace", "scale": log_uniform(0.05, 20), "sensitivity": 1.0,
                 "count": int(log_uniform(1, 1e5))}
    elif kind == "discrete_laplace":
        event = {"mechanism": kind, "scale": log_uniform(0.3, 20),
                 "count": int(log_uniform(1, 1e4))}
    elif kind == "discrete_gaussian":
        event = {"mechanism": kind, "sigma": log_uniform(0.5, 20),
                 "count": int(log_uniform(1, 1e4))}
    elif kind == "randomized_response":
        event = {"mechanism": kind, "epsilon": log_uniform(0.01, 3),
                 "count": int(log_uniform(1, 1e4))}
    elif kind == "eps_delta":
        event = {"mechanism": kind, "epsilon": log_uniform(0.01, 2), "delta": 0.0,
                 "count": int(log_uniform(1, 1e3))}
    else:
        sys.exit(f"unknown mechanism {kind!r}; choose among {', '.join(MECHANISMS)}")
    if sampling == "poisson":
        event["sampling"] = {"poisson": log_uniform(1e-4 if kind == "laplace" else 1e-3, 0.5)}
    elif sampling == "fixed":
        size = int(log_uniform(1e3, 1e6))
        batch = max(1, int(size * log_uniform(1e-4, 0.3)))
        event["sampling"] = {"fixed_batch": {"batch_size": batch, "dataset_size": size}}
    events = [event]
    if draw.random() < 0.3:
        gaussian = {"mechanism": "gaussian", "sigma": log_uniform(0.5, 5),
                    "count": int(log_uniform(1, 1e4))}
        if relation == "add_remove":
            gaussian["sampling"] = {"poisson": log_uniform(1e-3, 0.1)}
        events.append(gaussian)
    delta = draw.choice([1e-3, 1e-5, 1e-6, 1e-7, 1e-9, 1e-10, 1e-12, 1e-15])
    return {"neighbouring": relation, "events": events}, delta


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    cases, seed = int(sys.argv[1]), int(sys.argv[2])
    old_binary, new_binary = sys.argv[3], sys.argv[4]
    mechanisms = sys.argv[5].split(",") if len(sys.argv) == 6 else ["laplace"]
    draw = random.Random(seed)
    flagged = gained = wider = 0
    old_seconds = new_seconds = 0.0
    for case in range(cases):
        spec, delta = release(draw, mechanisms)
        old = answer(old_binary, spec, delta)
        new = answer(new_binary, spec, delta)
        flags = []
        if old is None or new is None:
            flags.append("FAILED")
        else:
            old_seconds += old[3]
            new_seconds += new[3]
            if old[0] > new[1] * (1 + 1e-9) + 1e-12 or new[0] > old[1] * (1 + 1e-9) + 1e-12:
                flags.append("DISJOINT")
            if old[2] and not new[2]:
                flags.append("TOLERANCE LOST")
            if new[2] and not old[2]:
                gained += 1
                flags.append("tolerance gained")
            if new[1] - new[0] > 1.5 * (old[1] - old[0]) + 1e-12:
                wider += 1
                flags.append("wider")
        flagged += any(f.isupper() for f in flags)
        print(f"{case} δ {delta:g} {json.dumps(spec)}: old {old} new {new}"
              f"{'  ' + ', '.join(flags) if flags else ''}", flush=True)
    print(f"flagged: {flagged} of {cases}; tolerance gained: {gained}; over 1.5x as wide: "
          f"{wider}; seconds old {old_seconds:.2f} new {new_seconds:.2f}")
    sys.exit(1 if flagged else 0)


if __name__ == "__main__":
    main()
