"""Arbitrary bad input, from a seeded generator: every call either answers a sound-looking
bracket (no NaN, lower ≤ upper) or raises `ValueError` (`pld_accountant.Error`; for an argument
of the wrong Python type `pld_accountant.ArgumentTypeError`, also a `TypeError`). Nothing else: no other exception, no crash
of the interpreter (a crash would end the test run itself).

Re-run one case with `PLD_FUZZ_SEED=… PLD_FUZZ_ONLY=i pytest …`; `PLD_FUZZ_CASES` sets how
many (default 400).
"""

from __future__ import annotations

import copy
import decimal
import fractions
import json
import math
import os
import random
import types
from typing import Any, Callable, List

import numpy as np
import pytest

import pld_accountant as pld
from conftest import SPECS

SEED = int(os.environ.get("PLD_FUZZ_SEED", "20260514"))
CASES = int(os.environ.get("PLD_FUZZ_CASES", "400"))
ONLY = os.environ.get("PLD_FUZZ_ONLY")

# Fast accountant settings for the fuzzed calls (the inputs are what is fuzzed).
FAST = {"tolerance": 1e-2}


class Weird:
    """An object of no JSON type."""

    def __repr__(self) -> str:
        return "Weird()"


JUNK: List[Any] = [
    math.nan, math.inf, -math.inf, -1.0, 0.0, -0.0, 1e308, -1e308, 1e-308, 5e-324, 2.0 ** 64,
    2 ** 64, 2 ** 64 + 1, -(2 ** 63), 10 ** 30, 0, 1, -1, 3, 1.5, 0.5, 1e-12, 1e12, 1e13,
    "", "1.0", "gaussian", "inf", "NaN", None, True, False, [], {}, [1, 2], {"a": 1},
    [math.nan], b"bytes", 1j, decimal.Decimal("1.5"), fractions.Fraction(1, 3), Weird(),
    np.float64(math.nan), np.int64(-5), np.float32(0.25), np.array([1.0, 2.0]),
    set(), ("tuple",), "\x00\udcff",
]
QUERY_JUNK: List[Any] = [
    math.nan, math.inf, -math.inf, -1e-5, 0.0, 1.0, 1.5, 5e-324, 1 - 1e-16, 1e-300, 2, -0.0,
    "1e-5", None, [1e-5], b"x", 1j, Weird(), np.float64(1e-5), np.nan, 1e-5, 0.3, 10.0, 700.0,
]
OPTION_JUNK: List[Any] = [
    math.nan, math.inf, -1.0, 0.0, 2.0, 1e-13, 1e-12, 0.5, 1e-3, "fine", None, [1e-3],
    {"relative": -1}, {"relative": math.nan}, {"nope": 1.0}, {"relative": "x"}, {}, Weird(), 1e-4,
]


def mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """`value` with one random part replaced, deleted, duplicated or extended."""
    if isinstance(value, dict) and value and depth < 6 and rng.random() < 0.8:
        value = dict(value)
        key = rng.choice(sorted(value))
        roll = rng.random()
        if roll < 0.6:
            value[key] = mutate(rng, value[key], depth + 1)
        elif roll < 0.75:
            del value[key]
        elif roll < 0.9:
            value[rng.choice(["extra", "sampling", "count", "sensitivity", "replace_sensitivity", key + "_"])] = rng.choice(JUNK)
        else:
            value[key] = rng.choice(JUNK)
        return value
    if isinstance(value, list) and value and depth < 6 and rng.random() < 0.8:
        value = list(value)
        i = rng.randrange(len(value))
        roll = rng.random()
        if roll < 0.6:
            value[i] = mutate(rng, value[i], depth + 1)
        elif roll < 0.8:
            del value[i]
        else:
            value.append(copy.deepcopy(value[i]) if rng.random() < 0.5 else rng.choice(JUNK))
        return value
    return rng.choice(JUNK)


def junk_text(rng: random.Random) -> str:
    base = json.dumps(rng.choice(list(SPECS.values())))
    roll = rng.random()
    if roll < 0.3:
        return base[: rng.randrange(len(base))]
    if roll < 0.6:
        i = rng.randrange(len(base))
        return base[:i] + rng.choice(['"', "{", "]", ",", "NaN", "1e999", "\\", "\x00", "null"]) + base[i:]
    return "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(0, 40)))


def a_spec(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.7:
        spec = copy.deepcopy(rng.choice(list(SPECS.values())))
        for _ in range(rng.randint(1, 3)):
            spec = mutate(rng, spec)
        return spec
    if roll < 0.9:
        return junk_text(rng)
    return rng.choice(JUNK)


def an_event(rng: random.Random, depth: int = 0) -> Any:
    """A DpEvent-shaped object: real class names, junk attributes."""
    names = ["GaussianDpEvent", "LaplaceDpEvent", "RandomizedResponseDpEvent", "PoissonSampledDpEvent",
             "SampledWithoutReplacementDpEvent", "SelfComposedDpEvent", "ComposedDpEvent", "NoOpDpEvent",
             "DiscreteLaplaceDpEvent", "MixtureOfGaussiansDpEvent", "ZCDpEvent", "Mystery"]
    name = rng.choice(names)
    attributes = {}
    for field in ["noise_multiplier", "noise_parameter", "num_buckets", "sampling_probability", "sample_size",
                  "source_dataset_size", "count", "sensitivity", "standard_deviation", "sensitivities", "sampling_probs"]:
        if rng.random() < 0.8:
            attributes[field] = rng.choice(JUNK + [1.0, 2, 0.1, 10])
    if depth < 4 and rng.random() < 0.8:
        attributes["event"] = an_event(rng, depth + 1)
    if depth < 3 and rng.random() < 0.6:
        attributes["events"] = [an_event(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    elif rng.random() < 0.2:
        attributes["events"] = rng.choice(JUNK)
    return type(name, (), attributes)()


def check_answer(answer: Any) -> None:
    upper, lower = answer.upper, answer.lower
    assert not (math.isnan(upper) or math.isnan(lower)), answer
    assert lower <= upper, answer


def call(rng: random.Random) -> Callable[[], Any]:
    """One random call with random bad (or sometimes good) arguments, and its result check."""
    kind = rng.choice(["epsilon", "delta", "epsilons", "compare", "calibrate", "options", "step",
                       "state", "event", "noise"])
    spec = a_spec(rng)
    query = rng.choice(QUERY_JUNK)
    if kind == "epsilon":
        return lambda: check_answer(pld.epsilon(spec, query, **FAST))
    if kind == "delta":
        return lambda: check_answer(pld.delta(spec, query, **FAST))
    if kind == "epsilons":
        values = rng.choice([[query, 1e-5], np.array([[1e-3, query]]), query, [], "x", [[1e-5], [1e-3, 1e-2]]])

        def run_epsilons() -> None:
            upper, lower = pld.epsilons(spec, values, **FAST)
            assert upper.shape == lower.shape and not np.isnan(upper).any() and np.all(lower <= upper)

        return run_epsilons
    if kind == "compare":
        def run_compare() -> None:
            rows = pld.compare(spec, query, **FAST)
            assert all(not math.isnan(row["epsilon"]) for row in rows)

        return run_compare
    if kind == "calibrate":
        unknown = copy.deepcopy(SPECS["dp_sgd"])
        unknown["events"][0][rng.choice(["sigma", "count", "mechanism", "sensitivity"])] = None
        target = rng.choice([spec, unknown, mutate(rng, unknown)])
        return lambda: pld.calibrate(target, rng.choice(QUERY_JUNK + [1.0, 2.0]), rng.choice(QUERY_JUNK), **FAST)
    if kind == "options":
        options = {name: rng.choice(OPTION_JUNK) for name in rng.sample(["tolerance", "grid_step", "tail_mass"], rng.randint(1, 3))}
        if rng.random() < 0.2:
            options["grid_size"] = 1e-3
        small = {"events": [{"mechanism": "laplace", "scale": 1.0, "count": 3}]}
        return lambda: check_answer(pld.epsilon(small, 1e-5, **options))
    if kind == "step":
        def run_steps() -> None:
            accountant = pld.PLDAccountant(**FAST)
            for _ in range(rng.randint(1, 4)):
                try:
                    accountant.step(noise_multiplier=rng.choice(JUNK + [1.0]), sample_rate=rng.choice(JUNK + [0.01]))
                except (ValueError, TypeError):
                    pass
            check_answer(accountant.answer(rng.choice(QUERY_JUNK)))

        return run_steps
    if kind == "state":
        state = {"history": rng.choice([mutate(rng, [(1.0, 0.01, 10), (2.0, 0.5, 3)]), rng.choice(JUNK)]),
                 "mechanism": rng.choice(["pld", "rdp", None, 1])}
        if rng.random() < 0.3:
            state["options"] = {name: rng.choice(OPTION_JUNK) for name in ["tolerance", "grid_step"]}

        def run_state() -> None:
            accountant = pld.PLDAccountant(**FAST)
            accountant.load_state_dict(state)
            accountant.get_epsilon(1e-5)

        return run_state
    if kind == "event":
        event = an_event(rng)
        return lambda: check_answer(pld.epsilon(pld.from_dp_event(event), 1e-5, **FAST))
    return lambda: pld.get_noise_multiplier(
        target_epsilon=rng.choice(QUERY_JUNK + [2.0]), target_delta=rng.choice(QUERY_JUNK),
        sample_rate=rng.choice(JUNK + [0.01]), steps=rng.choice(JUNK + [100, None]),
        epochs=rng.choice([None, None, 1, rng.choice(JUNK)]), **FAST)


def test_bad_input_raises_value_error_and_nothing_else():
    failures = []
    outcomes = {"answered": 0, "ValueError": 0, "of which TypeError": 0}
    cases = [int(ONLY)] if ONLY is not None else range(CASES)
    for case in cases:
        rng = random.Random(f"{SEED}-{case}")
        try:
            run = call(rng)
            run()
            outcomes["answered"] += 1
        except ValueError as e:
            # Every invalid input is a ValueError (the contract); a wrong Python type is also
            # a TypeError (pld_accountant.ArgumentTypeError).
            outcomes["ValueError"] += 1
            if isinstance(e, TypeError):
                outcomes["of which TypeError"] += 1
        except BaseException as e:  # noqa: BLE001 — anything else is the failure being tested
            if isinstance(e, KeyboardInterrupt):
                raise
            failures.append(f"case {case}: {type(e).__name__}: {e}")
    print(f"seed {SEED}, {len(cases)} cases: {outcomes}")
    assert not failures, f"seed {SEED} (re-run one: PLD_FUZZ_SEED={SEED} PLD_FUZZ_ONLY=i):\n" + "\n".join(failures)
