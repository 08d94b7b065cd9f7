"""Side by side: ε(δ = 1e-5) of four DP-SGD runs by Google's dp_accounting and by `pld`.

For each case it prints dp_accounting's PLD accountant (connect-the-dots, grid step
h = 1e-4, timed in-process) beside `pld epsilon` at `--grid-step 1e-4` and at its default
settings (each timed as a whole process, so ours includes process start and JSON output),
and the speed ratios. A second table times ours in-process too, as dp_accounting is: the
Python package's `pld_accountant.epsilon` in this interpreter (run.sh installs it from
./python), at the same two settings, each call parsing the specification and building its
accountant anew; one untimed call first starts the package's evaluation threads, as any
earlier query of a long-lived process would have. Medians over REPEATS runs
(dp_accounting: fewer, it is slow); run it on a quiet machine, and compare ratios rather
than absolute times.

With PAUSE=SECONDS, each of our runs waits that long first: a user's single run after a
pause, which on a virtual machine that hands freed memory back to its host is slower than
runs back to back (see scripts/ab_timing.py).

Usage: bash benches/side_by_side/run.sh   (makes the pinned venv, builds `pld`, runs this)
The binary timed is $PLD (run.sh sets it to a copy of target/release/pld, see there).
"""

import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time

from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

DELTA = 1e-5
GRID_STEP = 1e-4
# (σ, q, steps): the cases of the project's engine benchmarks.
CASES = [
    (1.0, 0.01, 1_000),
    (1.0, 0.01, 10_000),
    (0.8, 0.004, 100_000),
    (1.1, 256 / 60000, 14_063),
]
REPEATS = int(os.environ.get("REPEATS", "7"))
PEER_REPEATS = int(os.environ.get("PEER_REPEATS", "3"))
PAUSE = float(os.environ.get("PAUSE", "0"))
PLD = os.environ.get("PLD", "target/release/pld")


def dp_accounting_epsilon(sigma, q, steps):
    """ε(δ) by dp_accounting's PLD accountant at grid step 1e-4 (its default), and seconds."""
    start = time.perf_counter()
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=GRID_STEP)
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps
    )
    accountant.compose(event)
    epsilon = accountant.get_epsilon(DELTA)
    return epsilon, time.perf_counter() - start


def ours(sigma, q, steps, extra):
    """(ε upper, ε lower) by `pld epsilon`, and the process's wall time in seconds."""
    command = [
        PLD, "epsilon", "--quiet", "--sigma", repr(sigma), "--sampling-rate", repr(q),
        "--steps", str(steps), "--delta", repr(DELTA), "--format", "json", *extra,
    ]
    time.sleep(PAUSE)
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    seconds = time.perf_counter() - start
    answer = json.loads(out)["epsilon"]
    return (float(answer["upper"]), float(answer["lower"])), seconds


def ours_in_process(sigma, q, steps, grid_step):
    """(ε upper, ε lower) by the Python package's `epsilon`, and its wall time in seconds."""
    import pld_accountant

    spec = {"events": [{"mechanism": "gaussian", "sigma": sigma,
                        "sampling": {"poisson": q}, "count": steps}]}
    start = time.perf_counter()
    answer = pld_accountant.epsilon(spec, DELTA, grid_step=grid_step)
    seconds = time.perf_counter() - start
    return (answer.upper, answer.lower), seconds


def median_run(function, repeats):
    results = [function() for _ in range(repeats)]
    return results[0][0], statistics.median(s for _, s in results)


def main():
    print(f"dp_accounting {importlib.metadata.version('dp-accounting')}, "
          f"python {sys.version.split()[0]}, δ = {DELTA:g}, medians of {REPEATS} runs "
          f"({PEER_REPEATS} for dp_accounting)"
          + (f"; each of ours after a {PAUSE:g} s pause" if PAUSE > 0 else ""))
    rows = []
    header = (f"{'case':<28} {'dp_acc ε (h=1e-4)':>18} {'time':>9} | {'ours ε up (h=1e-4)':>19} "
              f"{'time':>9} {'speed-up':>8} | {'ours ε up (default)':>19} {'time':>9} {'speed-up':>8} "
              f"{'ε up / dp_acc':>13}")
    print(header)
    for sigma, q, steps in CASES:
        label = f"σ {sigma} q {q:.6g} T {steps}"
        peer_eps, peer_s = median_run(lambda: dp_accounting_epsilon(sigma, q, steps), PEER_REPEATS)
        (fixed_up, _), fixed_s = median_run(
            lambda: ours(sigma, q, steps, ["--grid-step", repr(GRID_STEP)]), REPEATS)
        (default_up, _), default_s = median_run(lambda: ours(sigma, q, steps, []), REPEATS)
        print(f"{label:<28} {peer_eps:>18.7f} {peer_s * 1e3:>7.1f}ms | {fixed_up:>19.7f} "
              f"{fixed_s * 1e3:>7.1f}ms {peer_s / fixed_s:>7.1f}x | {default_up:>19.7f} "
              f"{default_s * 1e3:>7.1f}ms {peer_s / default_s:>7.1f}x {default_up / peer_eps:>13.7f}")
        rows.append((label, sigma, q, steps, peer_eps, peer_s))
    in_process(rows)


def in_process(rows):
    """The same cases with ours timed in-process, by the Python package (when installed)."""
    try:
        import pld_accountant
    except ImportError:
        print("\n(pld_accountant is not installed in this interpreter: no in-process table; "
              "run.sh installs it)")
        return
    # The package's evaluation threads start with its first query.
    ours_in_process(1.0, 0.01, 10, None)
    print(f"\nIn-process, both: pld_accountant {pld_accountant.__version__} "
          f"(Python package) against the dp_accounting times above")
    print(f"{'case':<28} {'ours ε up (h=1e-4)':>19} {'time':>9} {'speed-up':>8} | "
          f"{'ours ε up (default)':>19} {'time':>9} {'speed-up':>8} {'ε up / dp_acc':>13}")
    for label, sigma, q, steps, peer_eps, peer_s in rows:
        (fixed_up, _), fixed_s = median_run(
            lambda: ours_in_process(sigma, q, steps, GRID_STEP), REPEATS)
        (default_up, _), default_s = median_run(
            lambda: ours_in_process(sigma, q, steps, None), REPEATS)
        print(f"{label:<28} {fixed_up:>19.7f} {fixed_s * 1e3:>7.1f}ms {peer_s / fixed_s:>7.1f}x | "
              f"{default_up:>19.7f} {default_s * 1e3:>7.1f}ms {peer_s / default_s:>7.1f}x "
              f"{default_up / peer_eps:>13.7f}")


if __name__ == "__main__":
    main()
