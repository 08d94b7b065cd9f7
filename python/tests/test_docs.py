"""The documentation does not drift: the README's Python example prints what the README says it
prints, and every docstring example of the package runs as written (doctest)."""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import re

import pytest

from conftest import REPO

MODULES = [
    "pld_accountant",
    "pld_accountant._queries",
    "pld_accountant._accountant",
    "pld_accountant._dp_event",
    "pld_accountant._answers",
    "pld_accountant._spec",
]


def readme_example():
    """The first python block of the README's "From Python" section, and the text block after
    it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## From Python\n"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    output = re.search(r"```text\n(.*?)```", section[code.end():], re.S)
    return code.group(1), output.group(1)


def test_the_readme_example_prints_what_the_readme_says():
    code, expected = readme_example()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md (From Python)", "exec"), {})
    assert printed.getvalue() == expected


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_every_public_name_is_documented():
    import pld_accountant

    for name in pld_accountant.__all__:
        if name == "__version__":
            continue
        item = getattr(pld_accountant, name)
        assert item.__doc__ and len(item.__doc__.strip()) > 40, name
