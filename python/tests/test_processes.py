"""Queries from forked processes (Python's `multiprocessing` with the "fork" start method):
a fork copies the evaluation thread pool's state but not its threads, so a child must not
hand work to it (it would wait forever); it computes on its own thread, with the same
answer."""

from __future__ import annotations

import multiprocessing
import sys

import pytest

import pld_accountant as pld

# Poisson-sampled: answered by PLD evaluations on the thread pool (plain Gaussians have a
# closed form and would not touch it).
SPEC = {
    "events": [
        {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 1000}
    ]
}


def upper_and_lower(delta: float) -> tuple[float, float]:
    answer = pld.epsilon(SPEC, delta)
    return answer.upper, answer.lower


@pytest.mark.skipif(sys.platform != "linux", reason="the fork start method is POSIX-only")
def test_a_forked_child_answers_as_its_parent() -> None:
    # The parent's query starts the evaluation threads before the fork.
    expected = upper_and_lower(1e-5)
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as workers:
        pending = workers.apply_async(upper_and_lower, (1e-5,))
        assert pending.get(timeout=120) == expected
