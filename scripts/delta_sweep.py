#!/usr/bin/env python3
"""Tight at every δ: ε(δ) of every preset and of the README's specifications at every decade
of δ from 1e-1 to 1e-15, with default settings.

For each (source, δ) it runs `pld epsilon` and `pld compare`, and prints the bracket,
whether the tolerance was met, RDP's upper bound and the seconds both took. It flags a
bracket whose tolerance was not met (expected for the presets labelled "(wide)", whose lower
bounds are loose by nature) and a PLD upper bound above RDP's (never expected: the accountant
keeps the smaller). Exit code 1 if any source not labelled "(wide)" is flagged.

Usage: python3 scripts/delta_sweep.py [PLD]   (default target/release/pld; build it first)
Standard library only; about a minute on two cores.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

DELTAS = [1e-1, 1e-2, 1e-3, 1e-5, 1e-8, 1e-10, 1e-12, 1e-15]

# The README's specification (its "Anything else is described in a JSON specification"
# example) and a heterogeneous mix of Poisson-sampled and plain Gaussians.
SPECS = {
    "README training.json": {
        "neighbouring": "add_remove",
        "events": [
            {"mechanism": "gaussian", "sigma": 1.0, "sensitivity": 1.0,
             "sampling": {"poisson": 0.01}, "count": 1000},
            {"mechanism": "gaussian", "sigma": 20.0, "count": 4},
        ],
    },
    "mixed Gaussians": {
        "events": [
            {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 1000},
            {"mechanism": "gaussian", "sigma": 20.0, "sensitivity": 2.0, "count": 3},
            {"mechanism": "gaussian", "sigma": 1.5, "sampling": {"poisson": 0.05}, "count": 200},
            {"mechanism": "gaussian", "sigma": 10.0},
        ],
    },
}


def presets(pld):
    """(name, wide) of every preset, from `pld presets`."""
    out = subprocess.run([pld, "presets"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if parts and not line.startswith("Use:") and "-" in parts[0]:
            found.append((parts[0], "(wide)" in line))
    return found


def run(pld, args):
    """Parsed JSON of `pld ARGS --format json -q`."""
    out = subprocess.run([pld, *args, "--format", "json", "-q"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    pld = sys.argv[1] if len(sys.argv) > 1 else "target/release/pld"
    sources = [(f"preset {name}", ["--preset", name], wide) for name, wide in presets(pld)]
    with tempfile.TemporaryDirectory() as folder:
        for name, spec in SPECS.items():
            path = os.path.join(folder, name.replace(" ", "_") + ".json")
            with open(path, "w") as file:
                json.dump(spec, file)
            sources.append((name, ["--spec", path], False))
        failures = 0
        for name, args, wide in sources:
            for delta in DELTAS:
                start = time.perf_counter()
                answer = run(pld, ["epsilon", *args, "--delta", repr(delta)])
                rows = {row["method"]: row["epsilon"]
                        for row in run(pld, ["compare", *args, "--delta", repr(delta)])["rows"]}
                seconds = time.perf_counter() - start
                lower, upper = answer["epsilon"]["lower"], answer["epsilon"]["upper"]
                met = answer["settings"]["tolerance_met"]
                rdp = rows.get("rdp")
                flags = []
                if not met:
                    flags.append("NOT MET" + (" (wide preset)" if wide else ""))
                if rdp is not None and upper > rdp * (1 + 1e-12):
                    flags.append("ABOVE RDP")
                if flags and not (wide and flags == ["NOT MET (wide preset)"]):
                    failures += 1
                rdp_text = "-" if rdp is None else f"{rdp:.6g}"
                print(f"{name:32} δ {delta:<6g} [{lower:.6g}, {upper:.6g}]  rdp {rdp_text:>9}  "
                      f"{seconds:5.2f} s  {' '.join(flags)}", flush=True)
        print(f"flagged: {failures}")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
