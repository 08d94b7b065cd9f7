"""The answers, as Python objects built from the accountant's JSON (the keys and numbers of
``pld … --format json``; an infinite value, the string ``"inf"`` there, is ``math.inf`` here).
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, Iterator, List, Tuple, Type, TypeVar


def from_json(text: str) -> Any:
    """The JSON text as dicts and lists, ``"inf"``/``"-inf"`` as floats."""
    return _infinities(json.loads(text))


def _infinities(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _infinities(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_infinities(item) for item in value]
    if value == "inf":
        return math.inf
    if value == "-inf":
        return -math.inf
    return value


_A = TypeVar("_A", bound="_Answer")


class _Answer:
    """A guaranteed bracket ``[lower, upper]`` at one query value, with its settings and the
    specification's caveats."""

    __slots__ = ("upper", "lower", "settings", "caveats", "_query", "_text")
    # The names of the query value and of the bracket in the JSON answer.
    _QUERY = ""
    _BRACKET = ""

    def __init__(
        self,
        upper: float,
        lower: float,
        query: float,
        settings: Dict[str, Any],
        text: str,
        caveats: Tuple[str, ...] = (),
    ):
        self.upper: float = upper
        self.lower: float = lower
        self.settings: Dict[str, Any] = settings
        self.caveats: Tuple[str, ...] = tuple(caveats)
        self._query: float = query
        self._text: str = text

    @classmethod
    def _from_native(cls: Type[_A], answer: Tuple[str, str, List[str]]) -> _A:
        text, display, caveats = answer
        data = from_json(text)
        bracket = data[cls._BRACKET]
        return cls(bracket["upper"], bracket["lower"], data[cls._QUERY], data["settings"], display, tuple(caveats))

    def to_dict(self) -> Dict[str, Any]:
        """The answer as ``pld`` writes it in JSON (infinities as ``math.inf``)."""
        return {
            self._QUERY: self._query,
            self._BRACKET: {"upper": self.upper, "lower": self.lower},
            "settings": dict(self.settings),
        }

    def __iter__(self) -> Iterator[float]:
        """``upper, lower = answer``."""
        return iter((self.upper, self.lower))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Answer) or type(other) is not type(self):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(upper={self.upper!r}, lower={self.lower!r}, {self._QUERY}={self._query!r})"

    def __str__(self) -> str:
        return self._text

    def __getstate__(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in _Answer.__slots__}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        # (Answers pickled before `caveats` existed have none.)
        self.caveats = ()
        for name, value in state.items():
            setattr(self, name, value)


class EpsilonAnswer(_Answer):
    """The guaranteed bracket on ε at one δ, from :func:`pld_accountant.epsilon`.

    ``upper`` is a guaranteed upper bound on the smallest ε for which the composition is
    (ε, δ)-DP (publish it); ``lower`` a guaranteed lower bound on that same ε. ``settings``
    says how it was computed (grid step, refinements, bracket width, …), as ``pld epsilon
    --format json`` does. ``caveats`` is a tuple of sentences saying why the bracket may be
    wide whatever the grid (shuffled batches, random allocation with 1 < k < t, truncated
    Poisson batches expected to be cut; the CLI's ``note:`` lines), empty when nothing is
    known to widen it. ``str()`` is the one-line form ``ε ∈ [lower, upper] at δ = …``
    (rounded outward); ``upper, lower = answer`` unpacks it.
    """

    __slots__ = ()
    _QUERY = "delta"
    _BRACKET = "epsilon"

    @property
    def delta(self) -> float:
        """The δ asked about."""
        return self._query


class DeltaAnswer(_Answer):
    """The guaranteed bracket on δ at one ε, from :func:`pld_accountant.delta`.

    ``upper`` is a guaranteed upper bound on the smallest δ for which the composition is
    (ε, δ)-DP, ``lower`` a guaranteed lower bound; ``settings`` and ``caveats`` as for
    :class:`EpsilonAnswer`.
    """

    __slots__ = ()
    _QUERY = "epsilon"
    _BRACKET = "delta"

    @property
    def epsilon(self) -> float:
        """The ε asked about."""
        return self._query


class Comparison(list):  # type: ignore[type-arg]
    """Every accountant's ε at one δ, from :func:`pld_accountant.compare`: a list of rows, each
    a dict with the keys of ``pld compare --format json`` (``method``, ``epsilon``, ``kind``,
    ``seconds``, ``ratio_to_pld_upper``, ``detail``).

    ``delta`` is the δ every row answers for; ``not_applicable`` lists the methods that do not
    apply, each ``{"method", "reason"}``; ``caveats`` says why the PLD bracket is wide by
    nature, as for :class:`EpsilonAnswer`; ``str()`` prints the table; ``row(name)`` finds one
    row.
    """

    delta: float
    not_applicable: List[Dict[str, str]]
    caveats: Tuple[str, ...]

    def __init__(
        self,
        rows: List[Dict[str, Any]],
        delta: float,
        not_applicable: List[Dict[str, str]],
        text: str,
        caveats: Tuple[str, ...] = (),
    ):
        super().__init__(rows)
        self.delta = delta
        self.not_applicable = not_applicable
        self.caveats = tuple(caveats)
        self._text = text

    def row(self, method: str) -> Dict[str, Any]:
        """The row of ``method`` (e.g. ``"rdp"``); ``KeyError`` if it does not apply."""
        for row in self:
            if row["method"] == method:
                found: Dict[str, Any] = row
                return found
        raise KeyError(method)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Comparison(delta={self.delta!r}, rows={list.__repr__(self)})"


class Calibration(dict):  # type: ignore[type-arg]
    """A calibration, from :func:`pld_accountant.calibrate`: a dict with the keys of ``pld
    calibrate --format json`` (``parameter``, ``value``, ``epsilon``: ``{"upper", "lower"}``,
    ``delta``, ``location``, ``target_epsilon``, ``failing_value``, ``failing_epsilon``,
    ``search_range``, ``evaluations``, ``settings``, ``seconds``, ``source``). ``str()`` prints
    the CLI's summary.
    """

    def __init__(self, data: Dict[str, Any], text: str):
        super().__init__(data)
        self._text = text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Calibration({dict.__repr__(self)})"
