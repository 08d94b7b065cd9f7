"""Side by side: ε(δ = 1e-5) of four DP-SGD runs by `pld` and by two more peers.

- Opake 0.16.1 (`opake-accounting`, a Rust PLD accountant shipped as a Python wheel): the
  DP-SGD factories `poisson(gaussian(σ), sample_rate=q) * T`, then `epsilon_at(δ)`, at its
  default discretization (grid 1e-4).
- Microsoft's prv_accountant 0.2.0: `PRVAccountant` with `eps_error` 0.01 and `delta_error`
  1e-8 (its documentation suggests about 1e-3·δ), which returns a bracket
  [ε_low, ε_up] of width about 2·eps_error.
- `pld epsilon` at its default settings, as a whole process (start-up and JSON output
  included).

Then random allocation (`--sampling balls-in-bins`: every epoch each record in one of t
batches chosen at random) against Opake's `k_out_of_t(gaussian(σ), k=1, t=t,
allocation="total") * epochs`, for three (σ, t, epochs).

Each peer call is timed in-process, on its first call in a fresh interpreter (Opake keeps
the distributions it computed: a second call of the same case would be a cache hit), and
the import is not timed. Medians over REPEATS runs (PEER_REPEATS for the peers). Compare
ratios rather than absolute times on a shared machine.

Usage: bash benches/side_by_side/peers.sh   (makes the pinned venv, builds `pld`, runs this)
"""

import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time

DELTA = 1e-5
# (σ, q, steps): the cases of the project's engine benchmarks.
CASES = [
    (1.0, 0.01, 1_000),
    (1.0, 0.01, 10_000),
    (0.8, 0.004, 100_000),
    (1.1, 256 / 60000, 14_063),
]
# (σ, batches per epoch t, epochs) for random allocation.
ALLOCATION_CASES = [
    (1.0, 100, 10),
    (0.8, 235, 60),
    (1.5, 1000, 5),
]
PRV_EPS_ERROR = 0.01
PRV_DELTA_ERROR = 1e-8
REPEATS = int(os.environ.get("REPEATS", "7"))
PEER_REPEATS = int(os.environ.get("PEER_REPEATS", "3"))
PLD = os.environ.get("PLD", "target/release/pld")


def opake_once(sigma, q, steps):
    """ε by Opake, and the seconds its first call took (imports excluded)."""
    import opake.api.accounting.dpsgd as opake_dpsgd

    start = time.perf_counter()
    training = opake_dpsgd.poisson(opake_dpsgd.gaussian(sigma), sample_rate=q) * steps
    epsilon = training.epsilon_at(DELTA)
    return {"epsilon": epsilon, "seconds": time.perf_counter() - start}


def opake_allocation_once(sigma, t, epochs):
    """ε of random allocation (k = 1 of t, `epochs` times) by Opake, and seconds."""
    import opake.api.accounting.dpsgd as opake_dpsgd

    start = time.perf_counter()
    epoch = opake_dpsgd.k_out_of_t(opake_dpsgd.gaussian(sigma), k=1, t=int(t),
                                   allocation="total")
    epsilon = (epoch * epochs).epsilon_at(DELTA)
    return {"epsilon": epsilon, "seconds": time.perf_counter() - start}


def prv_once(sigma, q, steps):
    """[ε_low, ε_up] by prv_accountant, and the seconds it took (imports excluded)."""
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

    start = time.perf_counter()
    mechanism = PoissonSubsampledGaussianMechanism(noise_multiplier=sigma,
                                                   sampling_probability=q)
    accountant = PRVAccountant(prvs=[mechanism], max_self_compositions=[steps],
                               eps_error=PRV_EPS_ERROR, delta_error=PRV_DELTA_ERROR)
    low, _, up = accountant.compute_epsilon(delta=DELTA, num_self_compositions=[steps])
    return {"epsilon": [low, up], "seconds": time.perf_counter() - start}


def in_fresh_interpreter(peer, sigma, q, steps):
    """Run one peer call in a new interpreter (no warm caches); its answer and seconds."""
    command = [sys.executable, __file__, "--child", peer, repr(sigma), repr(q), str(steps)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    answer = json.loads(out.strip().splitlines()[-1])
    return answer["epsilon"], answer["seconds"]


def ours(sigma, q, count, unit="--steps", extra=()):
    """(ε lower, ε upper) by `pld epsilon` at its defaults for `count` steps (or epochs, with
    `unit` "--epochs"), and the process's wall time."""
    command = [
        PLD, "epsilon", "--quiet", "--sigma", repr(sigma), "--sampling-rate", repr(q),
        unit, str(count), "--delta", repr(DELTA), "--format", "json", *extra,
    ]
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    seconds = time.perf_counter() - start
    answer = json.loads(out)["epsilon"]
    return (float(answer["lower"]), float(answer["upper"])), seconds


def median_run(function, repeats):
    results = [function() for _ in range(repeats)]
    return results[0][0], statistics.median(s for _, s in results)


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        peer, sigma, q, steps = sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
        once = {"opake": opake_once, "prv": prv_once,
                "opake_allocation": opake_allocation_once}[peer]
        print(json.dumps(once(sigma, q, steps)))
        return
    print(f"opake-accounting {importlib.metadata.version('opake-accounting')}, "
          f"prv-accountant {importlib.metadata.version('prv-accountant')} "
          f"(eps_error {PRV_EPS_ERROR:g}, delta_error {PRV_DELTA_ERROR:g}), "
          f"python {sys.version.split()[0]}, δ = {DELTA:g}, medians of {REPEATS} runs "
          f"({PEER_REPEATS} for the peers)")
    print(f"{'case':<28} {'ours [ε lower, ε upper]':>26} {'time':>8} | {'Opake ε':>10} "
          f"{'time':>8} {'ratio':>6} {'ε/ours':>9} | {'prv [ε low, ε up]':>22} {'time':>9} "
          f"{'ratio':>7}")
    for sigma, q, steps in CASES:
        label = f"σ {sigma} q {q:.6g} T {steps}"
        (low, up), our_s = median_run(lambda: ours(sigma, q, steps), REPEATS)
        opake_eps, opake_s = median_run(
            lambda: in_fresh_interpreter("opake", sigma, q, steps), PEER_REPEATS)
        (prv_low, prv_up), prv_s = median_run(
            lambda: in_fresh_interpreter("prv", sigma, q, steps), PEER_REPEATS)
        print(f"{label:<28} [{low:>11.7f}, {up:>11.7f}] {our_s * 1e3:>6.1f}ms | "
              f"{opake_eps:>10.7f} {opake_s * 1e3:>6.1f}ms {opake_s / our_s:>5.1f}x "
              f"{opake_eps / up:>9.7f} | [{prv_low:>9.5f}, {prv_up:>9.5f}] "
              f"{prv_s * 1e3:>7.0f}ms {prv_s / our_s:>6.0f}x")
    print()
    print(f"{'random allocation (k = 1)':<28} {'ours [ε lower, ε upper]':>26} {'time':>8} | "
          f"{'Opake ε':>10} {'time':>9} {'ratio':>6} {'ε/ours':>9}")
    for sigma, t, epochs in ALLOCATION_CASES:
        label = f"σ {sigma} t {t} epochs {epochs}"
        (low, up), our_s = median_run(
            lambda: ours(sigma, 1.0 / t, epochs, "--epochs", ["--sampling", "balls-in-bins"]),
            REPEATS)
        opake_eps, opake_s = median_run(
            lambda: in_fresh_interpreter("opake_allocation", sigma, t, epochs), 1)
        print(f"{label:<28} [{low:>11.7f}, {up:>11.7f}] {our_s * 1e3:>6.1f}ms | "
              f"{opake_eps:>10.7f} {opake_s * 1e3:>7.0f}ms {opake_s / our_s:>5.0f}x "
              f"{opake_eps / up:>9.7f}")


if __name__ == "__main__":
    main()
