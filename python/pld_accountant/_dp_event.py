"""dp_accounting's ``DpEvent`` trees as specifications.

Events are recognised by their class name and read through their attributes, so
dp_accounting is not needed at run time (and any object shaped like its events converts).

| DpEvent | specification |
| --- | --- |
| ``GaussianDpEvent(z)`` | ``gaussian``, ``sigma`` = z (sensitivity 1) |
| ``LaplaceDpEvent(b)`` | ``laplace``, ``scale`` = b (sensitivity 1) |
| ``DiscreteLaplaceDpEvent(a, k)`` | ``discrete_laplace``, ``scale`` = 1/a, ``sensitivity`` = k |
| ``RandomizedResponseDpEvent(p, k)`` | ``randomized_response``, ``categories`` = k, ``epsilon`` = ln(1 + k(1 − p)/p) |
| ``MixtureOfGaussiansDpEvent(σ, c, p)`` | ``mixture_of_gaussians`` |
| ``PoissonSampledDpEvent(q, e)`` | e with ``"sampling": {"poisson": q}`` |
| ``SampledWithoutReplacementDpEvent(n, m, e)`` | e with ``"sampling": {"fixed_batch": {"batch_size": m, "dataset_size": n}}`` |
| ``SelfComposedDpEvent(e, k)`` | e's events with their counts × k |
| ``ComposedDpEvent([e1, …])`` | the events of each |
| ``NoOpDpEvent()`` | nothing |

Randomized response with noise parameter p reports the truth with probability 1 − p + p/k
and each other bucket with p/k: the ``randomized_response`` mechanism with e^ε = (1 − p +
p/k)/(p/k). At p = 1, or with one bucket, it reveals nothing (an ``eps_delta`` event with ε =
δ = 0, as dp_accounting counts it); at p = 0 it reveals the input (``eps_delta`` with ε =
0, δ = 1: no finite ε).
"""

from __future__ import annotations

import json
import math
import operator
from typing import Any, Dict, List, Optional, Tuple

from . import _native
from ._native import Error
from ._spec import argument_types
from ._spec import spec_text

_SUPPORTED = (
    "GaussianDpEvent, LaplaceDpEvent, DiscreteLaplaceDpEvent, RandomizedResponseDpEvent, "
    "MixtureOfGaussiansDpEvent, PoissonSampledDpEvent, SampledWithoutReplacementDpEvent, "
    "SelfComposedDpEvent, ComposedDpEvent, NoOpDpEvent"
)

# Deeper than any real event tree: a cycle.
_MAX_DEPTH = 500


@argument_types
def from_dp_event(event: Any, *, neighbouring: Optional[str] = None) -> Dict[str, Any]:
    """The specification (a dict in the JSON format) of a dp_accounting ``DpEvent`` tree.

    Supported events: Gaussian, Laplace, discrete Laplace, randomized response and mixture of
    Gaussians mechanisms; Poisson sampling and sampling without replacement of one mechanism;
    self-composition and composition; the no-op event. Any other event raises
    :class:`pld_accountant.Error` (a ``ValueError``) naming its type. Identical events are
    merged into one with their counts added.

    ``neighbouring`` (``"add_remove"`` or ``"replace"``) defaults to ``"replace"`` when the
    tree samples without replacement (dp_accounting accounts that under REPLACE_ONE) and to
    ``"add_remove"`` otherwise. The specification is validated before it is returned, with
    the accountant's messages.

    >>> from dp_accounting import dp_event
    >>> import pld_accountant as pld
    >>> step = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
    >>> spec = pld.from_dp_event(dp_event.SelfComposedDpEvent(step, 1000))
    >>> spec
    {'neighbouring': 'add_remove', 'events': [{'mechanism': 'gaussian', 'sigma': 1.0, 'sampling': {'poisson': 0.01}, 'count': 1000}]}
    >>> round(pld.epsilon(spec, 1e-5).upper, 6)
    1.828244
    """
    groups: Dict[str, Tuple[Dict[str, Any], int]] = {}
    _collect(event, 1, None, groups, 0)
    events: List[Dict[str, Any]] = []
    for mechanism, count in groups.values():
        events.append({**mechanism, "count": count})
    if not events:
        # Only no-op events (or counts of 0): nothing is revealed.
        events = [{"mechanism": "eps_delta", "epsilon": 0.0, "delta": 0.0, "count": 1}]
    if neighbouring is None:
        fixed = any("fixed_batch" in e.get("sampling", {}) for e in events)
        neighbouring = "replace" if fixed else "add_remove"
    text = spec_text({"neighbouring": neighbouring, "events": events})
    _native.normalize_spec(text)  # refused here, with the accountant's message, if invalid
    spec: Dict[str, Any] = json.loads(text)
    return spec


def _name(event: Any) -> str:
    return type(event).__name__


def _field(event: Any, name: str) -> Any:
    try:
        return getattr(event, name)
    except AttributeError:
        raise Error(f"malformed {_name(event)}: it has no attribute {name!r}") from None


def _count(value: Any, event: Any) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise Error(f"invalid {_name(event)}.count = {value!r}: must be a whole number ≥ 0")
    count = operator.index(value)
    if count < 0:
        raise Error(f"invalid {_name(event)}.count = {count}: must be a whole number ≥ 0")
    return count


def _collect(
    event: Any,
    count: int,
    sampling: Optional[Dict[str, Any]],
    groups: Dict[str, Tuple[Dict[str, Any], int]],
    depth: int,
) -> None:
    """Add ``event``, run ``count`` times on ``sampling``, to ``groups`` (keyed by the JSON of
    the event without its count)."""
    if depth > _MAX_DEPTH:
        raise Error(f"malformed DpEvent tree: nested more than {_MAX_DEPTH} levels deep")
    name = _name(event)
    if name == "NoOpDpEvent":
        return
    if name == "SelfComposedDpEvent":
        inner = _field(event, "event")
        _collect(inner, count * _count(_field(event, "count"), event), sampling, groups, depth + 1)
        return
    if name == "ComposedDpEvent":
        events = _field(event, "events")
        if isinstance(events, (str, bytes)) or not hasattr(events, "__iter__"):
            raise Error(f"malformed ComposedDpEvent: events = {events!r} is not a list of events")
        for inner in events:
            _collect(inner, count, sampling, groups, depth + 1)
        return
    if name in ("PoissonSampledDpEvent", "SampledWithoutReplacementDpEvent"):
        inner = _field(event, "event")
        if sampling is not None:
            raise Error(f"cannot convert {name} inside a sampled event: a specification samples each mechanism once")
        if name == "PoissonSampledDpEvent":
            sampled = {"poisson": _field(event, "sampling_probability")}
        else:
            sampled = {
                "fixed_batch": {
                    "batch_size": _field(event, "sample_size"),
                    "dataset_size": _field(event, "source_dataset_size"),
                }
            }
        if _name(inner) in ("SelfComposedDpEvent", "ComposedDpEvent", "PoissonSampledDpEvent", "SampledWithoutReplacementDpEvent"):
            raise Error(
                f"cannot convert {name} of a {_name(inner)}: a specification samples single "
                "mechanisms (one batch per mechanism run), not compositions"
            )
        if _name(inner) == "NoOpDpEvent" or count == 0:
            return
        _collect(inner, count, sampled, groups, depth + 1)
        return
    mechanism = _mechanism(event, name)
    if count == 0:
        return
    if sampling is not None:
        mechanism["sampling"] = sampling
    key = json.dumps(mechanism, sort_keys=True, default=repr)
    if key in groups:
        groups[key] = (groups[key][0], groups[key][1] + count)
    else:
        groups[key] = (mechanism, count)


def _mechanism(event: Any, name: str) -> Dict[str, Any]:
    """A leaf event's mechanism fields."""
    if name == "GaussianDpEvent":
        return {"mechanism": "gaussian", "sigma": _field(event, "noise_multiplier")}
    if name == "LaplaceDpEvent":
        return {"mechanism": "laplace", "scale": _field(event, "noise_multiplier")}
    if name == "DiscreteLaplaceDpEvent":
        a = _real(_field(event, "noise_parameter"), "DiscreteLaplaceDpEvent.noise_parameter")
        scale = 1.0 / a if a != 0 else math.inf
        return {"mechanism": "discrete_laplace", "scale": scale, "sensitivity": _field(event, "sensitivity")}
    if name == "RandomizedResponseDpEvent":
        p = _real(_field(event, "noise_parameter"), "RandomizedResponseDpEvent.noise_parameter")
        k = _field(event, "num_buckets")
        if not 0.0 <= p <= 1.0:
            raise Error(f"invalid RandomizedResponseDpEvent.noise_parameter = {p!r}: must be a number in [0, 1]")
        if isinstance(k, bool) or not hasattr(k, "__index__") or k.__index__() < 1:
            raise Error(f"invalid RandomizedResponseDpEvent.num_buckets = {k!r}: must be a whole number ≥ 1")
        k = k.__index__()
        if p == 1.0 or k == 1:
            return {"mechanism": "eps_delta", "epsilon": 0.0, "delta": 0.0}
        if p == 0.0:
            return {"mechanism": "eps_delta", "epsilon": 0.0, "delta": 1.0}
        return {"mechanism": "randomized_response", "epsilon": math.log1p(k * (1.0 - p) / p), "categories": k}
    if name == "MixtureOfGaussiansDpEvent":
        return {
            "mechanism": "mixture_of_gaussians",
            "sigma": _field(event, "standard_deviation"),
            "sensitivities": list(_field(event, "sensitivities")),
            "probabilities": list(_field(event, "sampling_probs")),
        }
    raise Error(f"cannot convert {name}: no specification equivalent (supported: {_SUPPORTED})")


def _real(value: Any, name: str) -> float:
    if isinstance(value, (str, bytes, bool)) or not hasattr(value, "__float__"):
        raise Error(f"invalid {name} = {value!r}: must be a number")
    return float(value)
