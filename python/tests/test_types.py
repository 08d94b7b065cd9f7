"""The type information users get: the installed package (its annotations and the native
module's stubs, `_native.pyi`, marked by `py.typed`) passes `mypy --strict`, and so does code
that uses it as documented."""

from __future__ import annotations

import pathlib

import pytest

mypy_api = pytest.importorskip("mypy.api")

USAGE = '''
import numpy as np
import numpy.typing as npt
import pld_accountant as pld

spec = {"events": [{"mechanism": "gaussian", "sigma": 1.0, "count": 3}]}
answer: pld.EpsilonAnswer = pld.epsilon(spec, 1e-5, tolerance=1e-4, grid_step=None)
publish: float = answer.upper
upper, lower = answer
delta: pld.DeltaAnswer = pld.delta('{"events": []}', 1.0)
curve: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] = pld.epsilons(spec, [1e-5])
rows: pld.Comparison = pld.compare(spec, 1e-5)
found: pld.Calibration = pld.calibrate(spec, 1.0, 1e-5)
z: float = pld.get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.1, steps=10)
accountant = pld.PLDAccountant(tolerance={"relative": 1e-4})
accountant.step(noise_multiplier=1.0, sample_rate=0.1)
bracket: tuple[float, float] = accountant.get_epsilon_bracket(1e-5)
converted: dict[str, object] = pld.from_dp_event(object())
try:
    pld.epsilon(spec, 2.0)
except pld.Error as error:
    message: str = str(error)
'''


def mypy(tmp_path: pathlib.Path, *args: str) -> None:
    stdout, stderr, status = mypy_api.run(
        ["--strict", "--cache-dir", str(tmp_path / "cache"), *args]
    )
    assert status == 0, stdout + stderr


def test_the_installed_package_type_checks(tmp_path):
    mypy(tmp_path, "-p", "pld_accountant")


def test_code_using_it_type_checks(tmp_path):
    usage = tmp_path / "usage.py"
    usage.write_text("from __future__ import annotations\n" + USAGE, encoding="utf-8")
    mypy(tmp_path, str(usage))
