"""The package answers exactly what the `pld` command line answers on the same input: the same
numbers (bit for bit: one library, one serde form), the same settings, the same error
messages."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import pld_accountant as pld
from conftest import SPECS, cli_error, inf_as_float

OPTIONS = [
    ({}, []),
    ({"tolerance": 5e-4}, ["--tolerance", "5e-4"]),
    ({"grid_step": 1e-3}, ["--grid-step", "0.001"]),
]


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_epsilon_equals_the_cli(pld_cli, name, delta):
    spec = SPECS[name]
    for options, flags in OPTIONS:
        code, cli, stderr = pld_cli(["epsilon", "--delta", repr(delta), "--format", "json", *flags], spec)
        assert code == 0, stderr
        answer = pld.epsilon(spec, delta, **options)
        expected = inf_as_float(cli)
        assert (answer.upper, answer.lower) == (expected["epsilon"]["upper"], expected["epsilon"]["lower"]), (name, options)
        assert answer.settings == expected["settings"], (name, options)
        assert answer.delta == expected["delta"]
        # The JSON string form too: the same text for each key the CLI writes.
        assert answer.to_dict() == {k: expected[k] for k in ("delta", "epsilon", "settings")}
        assert answer.caveats == tuple(expected["inputs"].get("caveats", []))


# Compositions whose bracket is wide by nature, each with its caveat (the CLI's `note:`).
WIDE_BY_NATURE = {
    "shuffled batches": {"events": [{"mechanism": "gaussian", "sigma": 1.0,
                                     "sampling": {"shuffle": {"steps_per_epoch": 100}}, "count": 2}]},
    "random allocation with 1 < k < t": {"events": [{
        "mechanism": "gaussian", "sigma": 2.0,
        "sampling": {"random_allocation": {"steps_per_epoch": 20, "participations": 2}}, "count": 1}]},
    "truncated Poisson sampling": {"neighbouring": "add_remove", "events": [{
        "mechanism": "gaussian", "sigma": 1.1,
        "sampling": {"truncated_poisson": {"rate": 0.02, "max_batch_size": 25, "dataset_size": 1000}},
        "count": 100}]},
    # Mechanisms accounted through their guarantee (each note starts with their names).
    "zcdp and rdp_curve": {"events": [
        {"mechanism": "zcdp", "rho": 0.05, "count": 2},
        {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 100}]},
    "laplace_log_normal": {"events": [
        {"mechanism": "laplace_log_normal", "sigma": 0.6, "s": 0.2, "t": 0.2}]},
    "student_t and cauchy": {"events": [{"mechanism": "cauchy", "s": 0.1, "t": 0.0, "count": 3}]},
    "exponential": {"events": [{"mechanism": "exponential", "epsilon": 0.5, "count": 4}]},
}


def test_rare_cuts_are_noted_at_small_delta(pld_cli):
    """Truncated Poisson sampling whose cuts are rare (6.8e-5 cut steps expected) gets its
    note at δ 1e-8, where the cuts decide the upper bound, and not at δ 1e-3."""
    sampling = {"truncated_poisson": {"rate": 0.01, "max_batch_size": 700, "dataset_size": 60000}}
    spec = {"events": [{"mechanism": "gaussian", "sigma": s, "sampling": sampling} for s in (0.616, 2.74)]}
    for delta, count in ((1e-8, 1), (1e-3, 0)):
        code, cli, stderr = pld_cli(["epsilon", "--delta", repr(delta), "--format", "json"], spec)
        assert code == 0, stderr
        notes = tuple(inf_as_float(cli)["inputs"].get("caveats", []))
        assert pld.epsilon(spec, delta).caveats == notes
        assert len(notes) == count, notes


@pytest.mark.parametrize("reason", sorted(WIDE_BY_NATURE))
def test_caveats_equal_the_cli_notes(pld_cli, reason):
    spec = WIDE_BY_NATURE[reason]
    code, cli, stderr = pld_cli(["epsilon", "--delta", "1e-5", "--format", "json"], spec)
    assert code == 0, stderr
    notes = tuple(inf_as_float(cli)["inputs"]["caveats"])
    answer = pld.epsilon(spec, 1e-5)
    assert answer.caveats == notes
    assert len(notes) == 1 and notes[0].startswith(reason), notes
    # (δ(ε)'s notes are those at the δ it finds, which may name another cap.)
    code, cli, stderr = pld_cli(["delta", "--epsilon", "1.0", "--format", "json"], spec)
    assert code == 0, stderr
    delta_notes = tuple(inf_as_float(cli)["inputs"]["caveats"])
    assert pld.delta(spec, 1.0).caveats == delta_notes
    assert len(delta_notes) == 1 and delta_notes[0].startswith(reason), delta_notes
    code, cli, stderr = pld_cli(["compare", "--delta", "1e-5", "--format", "json"], spec)
    assert code == 0, stderr
    assert pld.compare(spec, 1e-5).caveats == tuple(inf_as_float(cli)["inputs"]["caveats"]) == notes


@pytest.mark.parametrize("name", sorted(SPECS))
def test_delta_equals_the_cli(pld_cli, name):
    spec = SPECS[name]
    for epsilon in (0.5, 2.0):
        for options, flags in OPTIONS[:2]:
            code, cli, stderr = pld_cli(["delta", "--epsilon", repr(epsilon), "--format", "json", *flags], spec)
            assert code == 0, stderr
            answer = pld.delta(spec, epsilon, **options)
            expected = inf_as_float(cli)
            assert (answer.upper, answer.lower) == (expected["delta"]["upper"], expected["delta"]["lower"]), (name, epsilon)
            assert answer.settings == expected["settings"]


@pytest.mark.parametrize("name", ["dp_sgd", "mixed", "analytic_gaussian", "discrete"])
def test_epsilons_equal_the_cli_curve(pld_cli, name):
    spec = SPECS[name]
    deltas = [1e-1, 1e-3, 1e-6, 1e-10, 1e-12]
    code, cli, stderr = pld_cli(
        ["curve", "--deltas", ",".join(repr(d) for d in deltas), "--format", "json"], spec
    )
    assert code == 0, stderr
    upper, lower = pld.epsilons(spec, np.array(deltas))
    points = inf_as_float(cli)["points"]
    assert upper.tolist() == [p["epsilon"]["upper"] for p in points]
    assert lower.tolist() == [p["epsilon"]["lower"] for p in points]


def test_deltas_equal_the_cli_curve(pld_cli):
    spec = SPECS["mixed"]
    epsilons = [0.0, 1.0, 3.0, 10.0]
    code, cli, stderr = pld_cli(
        ["curve", "--epsilons", ",".join(repr(e) for e in epsilons), "--format", "json"], spec
    )
    assert code == 0, stderr
    upper, lower = pld.deltas(spec, epsilons)
    points = inf_as_float(cli)["points"]
    assert upper.tolist() == [p["delta"]["upper"] for p in points]
    assert lower.tolist() == [p["delta"]["lower"] for p in points]


@pytest.mark.parametrize("name", ["dp_sgd", "mixed", "counting_queries", "analytic_gaussian"])
def test_compare_equals_the_cli(pld_cli, name):
    spec = SPECS[name]
    code, cli, stderr = pld_cli(["compare", "--delta", "1e-6", "--format", "json"], spec)
    assert code == 0, stderr
    rows = pld.compare(spec, 1e-6)
    expected = inf_as_float(cli)
    assert rows.delta == expected["delta"]
    assert rows.not_applicable == expected["not_applicable"]
    assert len(rows) == len(expected["rows"])
    for ours, theirs in zip(rows, expected["rows"]):
        assert list(ours) == list(theirs), "the same keys in the same order"
        for key in ours:
            if key == "seconds":
                assert isinstance(ours[key], float) and ours[key] >= 0
            elif key == "detail" and ours["method"].startswith("pld_"):
                continue  # the grid is the same; the detail of the PLD rows prints the time
            else:
                assert ours[key] == theirs[key], (name, ours["method"], key)


@pytest.mark.parametrize(
    "spec, epsilon, delta",
    [
        ({"events": [{"mechanism": "gaussian", "sigma": None, "sampling": {"poisson": 0.01}, "count": 1000}]}, 2.0, 1e-5),
        ({"events": [{"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": None}]}, 2.0, 1e-5),
        ({"events": [{"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": None}, "count": 1000}]}, 1.0, 1e-6),
        ({"events": [{"mechanism": "laplace", "scale": None, "count": 10}]}, 1.0, 1e-6),
    ],
)
def test_calibrate_equals_the_cli(pld_cli, spec, epsilon, delta):
    code, cli, stderr = pld_cli(
        ["calibrate", "--epsilon", repr(epsilon), "--delta", repr(delta), "--format", "json"], spec
    )
    assert code == 0, stderr
    found = pld.calibrate(spec, epsilon, delta)
    expected = inf_as_float(cli)
    assert list(found) == list(expected), "the same keys in the same order"
    for key in found:
        if key not in ("seconds", "source"):
            assert found[key] == expected[key], key
    assert type(found["value"]) is type(expected["value"])  # a count is an int


def test_get_noise_multiplier_equals_the_cli_calibration(pld_cli):
    # 30 epochs at q = 0.004 are 7500 steps (⌈epochs / q⌉, as `pld --epochs`).
    spec = {"events": [{"mechanism": "gaussian", "sigma": None, "sensitivity": 1.0,
                        "sampling": {"poisson": 0.004}, "count": 7500}]}
    code, cli, stderr = pld_cli(["calibrate", "--epsilon", "3", "--delta", "1e-5", "--format", "json"], spec)
    assert code == 0, stderr
    z = pld.get_noise_multiplier(target_epsilon=3.0, target_delta=1e-5, sample_rate=0.004, epochs=30)
    assert z == cli["value"]


BAD_SPECS = [
    '{"events": [{"mechanism": "gaussian", "sigma": -1}]}',
    '{"events": [{"mechanism": "gausian", "sigma": 1}]}',
    '{"events": []}',
    '{"event": []}',
    '{"events": [{"mechanism": "gaussian", "sigma": 1, "count": 0}]}',
    '{"events": [{"mechanism": "gaussian", "sigma": 1, "count": 1.5}]}',
    '{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0}}]}',
    '{"neighbouring": "replace", "events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.1}}]}',
    '{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"fixed_batch": {"batch_size": 2, "dataset_size": 10}}}]}',
    '{"events": [{"mechanism": "gaussian", "sigma": 1, "sensitivity": 1, "replace_sensitivity": 1}]}',
    '{"events": [{"mechanism": "randomized_response", "epsilon": 1, "categories": 1}]}',
    '{"events": [{"mechanism": "eps_delta", "epsilon": 1, "delta": 2}]}',
    '{"events": [{"mechanism": "pmf_pair", "p": [0.5, 0.6], "q": [0.5, 0.5]}]}',
    '{"events": [{"mechanism": "gaussian", "sigma": "1"}]}',
    '{"events": [{"mechanism": "gaussian", "sigma": 1e999}]}',
    '{"events": [{"mechanism": "gaussian", "sigma": 1}], "extra": 1}',
    '{"events": [{"mechanism": "gaussian", "sigma": null}]}',
    '{"events": [',
    '[]',
    '',
]


@pytest.mark.parametrize("text", BAD_SPECS)
def test_invalid_specifications_give_the_cli_message(pld_cli, text):
    code, _, stderr = pld_cli(["epsilon", "--delta", "1e-5", "--format", "json"], text)
    assert code == 2, stderr
    with pytest.raises(pld.Error) as raised:
        pld.epsilon(text, 1e-5)
    assert str(raised.value) == cli_error(stderr)
    if text.strip().startswith("{") and text.count("{") == text.count("}") and "1e999" not in text:
        # The same specification given as a dict (where JSON reads into one; 1e999 would be
        # the float inf, which a dict writes as "inf").
        try:
            as_dict = json.loads(text)
        except json.JSONDecodeError:
            return
        with pytest.raises(pld.Error) as raised:
            pld.epsilon(as_dict, 1e-5)
        assert str(raised.value) == cli_error(stderr)


@pytest.mark.parametrize(
    "options, flags",
    [
        ({"grid_step": 2.0}, ["--grid-step", "2"]),
        ({"grid_step": 0.0}, ["--grid-step", "0"]),
        ({"tolerance": -1.0}, ["--tolerance", "-1"]),
        ({"tolerance": math.nan}, ["--tolerance", "NaN"]),
    ],
)
def test_invalid_options_give_the_cli_message(pld_cli, options, flags):
    code, _, stderr = pld_cli(["epsilon", "--delta", "1e-5", "--format", "json", *flags], SPECS["dp_sgd"])
    assert code == 2, stderr
    with pytest.raises(pld.Error) as raised:
        pld.epsilon(SPECS["dp_sgd"], 1e-5, **options)
    assert str(raised.value) == cli_error(stderr)


@pytest.mark.parametrize("delta", [0.0, 1.0, 1.5, -1e-5, math.inf, math.nan])
def test_invalid_delta_gives_the_cli_message(pld_cli, delta):
    code, _, stderr = pld_cli(["epsilon", "--delta", repr(delta).replace("nan", "NaN"), "--format", "json"], SPECS["dp_sgd"])
    assert code == 2, stderr
    with pytest.raises(pld.Error) as raised:
        pld.epsilon(SPECS["dp_sgd"], delta)
    assert str(raised.value) == cli_error(stderr)


def test_infeasible_calibration_gives_the_cli_message(pld_cli):
    spec = {"events": [{"mechanism": "gaussian", "sigma": 1.0, "count": 1000},
                       {"mechanism": "gaussian", "sigma": None}]}
    code, _, stderr = pld_cli(["calibrate", "--epsilon", "0.5", "--delta", "1e-5", "--format", "json"], spec)
    assert code == 2, stderr
    with pytest.raises(pld.Error) as raised:
        pld.calibrate(spec, 0.5, 1e-5)
    assert str(raised.value) == cli_error(stderr)


def test_the_dp_sgd_flags_and_the_accountant_agree(pld_cli):
    code, cli, stderr = pld_cli(
        ["epsilon", "--noise-multiplier", "1.1", "--sampling-rate", repr(256 / 60000),
         "--steps", "14063", "--delta", "1e-5", "--format", "json"]
    )
    assert code == 0, stderr
    accountant = pld.PLDAccountant()
    for _ in range(14063):
        accountant.step(noise_multiplier=1.1, sample_rate=256 / 60000)
    assert accountant.get_epsilon_bracket(1e-5) == (cli["epsilon"]["upper"], cli["epsilon"]["lower"])
    assert json.loads(json.dumps(accountant.spec()))["events"][0]["count"] == 14063
