"""The package's interface as documented: what each function takes and returns, the errors it
raises, and the accountant's Opacus interface."""

from __future__ import annotations

import copy
import json
import math
import pickle
import threading
import time
import types
from collections import OrderedDict

import numpy as np
import pytest

import pld_accountant as pld
from conftest import SPECS

DP_SGD = SPECS["dp_sgd"]


# -- epsilon and delta ------------------------------------------------------------------------


def test_epsilon_takes_a_dict_or_json_text_and_answers_a_bracket():
    answer = pld.epsilon(DP_SGD, 1e-5)
    assert isinstance(answer, pld.EpsilonAnswer)
    assert isinstance(answer.upper, float) and isinstance(answer.lower, float)
    assert 0 < answer.lower <= 1.82824 <= answer.upper < 1.83
    assert answer.delta == 1e-5
    assert isinstance(answer.settings, dict) and answer.settings["method"] == "pld"
    assert answer.settings["tolerance_met"] is True
    assert pld.epsilon(json.dumps(DP_SGD), 1e-5) == answer
    upper, lower = answer
    assert (upper, lower) == (answer.upper, answer.lower)


def test_upper_grid_step_is_the_command_lines_option():
    # Default: the upper bound once more on a 1e-4 grid (dp_accounting's default), as `pld`.
    default = pld.epsilon(DP_SGD, 1e-5)
    assert default.settings["upper_grid_step"] == 1e-4
    off = pld.epsilon(DP_SGD, 1e-5, upper_grid_step="off")
    assert "upper_grid_step" not in off.settings
    assert off.upper > default.upper and default.lower <= default.upper
    finer = pld.epsilon(DP_SGD, 1e-5, upper_grid_step=5e-5)
    assert finer.settings["upper_grid_step"] == 5e-5 and finer.upper <= default.upper + 1e-7
    with pytest.raises(pld.Error, match=r'^invalid upper_grid_step = "of": must be a number of nats'):
        pld.epsilon(DP_SGD, 1e-5, upper_grid_step="of")
    with pytest.raises(pld.Error, match=r"^invalid upper_grid_step = 2: must be"):
        pld.PLDAccountant(upper_grid_step=2.0)
    accountant = pld.PLDAccountant(upper_grid_step="off")
    accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    assert accountant.get_epsilon(1e-5) > 0


def test_answers_print_nicely():
    answer = pld.epsilon(DP_SGD, 1e-5)
    assert repr(answer) == f"EpsilonAnswer(upper={answer.upper!r}, lower={answer.lower!r}, delta=1e-05)"
    assert str(answer) == "ε ∈ [1.826776, 1.828244] at δ = 1e-5"
    answer = pld.delta(DP_SGD, 2.0)
    assert repr(answer).startswith("DeltaAnswer(upper=") and repr(answer).endswith("epsilon=2.0)")
    assert str(answer).startswith("δ ∈ [") and str(answer).endswith("at ε = 2")


def test_delta_answers_a_bracket_on_delta():
    answer = pld.delta(DP_SGD, 2.0)
    assert isinstance(answer, pld.DeltaAnswer)
    assert 0 < answer.lower <= answer.upper < 1e-5
    assert answer.epsilon == 2.0
    assert answer.to_dict()["delta"] == {"upper": answer.upper, "lower": answer.lower}


def test_options_are_the_cli_ones():
    loose = pld.epsilon(DP_SGD, 1e-5)
    tight = pld.epsilon(DP_SGD, 1e-5, tolerance=1e-5)
    assert tight.upper - tight.lower <= 1e-5 * tight.upper
    assert tight.settings["tolerance"]["relative"] == 1e-5
    assert tight.settings["tolerance"]["absolute_epsilon"] == 1e-5 / 10  # a tenth, as --tolerance
    assert loose.lower <= tight.lower <= tight.upper <= loose.upper
    fixed = pld.epsilon(DP_SGD, 1e-5, grid_step=1e-3)
    assert fixed.settings["grid_step"] == 1e-3 and fixed.settings["refinements"] == 0
    fields = pld.epsilon(DP_SGD, 1e-5, tolerance={"relative": 1e-4, "absolute_epsilon": 0.0})
    assert fields.settings["tolerance"]["relative"] == 1e-4
    assert fields.settings["tolerance"]["absolute_epsilon"] == 0.0
    assert pld.epsilon(DP_SGD, 1e-5, tail_mass=1e-15).settings["tail_mass"] == 1e-15
    assert pld.delta(DP_SGD, 2.0, tolerance=1e-6).settings["tolerance"]["relative_delta"] == 1e-6
    with pytest.raises(pld.Error, match=r"tolerance\.bogus"):
        pld.epsilon(DP_SGD, 1e-5, tolerance={"bogus": 1.0})
    with pytest.raises(TypeError):
        pld.epsilon(DP_SGD, 1e-5, grid_size=1e-3)  # not an option


def test_memory_budget_is_the_cli_one():
    capped = pld.epsilon(DP_SGD, 1e-5, tolerance=1e-7, memory_budget=16)
    assert not capped.settings["tolerance_met"]
    assert capped.settings["stopped_by"] == "memory budget"
    assert capped.lower <= pld.epsilon(DP_SGD, 1e-5).upper
    with pytest.raises(pld.Error, match=r"memory_budget"):
        pld.epsilon(DP_SGD, 1e-5, memory_budget=1)
    with pytest.raises(pld.Error, match=r"memory_budget"):
        pld.PLDAccountant(memory_budget=float("nan"))


def test_infinite_answers_are_floats():
    spec = {"events": [{"mechanism": "eps_delta", "epsilon": 1.0, "delta": 0.5}]}
    answer = pld.epsilon(spec, 1e-5)
    assert answer.upper == math.inf and answer.lower == math.inf
    assert "inf" in str(answer)


# -- arrays -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (1,), (4,), (2, 3), (0,)])
def test_epsilons_keep_the_shape(shape):
    grid = np.geomspace(1e-2, 1e-9, num=max(1, int(np.prod(shape))))[: int(np.prod(shape))]
    deltas = grid.reshape(shape)
    upper, lower = pld.epsilons(DP_SGD, deltas)
    for out in (upper, lower):
        assert isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == shape
    assert np.all(lower <= upper)
    for index in np.ndindex(*shape):
        single = pld.epsilon(DP_SGD, float(deltas[index]))
        assert (upper[index], lower[index]) == (single.upper, single.lower)


def test_epsilons_accept_any_array_like_and_layout():
    values = [1e-3, 1e-5]
    a = pld.epsilons(DP_SGD, values)
    b = pld.epsilons(DP_SGD, np.array(values, dtype=object))
    c = pld.epsilons(DP_SGD, np.array([[1e-3, 0.5], [1e-5, 0.5]])[:, 0])  # not contiguous
    d = pld.epsilons(DP_SGD, np.asfortranarray(np.array([[1e-3, 1e-5], [1e-5, 1e-3]])))
    assert a[0].tolist() == b[0].tolist() == c[0].tolist() == d[0][0].tolist()
    assert d[0][1].tolist() == a[0][::-1].tolist()


def test_epsilons_check_every_delta_first():
    with pytest.raises(pld.Error, match=r"^invalid deltas\[2\] = 0: must be a number in \(0, 1\)$"):
        pld.epsilons(DP_SGD, [1e-3, 1e-5, 0.0])
    with pytest.raises(pld.Error, match=r"^invalid deltas\[1, 0\] = NaN"):
        pld.epsilons(DP_SGD, np.array([[1e-3, 1e-4], [np.nan, 1e-5]]))
    with pytest.raises(TypeError):
        pld.epsilons(DP_SGD, "1e-5")
    with pytest.raises(TypeError):
        pld.epsilons(DP_SGD, [1e-5, "x"])


def test_deltas_answer_arrays_too():
    upper, lower = pld.deltas(DP_SGD, np.array([1.0, 2.0, math.inf]))
    assert upper.shape == (3,) and np.all(lower <= upper)
    assert 0.0 == lower[2] <= upper[2] < 1e-30  # δ(∞) = 0 for a Gaussian: truncation only
    with pytest.raises(pld.Error, match=r"epsilons\[0\] = -1"):
        pld.deltas(DP_SGD, [-1.0])


# -- compare and calibrate -------------------------------------------------------------------


def test_compare_rows_have_the_cli_keys():
    rows = pld.compare(DP_SGD, 1e-5)
    assert isinstance(rows, list) and isinstance(rows, pld.Comparison)
    assert [row["method"] for row in rows][:2] == ["pld_upper", "pld_lower"]
    for row in rows:
        assert {"method", "epsilon", "kind", "seconds"} <= set(row)
        assert row["kind"] in ("upper_bound", "lower_bound", "estimate")
    assert rows.delta == 1e-5
    assert rows.row("rdp")["epsilon"] > rows.row("pld_upper")["epsilon"]
    assert {"method", "reason"} == set(rows.not_applicable[0])
    assert "pld_upper" in str(rows) and "not applicable" in str(rows)
    with pytest.raises(KeyError):
        rows.row("zcdp")
    assert repr(rows).startswith("Comparison(delta=1e-05, rows=[")


def test_calibrate_has_the_cli_keys():
    spec = {"events": [{"mechanism": "gaussian", "sigma": None, "sampling": {"poisson": 0.01}, "count": 1000}]}
    found = pld.calibrate(spec, 2.0, 1e-5)
    assert isinstance(found, dict)
    for key in ("parameter", "value", "epsilon", "delta", "location", "target_epsilon", "settings"):
        assert key in found
    assert found["parameter"] == "sigma" and found["location"] == "events[0].sigma"
    assert found["epsilon"]["upper"] <= 2.0 and found["delta"] == 1e-5
    assert abs(found["value"] - 0.9593) < 1e-3
    assert "sigma" in str(found)
    count = pld.calibrate({"events": [{"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": None}]}, 2.0, 1e-5)
    assert count["parameter"] == "count" and count["value"] == 1202 and type(count["value"]) is int
    with pytest.raises(pld.Error, match="no null|null"):
        pld.calibrate(DP_SGD, 2.0, 1e-5)
    with pytest.raises(pld.Error, match=r"^invalid epsilon = 0: must be a finite number > 0$"):
        pld.calibrate(spec, 0.0, 1e-5)


def test_get_noise_multiplier_has_opacus_signature():
    z = pld.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, steps=1000)
    assert abs(z - 0.9593) < 1e-3
    assert pld.epsilon({"events": [{"mechanism": "gaussian", "sigma": z, "sampling": {"poisson": 0.01}, "count": 1000}]}, 1e-5).upper <= 2.0
    # 10 epochs at q = 0.01 are 1000 steps; Opacus' extra arguments are accepted.
    assert pld.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, epochs=10,
                                    accountant="pld", epsilon_tolerance=0.01) == z
    with pytest.raises(ValueError, match="EITHER"):
        pld.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01)
    with pytest.raises(ValueError, match="EITHER"):
        pld.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, steps=10, epochs=1)
    with pytest.raises(pld.Error, match=r"^invalid sample_rate = 1.5"):
        pld.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=1.5, steps=10)
    with pytest.raises(pld.Error, match=r"^invalid steps = 0"):
        pld.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.5, steps=0)
    with pytest.raises(pld.Error, match=r"^invalid target_epsilon = -1"):
        pld.get_noise_multiplier(target_epsilon=-1.0, target_delta=1e-5, sample_rate=0.5, steps=10)
    with pytest.raises(pld.Error, match="accountant"):
        pld.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.5, steps=10, accountant="rdp")


# -- errors -----------------------------------------------------------------------------------


def test_errors_are_value_errors_with_the_cli_message():
    assert issubclass(pld.Error, ValueError)
    with pytest.raises(ValueError) as raised:
        pld.epsilon({"events": [{"mechanism": "gaussian", "sigma": -1}]}, 1e-5)
    assert str(raised.value) == "invalid events[0].sigma = -1: must be a finite number > 0"
    with pytest.raises(ValueError, match=r'^invalid events\[0\]\.sigma = "NaN"'):
        pld.epsilon({"events": [{"mechanism": "gaussian", "sigma": math.nan}]}, 1e-5)
    with pytest.raises(ValueError, match=r'^invalid events\[0\]\.sampling\.poisson = "inf"'):
        pld.epsilon({"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": math.inf}}]}, 1e-5)
    with pytest.raises(ValueError, match=r"^malformed specification: events\[0\]\.sigma is a set"):
        pld.epsilon({"events": [{"mechanism": "gaussian", "sigma": {1.0}}]}, 1e-5)
    with pytest.raises(ValueError, match=r"^malformed specification: key 1 in events\[0\]"):
        pld.epsilon({"events": [{1: "gaussian"}]}, 1e-5)


def test_wrong_python_types_are_type_errors():
    with pytest.raises(TypeError):
        pld.epsilon(42, 1e-5)
    with pytest.raises(TypeError):
        pld.epsilon(DP_SGD, "1e-5")
    with pytest.raises(TypeError):
        pld.epsilon(DP_SGD, None)
    with pytest.raises(TypeError):
        pld.epsilon(DP_SGD, 1e-5, grid_step="fine")


def test_numpy_scalars_are_numbers():
    spec = {"events": [{"mechanism": "gaussian", "sigma": np.float64(1.0),
                        "sampling": {"poisson": np.float32(0.5)}, "count": np.int64(10)}]}
    assert pld.epsilon(spec, np.float64(1e-5)).upper > 0


def test_the_gil_is_released_during_computation():
    done = threading.Event()
    result = {}

    def work():
        result["answer"] = pld.epsilon(DP_SGD, 1e-5, tolerance=1e-6)
        done.set()

    thread = threading.Thread(target=work)
    start = time.perf_counter()
    thread.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    thread.join()
    elapsed = time.perf_counter() - start
    assert result["answer"].upper > 0
    # Holding the GIL for the whole computation would allow no tick at all.
    assert elapsed < 0.05 or ticks >= 10, (elapsed, ticks)


# -- the accountant ---------------------------------------------------------------------------


def test_accountant_has_opacus_interface():
    accountant = pld.PLDAccountant()
    assert accountant.mechanism() == pld.PLDAccountant.mechanism() == "pld"
    assert len(accountant) == 0 and accountant.history == []
    assert accountant.get_epsilon(1e-5) == 0.0
    for _ in range(5):
        accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    accountant.step(noise_multiplier=1.2, sample_rate=0.01)
    accountant.step(noise_multiplier=1.2, sample_rate=0.01)
    accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    assert accountant.history == [(1.0, 0.01, 5), (1.2, 0.01, 2), (1.0, 0.01, 1)]
    assert len(accountant) == 8
    upper, lower = accountant.get_epsilon_bracket(1e-5)
    assert lower <= upper == accountant.get_epsilon(1e-5)
    spec = {"events": [
        {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 6},
        {"mechanism": "gaussian", "sigma": 1.2, "sampling": {"poisson": 0.01}, "count": 2},
    ]}
    assert (upper, lower) == tuple(pld.epsilon(spec, 1e-5))
    assert accountant.spec()["events"][1]["count"] == 2
    assert repr(accountant) == "PLDAccountant(steps=8, history=[(1.0, 0.01, 5), (1.2, 0.01, 2), (1.0, 0.01, 1)])"
    for z in (2.0, 3.0):
        accountant.step(noise_multiplier=z, sample_rate=0.01)
    assert repr(accountant).endswith("…, (3.0, 0.01, 1)] (5 entries))")


def test_accountant_steps_are_checked_and_nothing_bad_is_recorded():
    accountant = pld.PLDAccountant()
    with pytest.raises(pld.Error, match=r"^invalid noise_multiplier = 0: must be a finite number > 0$"):
        accountant.step(noise_multiplier=0.0, sample_rate=0.1)
    with pytest.raises(pld.Error, match=r"^invalid sample_rate = 1.5: must be a number in \(0, 1\]$"):
        accountant.step(noise_multiplier=1.0, sample_rate=1.5)
    with pytest.raises(pld.Error, match="noise_multiplier = NaN"):
        accountant.step(noise_multiplier=math.nan, sample_rate=0.1)
    with pytest.raises(TypeError):
        accountant.step(noise_multiplier="1", sample_rate=0.1)
    with pytest.raises(TypeError):
        accountant.step(1.0, 0.1)  # keywords only, as Opacus
    assert accountant.history == [] and len(accountant) == 0
    accountant.step(noise_multiplier=np.float32(1.5), sample_rate=1)
    assert accountant.history == [(1.5, 1.0, 1)]


def test_accountant_options_are_checked_when_made():
    with pytest.raises(pld.Error, match=r"^invalid grid_step = 2"):
        pld.PLDAccountant(grid_step=2.0)
    accountant = pld.PLDAccountant(tolerance=1e-5)
    accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    assert accountant.answer(1e-5).settings["tolerance"]["relative"] == 1e-5


def test_state_dict_round_trip():
    accountant = pld.PLDAccountant(tolerance=1e-4)
    for z in (1.0, 1.0, 2.0):
        accountant.step(noise_multiplier=z, sample_rate=0.02)
    state = accountant.state_dict()
    assert isinstance(state, OrderedDict)
    assert state["mechanism"] == "pld" and state["history"] == [(1.0, 0.02, 2), (2.0, 0.02, 1)]
    restored = pld.PLDAccountant()
    restored.load_state_dict(json.loads(json.dumps(state)))  # lists instead of tuples, as saved as JSON
    assert restored.history == accountant.history
    assert restored.get_epsilon_bracket(1e-6) == accountant.get_epsilon_bracket(1e-6)
    destination = {"other": 1}
    assert accountant.state_dict(destination) is destination and destination["other"] == 1
    state["history"].append((3.0, 0.5, 1))
    assert len(accountant.history) == 2  # a copy


@pytest.mark.parametrize(
    "state, message",
    [
        (None, "None or empty"),
        ({}, "None or empty"),
        ({"mechanism": "pld"}, "key `history`"),
        ({"history": []}, "key `mechanism`"),
        ({"history": [], "mechanism": "rdp"}, "state_dict of rdp"),
        ({"history": [(1.0, 0.1, 0)], "mechanism": "pld"}, r"history\[0\]\.num_steps = 0"),
        ({"history": [(1.0, 0.1, -3)], "mechanism": "pld"}, r"history\[0\]\.num_steps = -3"),
        ({"history": [(1.0, 0.1, 2), (-1.0, 0.1, 1)], "mechanism": "pld"}, r"history\[1\]\.noise_multiplier = -1"),
        ({"history": [(1.0, 2.0, 1)], "mechanism": "pld"}, r"history\[0\]\.sample_rate = 2"),
        ({"history": 5, "mechanism": "pld"}, "invalid history"),
        ({"history": [], "mechanism": "pld", "options": {"grid_step": 5.0}}, "grid_step"),
    ],
)
def test_load_state_dict_refuses_what_is_not_a_state(state, message):
    accountant = pld.PLDAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.1)
    with pytest.raises(ValueError, match=message):
        accountant.load_state_dict(state)
    assert accountant.history == [(1.0, 0.1, 1)]  # unchanged


def test_accountant_pickles_and_copies():
    accountant = pld.PLDAccountant(grid_step=1e-3)
    for _ in range(100):
        accountant.step(noise_multiplier=1.1, sample_rate=0.05)
    before = accountant.get_epsilon_bracket(1e-5)
    for clone in (pickle.loads(pickle.dumps(accountant)), copy.deepcopy(accountant), copy.copy(accountant)):
        assert clone.history == accountant.history
        assert clone.get_epsilon_bracket(1e-5) == before
        assert clone.state_dict()["options"] == {"grid_step": 1e-3}
    answer = pld.epsilon(DP_SGD, 1e-5)
    assert pickle.loads(pickle.dumps(answer)) == answer
    assert str(pickle.loads(pickle.dumps(answer))) == str(answer)
    rows = pld.compare(DP_SGD, 1e-5)
    again = pickle.loads(pickle.dumps(rows))
    assert again == rows and again.not_applicable == rows.not_applicable and str(again) == str(rows)


def test_optimizer_hook_records_steps_as_opacus():
    accountant = pld.PLDAccountant()
    hook = accountant.get_optimizer_hook_fn(sample_rate=0.01)
    optimizer = types.SimpleNamespace(noise_multiplier=1.0, accumulated_iterations=1)
    for _ in range(3):
        hook(optimizer)
    optimizer.accumulated_iterations = 2  # gradient accumulation: a larger effective rate
    hook(optimizer)
    assert accountant.history == [(1.0, 0.01, 3), (1.0, 0.02, 1)]
    with_epsilon = pld.PLDAccountant()
    hook = with_epsilon.get_optimizer_hook_fn(0.01, compute_epsilon=1e-5)
    hook(types.SimpleNamespace(noise_multiplier=1.0, accumulated_iterations=1))
    assert with_epsilon.last_epsilon == with_epsilon.get_epsilon(1e-5) > 0


def test_accountant_fits_opacus_duck_typing():
    """What Opacus' PrivacyEngine calls on its accountant, in the way it calls it."""
    accountant = pld.PLDAccountant()
    hook = accountant.get_optimizer_hook_fn(sample_rate=256 / 60000)
    optimizer = types.SimpleNamespace(noise_multiplier=1.1, accumulated_iterations=1)
    for _ in range(235):
        hook(optimizer)
    assert len(accountant) > 0
    assert accountant.get_epsilon(delta=1e-5) > 0
    checkpoint = {"privacy_accountant_state_dict": accountant.state_dict()}
    fresh = pld.PLDAccountant()
    fresh.load_state_dict(checkpoint["privacy_accountant_state_dict"])
    assert fresh.get_epsilon(delta=1e-5) == accountant.get_epsilon(delta=1e-5)


def test_wrong_python_types_are_value_errors_too():
    """The contract: every invalid input raises ValueError; a wrong type is also a TypeError."""
    spec = {"events": [{"mechanism": "gaussian", "sigma": 1.0}]}
    for call in (
        lambda: pld.epsilon(spec, "abc"),
        lambda: pld.epsilon(3, 1e-5),
        lambda: pld.delta(spec, None),
        lambda: pld.epsilons(spec, "x"),
        lambda: pld.PLDAccountant().step(noise_multiplier="x", sample_rate=0.1),
    ):
        with pytest.raises(pld.ArgumentTypeError) as info:
            call()
        assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
        assert isinstance(info.value, pld.Error)


# -- mechanisms known by their guarantee ------------------------------------------------------


def test_a_zcdp_guarantee_composes_with_dp_sgd_and_beats_rdp():
    """The specification's ``zcdp`` event through the package: alone, never above the zCDP
    conversion; mixed with DP-SGD steps, never above the RDP row."""
    alone = pld.compare({"events": [{"mechanism": "zcdp", "rho": 0.5}]}, 1e-6)
    assert alone.row("pld_upper")["epsilon"] <= alone.row("zcdp")["epsilon"] * (1 + 1e-12)
    mixed = {
        "events": [
            {"mechanism": "zcdp", "rho": 0.05, "count": 2},
            {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 1000},
        ]
    }
    rows = pld.compare(mixed, 1e-6)
    assert rows.row("pld_lower")["epsilon"] <= rows.row("pld_upper")["epsilon"]
    assert rows.row("pld_upper")["epsilon"] <= rows.row("rdp")["epsilon"]
    with pytest.raises(ValueError, match="rho"):
        pld.epsilon({"events": [{"mechanism": "zcdp", "rho": -1}]}, 1e-5)


def test_the_mixed_release_composes_every_kind_of_event():
    """The ``mixed-release`` preset's events (``pld presets mixed-release``): a
    smooth-sensitivity median known by its zCDP guarantee, DP-SGD steps and an
    exponential-mechanism selection; the PLD bracket is valid and below RDP."""
    spec = {
        "events": [
            {"mechanism": "laplace_log_normal", "sigma": 0.6, "s": 0.2, "t": 0.2},
            {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 100},
            {"mechanism": "exponential", "epsilon": 0.5},
        ]
    }
    rows = pld.compare(spec, 1e-6)
    assert 0 <= rows.row("pld_lower")["epsilon"] <= rows.row("pld_upper")["epsilon"]
    # The accountant also takes the RDP conversion, its divergences widened by a bound on
    # their rounding: equal to the row up to that widening.
    assert rows.row("pld_upper")["epsilon"] <= rows.row("rdp")["epsilon"] * (1 + 1e-12)
    answer = pld.epsilon(spec, 1e-6)
    assert answer.upper == rows.row("pld_upper")["epsilon"]
