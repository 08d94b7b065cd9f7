"""Tight differential-privacy accounting with privacy loss distributions (PLDs), with
**guaranteed** upper and lower bounds: the Python interface of the ``pld-accountant`` Rust
library (the ``pld`` command line's engine).

Describe what was released — a specification, a dict in the JSON format of ``pld --spec``
— and ask for ε at a given δ (or δ at a given ε). The answer is a bracket: ``upper`` is a
guaranteed upper bound on the smallest ε for which the whole composition is (ε, δ)-DP, safe
to publish; ``lower`` a guaranteed lower bound on that same ε.

>>> import pld_accountant as pld
>>> spec = {"events": [{"mechanism": "gaussian", "sigma": 1.0,
...                     "sampling": {"poisson": 0.01}, "count": 1000}]}
>>> print(pld.epsilon(spec, 1e-5))
ε ∈ [1.826776, 1.828244] at δ = 1e-5

Functions: :func:`epsilon`, :func:`delta`, :func:`epsilons` and :func:`deltas` (numpy arrays
in and out), :func:`compare` (every accountant side by side), :func:`calibrate` (the best
value of one parameter for a target), :func:`get_noise_multiplier` (Opacus' signature),
:func:`from_dp_event` (dp_accounting event trees). :class:`PLDAccountant` has Opacus'
accountant interface.

Errors: invalid input raises :class:`Error`, a subclass of ``ValueError``, with the same
one-line message as the command line (``invalid events[0].sigma = -1: must be a finite number
> 0``); an argument of the wrong Python type (a string for δ, a number for the
specification) raises :class:`ArgumentTypeError`, which is both a ``TypeError`` and an
:class:`Error`. The computation runs in Rust without the GIL.
"""

from ._accountant import PLDAccountant
from ._answers import Calibration, Comparison, DeltaAnswer, EpsilonAnswer
from ._dp_event import from_dp_event
from ._native import Error, __version__
from ._spec import ArgumentTypeError
from ._queries import calibrate, compare, delta, deltas, epsilon, epsilons, get_noise_multiplier

__all__ = [
    "ArgumentTypeError",
    "Calibration",
    "Comparison",
    "DeltaAnswer",
    "EpsilonAnswer",
    "Error",
    "PLDAccountant",
    "__version__",
    "calibrate",
    "compare",
    "delta",
    "deltas",
    "epsilon",
    "epsilons",
    "from_dp_event",
    "get_noise_multiplier",
]
