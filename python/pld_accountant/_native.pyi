"""Type stubs of the Rust extension ``pld_accountant._native`` (used through the functions of
``pld_accountant``; specifications are JSON text here, answers the CLI's JSON text and the
library's display)."""

from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

class Error(ValueError):
    """Invalid input or a limit of the computation, with the CLI's one-line message."""

_Tolerance = Union[float, Dict[str, float]]

def epsilon(
    spec: str,
    delta: float,
    *,
    tolerance: Optional[_Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Tuple[str, str, List[str]]: ...
def delta(
    spec: str,
    epsilon: float,
    *,
    tolerance: Optional[_Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Tuple[str, str, List[str]]: ...
def epsilons(
    spec: str,
    deltas: npt.NDArray[np.float64],
    *,
    tolerance: Optional[_Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def deltas(
    spec: str,
    epsilons: npt.NDArray[np.float64],
    *,
    tolerance: Optional[_Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def compare(
    spec: str,
    delta: float,
    *,
    tolerance: Optional[_Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Tuple[str, str, List[str]]: ...
def calibrate(
    spec: str,
    epsilon: float,
    delta: float,
    *,
    tolerance: Optional[_Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> Tuple[str, str]: ...
def normalize_spec(spec: str) -> str: ...
def check_options(
    *,
    tolerance: Optional[_Tolerance] = None,
    grid_step: Optional[float] = None,
    tail_mass: Optional[float] = None,
    memory_budget: Optional[float] = None,
    upper_grid_step: Optional[Union[float, str]] = None,
) -> None: ...
def check_step(noise_multiplier: float, sample_rate: float) -> None: ...
def history_spec(history: Sequence[Sequence[float]]) -> Optional[str]: ...
def steps_for_epochs(epochs: float, sample_rate: float) -> int: ...
def noise_multiplier_problem(sample_rate: float, steps: int) -> str: ...
