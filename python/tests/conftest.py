"""Shared helpers of the Python tests: the `pld` binary, specifications, tolerances.

The tests run against the installed package (`pip install ./python`), never the source tree,
so they test what users get. `scripts/test_python.sh` sets everything up.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import Any, Dict, List, Optional, Tuple

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

# Specifications every equality test runs on: each path of the accountant (grid and FFT,
# closed-form Gaussian, exact atoms, sampling schemes, both relations).
SPECS: Dict[str, Dict[str, Any]] = {
    "dp_sgd": {
        "events": [
            {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 1000}
        ]
    },
    "mixed": {
        "neighbouring": "add_remove",
        "events": [
            {"mechanism": "gaussian", "sigma": 1.0, "sensitivity": 1.0,
             "sampling": {"poisson": 0.01}, "count": 1000},
            {"mechanism": "laplace", "scale": 2.0, "count": 10},
            {"mechanism": "randomized_response", "epsilon": 0.5, "categories": 4},
            {"mechanism": "eps_delta", "epsilon": 0.1, "delta": 1e-6, "count": 100},
        ],
    },
    "analytic_gaussian": {
        "events": [
            {"mechanism": "gaussian", "sigma": 20.0, "count": 4},
            {"mechanism": "gaussian", "sigma": 5.0, "sensitivity": 2.0},
        ]
    },
    "fixed_batch": {
        "neighbouring": "replace",
        "events": [
            {"mechanism": "gaussian", "sigma": 2.0,
             "sampling": {"fixed_batch": {"batch_size": 256, "dataset_size": 60000}},
             "count": 500}
        ],
    },
    "discrete": {
        "events": [
            {"mechanism": "discrete_laplace", "scale": 3.0, "count": 20},
            {"mechanism": "discrete_gaussian", "sigma": 4.0, "sensitivity": 2, "count": 5},
        ]
    },
    "counting_queries": {
        "neighbouring": "replace",
        "events": [{"mechanism": "laplace", "scale": 2.0, "replace_sensitivity": 1, "count": 12}],
    },
    "pairs": {
        "events": [
            {"mechanism": "mixture_of_gaussians", "sigma": 2.0,
             "sensitivities": [0.0, 1.0, 2.0], "probabilities": [0.9, 0.09, 0.01], "count": 50},
            {"mechanism": "pmf_pair", "p": [0.5, 0.3, 0.2], "q": [0.4, 0.35, 0.25], "count": 3},
        ]
    },
}


def pld_binary() -> pathlib.Path:
    """The `pld` binary the equality tests compare with: $PLD_BINARY, else the release build
    in $CARGO_TARGET_DIR or the repository's target/ (built if absent)."""
    given = os.environ.get("PLD_BINARY")
    if given:
        return pathlib.Path(given)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = target / "release" / "pld"
    if not binary.exists():
        subprocess.run(
            ["cargo", "build", "--release", "--quiet", "--bin", "pld"], cwd=REPO, check=True
        )
    return binary


@pytest.fixture(scope="session")
def pld_cli():
    """Run `pld ARGS… --format json` (a spec dict is written to a file and given as --spec);
    returns (exit code, parsed JSON or None, standard error)."""
    binary = pld_binary()

    def run(args: List[str], spec: Optional[Any] = None, tmp: Optional[pathlib.Path] = None) -> Tuple[int, Any, str]:
        command = [str(binary), *args, "--quiet"]
        stdin = None
        if spec is not None:
            stdin = spec if isinstance(spec, str) else json.dumps(spec)
            command += ["--spec", "-"]
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=600)
        parsed = json.loads(done.stdout) if done.returncode == 0 and "--format" in args else None
        return done.returncode, parsed, done.stderr.strip()

    return run


def cli_error(stderr: str) -> str:
    """The CLI's one-line message, without its `error: ` prefix."""
    assert stderr.startswith("error: "), stderr
    return stderr[len("error: "):]


def inf_as_float(value: Any) -> Any:
    """The CLI's JSON with "inf" strings as floats, as the Python package answers."""
    if isinstance(value, dict):
        return {k: inf_as_float(v) for k, v in value.items()}
    if isinstance(value, list):
        return [inf_as_float(v) for v in value]
    if value == "inf":
        return float("inf")
    if value == "-inf":
        return float("-inf")
    return value
