"""A specification as the JSON text the accountant reads.

A dict (any mapping) is written as JSON exactly as given; a ``str`` is taken as JSON text.
Python values with no JSON equivalent are refused with :class:`pld_accountant.Error` naming
where they are, except non-finite floats: JSON has no NaN or infinity, so they are written as
the strings ``"NaN"``, ``"inf"`` and ``"-inf"``, which the accountant refuses exactly as it
refuses the same JSON file (``invalid events[0].sigma = "inf": must be a finite number > 0``).
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
import functools
from typing import Any, Callable, TypeVar, Union, cast

from ._native import Error


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong Python type (a string for δ, a number for the specification).

    Both a ``TypeError``, as Python code expects, and an :class:`Error` (hence a
    ``ValueError``), as the package promises for every invalid input.
    """


_F = TypeVar("_F", bound=Callable[..., Any])


def argument_types(function: _F) -> _F:
    """``function`` with every ``TypeError`` it raises (the native arguments' conversions
    included) raised as :class:`ArgumentTypeError`, same message."""

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ArgumentTypeError:
            raise
        except TypeError as e:
            raise ArgumentTypeError(str(e)) from None

    return cast(_F, checked)

Spec = Union[Mapping[str, Any], str]

# Deeper than any specification (the JSON reader stops at 128 levels): a cycle, or junk.
_MAX_DEPTH = 200


def spec_text(spec: Spec) -> str:
    """``spec`` (a mapping in the JSON format, or JSON text) as JSON text.

    Raises :class:`ArgumentTypeError` when ``spec`` is neither, and :class:`Error` (a ``ValueError``)
    for contents with no JSON form.
    """
    if isinstance(spec, str):
        return spec
    if isinstance(spec, (bytes, bytearray)):
        try:
            return bytes(spec).decode("utf-8")
        except UnicodeDecodeError as e:
            raise Error(f"malformed specification: not UTF-8 text ({e})") from None
    if isinstance(spec, Mapping):
        return json.dumps(_plain(spec, "", 0), allow_nan=False)
    raise ArgumentTypeError(
        "spec must be a dict in the specification format or its JSON text, "
        f"got {type(spec).__name__}"
    )


def _plain(value: Any, path: str, depth: int) -> Any:
    """``value`` as plain JSON-able Python values; ``path`` names it in errors."""
    if depth > _MAX_DEPTH:
        raise Error(f"malformed specification: nested more than {_MAX_DEPTH} levels deep at {path}")
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        x = float(value)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(value, Mapping):
        plain = {}
        for key, item in value.items():
            if not isinstance(key, str):
                where = f" in {path}" if path else ""
                raise Error(f"malformed specification: key {key!r}{where} is not a string")
            plain[key] = _plain(item, f"{path}.{key}" if path else key, depth + 1)
        return plain
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    raise Error(
        f"malformed specification: {path or 'the specification'} is a {type(value).__name__}, "
        "not a JSON value (a dict, list, str, number, bool or None)"
    )
