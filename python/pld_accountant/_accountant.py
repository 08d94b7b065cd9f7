"""An accountant with Opacus' interface (``IAccountant``), answering with the PLD bracket."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from . import _native
from ._answers import EpsilonAnswer
from ._native import Error
from ._spec import ArgumentTypeError, argument_types
from ._queries import Tolerance, _options, epsilon

# A composition with no privacy loss at all: the answer for an empty history, computed (and
# δ checked) by the accountant like any other.
_NOTHING_RELEASED = '{"events": [{"mechanism": "eps_delta", "epsilon": 0, "delta": 0}]}'


def _number(value: Any, name: str) -> float:
    if type(value) is float:
        return value
    if isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
        raise ArgumentTypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


class PLDAccountant:
    """DP-SGD accounting with Opacus' accountant interface and a guaranteed PLD bracket.

    Each ``step(noise_multiplier=z, sample_rate=q)`` records one step of the
    Poisson-subsampled Gaussian mechanism with σ = z (times the clipping norm) under add/remove
    neighbouring — Opacus' assumptions; consecutive identical steps are merged in ``history``, a
    list of ``(noise_multiplier, sample_rate, num_steps)``, so a step costs O(1).
    ``get_epsilon(delta)`` composes the whole history and returns the guaranteed upper bound
    on ε (safe to publish); ``get_epsilon_bracket(delta)`` returns ``(upper, lower)``.

    It needs no Opacus import. To use it in Opacus (1.6 takes ``accountant=`` as a name),
    replace the engine's accountant before ``make_private``::

        engine = PrivacyEngine()
        engine.accountant = PLDAccountant()
        model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer,
                                                       data_loader=loader,
                                                       noise_multiplier=1.1,
                                                       max_grad_norm=1.0)
        ...
        engine.get_epsilon(delta=1e-5)  # the PLD upper bound

    ``make_private_with_epsilon`` calibrates with Opacus' own accountants; use
    :func:`pld_accountant.get_noise_multiplier` and ``make_private`` instead.

    Options (``tolerance``, ``grid_step``, ``tail_mass``, ``memory_budget``,
    ``upper_grid_step``) as for :func:`pld_accountant.epsilon`.
    Accountants pickle, and ``state_dict()`` / ``load_state_dict()`` save and restore them.

    >>> from pld_accountant import PLDAccountant
    >>> accountant = PLDAccountant()
    >>> for _ in range(1000):
    ...     accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    >>> accountant.history
    [(1.0, 0.01, 1000)]
    >>> len(accountant), accountant.mechanism()
    (1000, 'pld')
    >>> round(accountant.get_epsilon(1e-5), 6)
    1.828244
    >>> upper, lower = accountant.get_epsilon_bracket(1e-5)
    >>> round(upper, 6), round(lower, 6)
    (1.828244, 1.826777)
    """

    history: List[Tuple[float, float, int]]

    def __init__(
        self,
        *,
        tolerance: Optional[Tolerance] = None,
        grid_step: Optional[float] = None,
        tail_mass: Optional[float] = None,
        memory_budget: Optional[float] = None,
        upper_grid_step: Optional[Union[float, str]] = None,
    ) -> None:
        options = _options(tolerance, grid_step, tail_mass, memory_budget, upper_grid_step)
        _native.check_options(**options)
        self.history = []
        self._options = options
        self._last: Optional[Tuple[Any, EpsilonAnswer]] = None

    @classmethod
    def mechanism(cls) -> str:
        """The accounting mechanism's name, ``"pld"``."""
        return "pld"

    @argument_types
    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimizer step with this noise multiplier and Poisson sampling rate.

        Raises :class:`pld_accountant.Error` for a value the accountant cannot account
        (``invalid noise_multiplier = 0: must be a finite number > 0``), and records nothing
        then.
        """
        z = _number(noise_multiplier, "noise_multiplier")
        q = _number(sample_rate, "sample_rate")
        history = self.history
        if history:
            last = history[-1]
            if last[0] == z and last[1] == q:
                history[-1] = (z, q, last[2] + 1)
                return
        _native.check_step(z, q)
        history.append((z, q, 1))

    def __len__(self) -> int:
        """The number of steps recorded."""
        return sum(entry[2] for entry in self.history)

    def spec(self) -> Dict[str, Any]:
        """The history as a specification (the JSON format of :func:`pld_accountant.epsilon`
        and ``pld --spec``); raises :class:`pld_accountant.Error` for an empty history."""
        import json

        text = _native.history_spec(self.history)
        if text is None:
            raise Error("invalid history = []: must be a non-empty list (no step was recorded)")
        spec: Dict[str, Any] = json.loads(text)
        return spec

    def answer(self, delta: float, **options: Any) -> EpsilonAnswer:
        """The full answer at ``delta`` (bracket and settings, as :func:`pld_accountant.epsilon`);
        ``options`` override the accountant's for this query."""
        merged = {**self._options, **{k: v for k, v in options.items() if v is not None}}
        key = (tuple(self.history), delta, tuple(sorted(merged.items(), key=lambda kv: kv[0])))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        text = _native.history_spec(self.history)
        answer = epsilon(_NOTHING_RELEASED if text is None else text, delta, **merged)
        self._last = (key, answer)
        return answer

    @argument_types
    def get_epsilon(self, delta: float, **options: Any) -> float:
        """The guaranteed upper bound on ε at ``delta`` for every step recorded (safe to
        publish); 0 before the first step."""
        return self.answer(delta, **options).upper

    @argument_types
    def get_epsilon_bracket(self, delta: float, **options: Any) -> Tuple[float, float]:
        """``(upper, lower)``: guaranteed upper and lower bounds on the ε of the steps recorded."""
        answer = self.answer(delta, **options)
        return answer.upper, answer.lower

    @argument_types
    def get_optimizer_hook_fn(
        self, sample_rate: float, compute_epsilon: Optional[float] = None
    ) -> Callable[[Any], None]:
        """A hook for Opacus' ``DPOptimizer`` (``optimizer.attach_step_hook``), as Opacus'
        ``IAccountant`` gives it: after each optimizer step it records a step with the
        optimizer's ``noise_multiplier`` at rate ``sample_rate × accumulated_iterations``.

        ``compute_epsilon``: optionally a δ; the hook then also computes the ε upper bound at
        that δ after each step and keeps it in ``last_epsilon`` (one accountant call per step).
        """

        def hook_fn(optim: Any) -> None:
            self.step(
                noise_multiplier=optim.noise_multiplier,
                sample_rate=sample_rate * optim.accumulated_iterations,
            )
            if compute_epsilon is not None:
                self.last_epsilon = self.get_epsilon(compute_epsilon)

        return hook_fn

    def state_dict(self, destination: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The accountant's state as Opacus saves it: ``history`` and ``mechanism`` (and this
        accountant's ``options``)."""
        if destination is None:
            destination = OrderedDict()
        destination["history"] = copy.deepcopy(self.history)
        destination["mechanism"] = self.mechanism()
        destination["options"] = dict(self._options)
        return destination

    @argument_types
    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict` (or from an Opacus accountant of the same
        history format); raises ``ValueError`` for a state that is not one."""
        if state_dict is None or len(state_dict) == 0:
            raise Error("state dict is either None or empty and hence cannot be loaded into Privacy Accountant.")
        if "history" not in state_dict:
            raise Error("state_dict does not have the key `history`. Cannot be loaded into Privacy Accountant.")
        if "mechanism" not in state_dict:
            raise Error("state_dict does not have the key `mechanism`. Cannot be loaded into Privacy Accountant.")
        if state_dict["mechanism"] != self.mechanism():
            raise Error(
                f"state_dict of {state_dict['mechanism']} cannot be loaded into "
                f"Privacy Accountant with mechanism {self.mechanism()}"
            )
        history = state_dict["history"]
        if isinstance(history, (str, bytes)) or not hasattr(history, "__iter__"):
            raise Error(f"invalid history = {history!r}: must be a list of (noise_multiplier, sample_rate, num_steps)")
        history = [tuple(entry) if hasattr(entry, "__iter__") else entry for entry in history]
        _native.history_spec(history)  # every entry checked, named history[i]
        options = dict(state_dict.get("options") or {})
        _native.check_options(**options)
        self.history = [(float(z), float(q), int(n)) for z, q, n in history]
        self._options = options
        self._last = None

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["_last"] = None
        return state

    def __repr__(self) -> str:
        history = self.history
        if len(history) <= 4:
            shown = repr(history)
        else:
            shown = f"[{history[0]!r}, {history[1]!r}, …, {history[-1]!r}] ({len(history)} entries)"
        return f"PLDAccountant(steps={len(self)}, history={shown})"
