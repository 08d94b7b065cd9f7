"""Monte Carlo estimate of delta(epsilon) for one epoch of k-out-of-t random allocation of
the Gaussian mechanism (REMOVE direction), to see where the truth lies inside the crate's
certified bracket for 1 < k < t. An estimate, not a bound: it is not used by any test.

Under P the record is in steps 0..k-1 (the ratio is symmetric in the steps, so which k does
not matter); the likelihood ratio is R = e_k(B)/C(t, k), B_i = exp((y_i - 1/2)/sigma^2), and
delta(eps) = E_P[(1 - e^eps/R)_+]. e_k comes from the power sums by Newton's identities.

Run with the fixtures' venv (numpy):
    bash fixtures/generate.sh   # once, creates fixtures/.venv
    fixtures/.venv/bin/python scripts/allocation_monte_carlo.py 1.0 100 2 20000000 1.19 1.205 1.22
(sigma, t, k, samples, epsilons...). Prints eps, the estimate and its standard error.
"""
import math
import sys

import numpy as np


def elementary_symmetric(b, k):
    """e_k of each row of b, by Newton's identities from the power sums."""
    powers = [None] + [np.sum(b**j, axis=1) for j in range(1, k + 1)]
    e = [np.ones(b.shape[0])]
    for m in range(1, k + 1):
        total = sum((-1) ** (i - 1) * e[m - i] * powers[i] for i in range(1, m + 1))
        e.append(total / m)
    return e[k]


def main():
    sigma, t, k, samples = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    epsilons = [float(x) for x in sys.argv[5:]]
    rng = np.random.default_rng(20261128)
    chunk = max(1, min(samples, 10_000_000 // t))
    sums = {e: [0.0, 0.0] for e in epsilons}
    done = 0
    while done < samples:
        n = min(chunk, samples - done)
        y = rng.normal(0.0, sigma, (n, t))
        y[:, :k] += 1.0
        b = np.exp((y - 0.5) / sigma**2)
        ratio = elementary_symmetric(b, k) / math.comb(t, k)
        for e in epsilons:
            v = np.maximum(1.0 - math.exp(e) / ratio, 0.0)
            sums[e][0] += v.sum()
            sums[e][1] += (v * v).sum()
        done += n
    for e in epsilons:
        mean = sums[e][0] / samples
        var = sums[e][1] / samples - mean * mean
        print(f"{e} {mean:.6e} {math.sqrt(max(var, 0.0) / samples):.2e}")


if __name__ == "__main__":
    main()
