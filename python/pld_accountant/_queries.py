"""The accountant's questions: ε for δ, δ for ε, every method side by side, calibration."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from . import _native
from ._answers import Calibration, Comparison, DeltaAnswer, EpsilonAnswer, from_json
from ._native import Error
from ._spec import ArgumentTypeError, argument_types
from ._spec import Spec, spec_text

Tolerance = Union[float, Dict[str, float]]


def _options(
    tolerance: Optional[Tolerance],
    grid_step: Optional[float],
    tail_mass: Optional[float],
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Dict[str, Any]:
    """The accuracy options that were given (the others keep the accountant's defaults)."""
    given = {
        "tolerance": tolerance,
        "grid_step": grid_step,
        "tail_mass": tail_mass,
        "memory_budget": memory_budget,
        "upper_grid_step": upper_grid_step,
    }
    return {name: value for name, value in given.items() if value is not None}


@argument_types
def epsilon(
    spec: Spec,
    delta: float,
    *,
    tolerance: Optional[Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> EpsilonAnswer:
    """The guaranteed bracket on ε at ``delta`` (``pld epsilon``).

    ``spec`` is a specification: a dict in the JSON format (``{"neighbouring": …, "events":
    [{"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 1000},
    …]}``) or its JSON text. The answer's ``upper`` is a guaranteed upper bound on the
    smallest ε for which the composition is (ε, δ)-DP — safe to publish — and ``lower`` a
    guaranteed lower bound on that same ε.

    Options, as on the command line: ``tolerance`` is the relative bracket width to reach
    (default 1e-3, with a tenth of it as the absolute width for small ε; ``pld
    --tolerance``), or a dict of the library's fields (``relative``, ``absolute_epsilon``,
    ``relative_delta``, ``absolute_delta``); ``grid_step`` fixes the grid step in nats
    (``--grid-step``, in [1e-12, 1]); ``tail_mass`` fixes the truncation mass (in (0, 1e-3));
    ``memory_budget`` caps the accountant's grids in MiB (default 2048, at least 16;
    ``--memory-budget``): an answer cut short by it has ``settings["stopped_by"] ==
    "memory budget"`` and ``tolerance_met`` false; ``upper_grid_step`` (default 1e-4 nats,
    dp_accounting's default grid; ``--upper-grid-step``) is the grid the upper bound is
    computed on once more when the tolerance was met on a coarser one and that grid is
    cheap (``settings["upper_grid_step"]`` says when it was), ``"off"`` to let the
    tolerance alone choose.

    Raises :class:`pld_accountant.Error` (a ``ValueError``) with the CLI's message for
    invalid input, ``TypeError`` for an argument of the wrong Python type.

    >>> import pld_accountant as pld
    >>> spec = {"events": [{"mechanism": "gaussian", "sigma": 1.0,
    ...                     "sampling": {"poisson": 0.01}, "count": 1000}]}
    >>> answer = pld.epsilon(spec, 1e-5)
    >>> print(answer)
    ε ∈ [1.826776, 1.828244] at δ = 1e-5
    >>> answer.settings["tolerance_met"], answer.upper - answer.lower < 1e-3 * answer.upper
    (True, True)
    """
    options = _options(tolerance, grid_step, tail_mass, memory_budget, upper_grid_step)
    return EpsilonAnswer._from_native(_native.epsilon(spec_text(spec), delta, **options))


@argument_types
def delta(
    spec: Spec,
    epsilon: float,
    *,
    tolerance: Optional[Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> DeltaAnswer:
    """The guaranteed bracket on δ at ``epsilon`` (``pld delta``).

    ``upper`` is a guaranteed upper bound on the smallest δ for which the composition is
    (ε, δ)-DP, ``lower`` a guaranteed lower bound. A relative ``tolerance`` applies to δ here
    (default 1e-4), as ``pld delta --tolerance``; other options as for :func:`epsilon`.

    >>> import pld_accountant as pld
    >>> spec = {"events": [{"mechanism": "laplace", "scale": 2.0, "count": 10}]}
    >>> answer = pld.delta(spec, 4.0)
    >>> answer.lower <= answer.upper < 0.01
    True
    """
    options = _options(tolerance, grid_step, tail_mass, memory_budget, upper_grid_step)
    return DeltaAnswer._from_native(_native.delta(spec_text(spec), epsilon, **options))


@argument_types
def epsilons(
    spec: Spec,
    deltas: Any,
    *,
    tolerance: Optional[Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """The brackets on ε at every δ of ``deltas`` (``pld curve --deltas``): two float64 numpy
    arrays ``(upper, lower)`` of the shape of ``deltas`` (any array-like of numbers).

    Every δ is checked before any work (``invalid deltas[3] = 0: must be a number in (0,
    1)``; ``deltas[i, j]`` for arrays of more dimensions). Options as for :func:`epsilon`.

    >>> import numpy as np, pld_accountant as pld
    >>> spec = {"events": [{"mechanism": "gaussian", "sigma": 1.0,
    ...                     "sampling": {"poisson": 0.01}, "count": 1000}]}
    >>> upper, lower = pld.epsilons(spec, np.array([1e-3, 1e-5, 1e-7]))
    >>> upper.shape, bool(np.all(lower <= upper)), bool(np.all(np.diff(upper) > 0))
    ((3,), True, True)
    """
    values = _float_array(deltas, "deltas")
    options = _options(tolerance, grid_step, tail_mass, memory_budget, upper_grid_step)
    return _native.epsilons(spec_text(spec), values, **options)


@argument_types
def deltas(
    spec: Spec,
    epsilons: Any,
    *,
    tolerance: Optional[Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """The brackets on δ at every ε of ``epsilons`` (``pld curve --epsilons``): two float64
    numpy arrays ``(upper, lower)`` of the shape of ``epsilons``. Options as for :func:`delta`.
    """
    values = _float_array(epsilons, "epsilons")
    options = _options(tolerance, grid_step, tail_mass, memory_budget, upper_grid_step)
    return _native.deltas(spec_text(spec), values, **options)


def _float_array(values: Any, name: str) -> np.ndarray:
    """``values`` as a float64 array (a copy only when needed); ``TypeError`` if it is not
    numbers."""
    if isinstance(values, (str, bytes)):
        raise ArgumentTypeError(f"{name} must be an array of numbers, got {type(values).__name__}")
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError(f"{name} must be an array of numbers: {e}") from None


@argument_types
def compare(
    spec: Spec,
    delta: float,
    *,
    tolerance: Optional[Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Comparison:
    """ε at ``delta`` from every accountant that applies (``pld compare``): the PLD upper and
    lower bounds, RDP, zCDP, the composition theorems, the exact optimal composition and the
    CLT estimate.

    Returns a :class:`Comparison`, a list of dicts with the keys of ``pld compare --format
    json`` (``method``, ``epsilon``, ``kind`` — ``"upper_bound"``, ``"lower_bound"`` or
    ``"estimate"`` —, ``seconds``, ``ratio_to_pld_upper``, ``detail``), with ``delta`` and
    ``not_applicable`` as attributes; ``print()`` shows the table. Options as for
    :func:`epsilon` (they apply to the PLD rows).

    >>> import pld_accountant as pld
    >>> spec = {"events": [{"mechanism": "gaussian", "sigma": 1.0,
    ...                     "sampling": {"poisson": 0.01}, "count": 1000}]}
    >>> rows = pld.compare(spec, 1e-5)
    >>> [(row["method"], round(row["epsilon"], 6), row["kind"]) for row in rows]
    [('pld_upper', 1.828244, 'upper_bound'), ('pld_lower', 1.826777, 'lower_bound'), ('rdp', 2.101365, 'upper_bound'), ('clt_estimate', 1.617712, 'estimate')]
    """
    options = _options(tolerance, grid_step, tail_mass, memory_budget, upper_grid_step)
    text, display, caveats = _native.compare(spec_text(spec), delta, **options)
    data = from_json(text)
    return Comparison(data["rows"], data["delta"], data["not_applicable"], display, tuple(caveats))


@argument_types
def calibrate(
    spec: Spec,
    epsilon: float,
    delta: float,
    *,
    tolerance: Optional[Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Calibration:
    """The best value of the one field of ``spec`` written as ``None`` (JSON ``null``) for the
    target (``epsilon``, ``delta``) (``pld calibrate``): a noise ``sigma`` or ``scale`` as
    small as possible, a ``count`` as large as possible, or a Poisson rate (``"sampling":
    {"poisson": None}``) as large as possible, such that the accountant's upper bound still
    meets the target, verified by a fresh accountant call.

    Returns a :class:`Calibration`, a dict with the keys of ``pld calibrate --format json``
    (``parameter``, ``value``, ``epsilon`` with ``upper`` and ``lower``, ``delta``, and the
    rest). Raises :class:`pld_accountant.Error` when the target cannot be met (the other
    events alone exceed it, or a single run already does).

    >>> import pld_accountant as pld
    >>> spec = {"events": [{"mechanism": "gaussian", "sigma": None,
    ...                     "sampling": {"poisson": 0.01}, "count": 1000}]}
    >>> found = pld.calibrate(spec, 2.0, 1e-5)
    >>> found["parameter"], round(found["value"], 4), found["epsilon"]["upper"] <= 2.0
    ('sigma', 0.9591, True)
    """
    options = _options(tolerance, grid_step, tail_mass, memory_budget, upper_grid_step)
    text, display = _native.calibrate(spec_text(spec), epsilon, delta, **options)
    return Calibration(from_json(text), display)


@argument_types
def get_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    epochs: Optional[float] = None,
    steps: Optional[int] = None,
    accountant: str = "pld",
    epsilon_tolerance: float = 0.01,
    tolerance: Optional[Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> float:
    """The smallest noise multiplier for which DP-SGD (Poisson sampling at ``sample_rate``,
    ``steps`` steps or ``epochs`` epochs, add/remove neighbouring) meets (``target_epsilon``,
    ``target_delta``) by the PLD accountant's guaranteed upper bound: Opacus'
    ``get_noise_multiplier`` with this accountant's calibration.

    Give exactly one of ``steps`` and ``epochs``; epochs become ⌈epochs / sample_rate⌉ steps
    (as ``pld --epochs``: never fewer steps than the run takes; Opacus truncates instead).
    The value is found to a relative 10⁻⁴ (rounded toward more noise) and verified, so
    ``epsilon_tolerance`` (Opacus' search precision) is accepted and not needed;
    ``accountant`` must be ``"pld"``. Options as for :func:`epsilon`.

    >>> import pld_accountant as pld
    >>> z = pld.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5,
    ...                              sample_rate=0.01, steps=1000)
    >>> round(z, 4)
    0.9591
    """
    if (steps is None) == (epochs is None):
        raise Error("get_noise_multiplier takes as input EITHER a number of steps or a number of epochs")
    if accountant != "pld":
        raise Error(
            f"invalid accountant = {accountant!r}: must be \"pld\" (this function calibrates "
            "with the PLD accountant; Opacus' own get_noise_multiplier serves the others)"
        )
    if steps is None:
        assert epochs is not None
        steps = _native.steps_for_epochs(epochs, sample_rate)
    problem = _native.noise_multiplier_problem(sample_rate, steps)
    try:
        found = calibrate(
            problem,
            target_epsilon,
            target_delta,
            tolerance=tolerance,
            grid_step=grid_step,
            tail_mass=tail_mass,
            memory_budget=memory_budget,
            upper_grid_step=upper_grid_step,
        )
    except Error as e:
        message = str(e)
        for ours, opacus in (("invalid epsilon =", "invalid target_epsilon ="), ("invalid delta =", "invalid target_delta =")):
            if message.startswith(ours):
                raise Error(opacus + message[len(ours):]) from None
        raise
    return float(found["value"])
