"""The examples of the public Python API run, and every public function and class has one.

* The doctests of every module under ``mfscore/api/`` (the package, its modules, private ones too) pass.
* Every function and class that ``mfscore.api`` exports (its ``__all__``) has at least one example (a
  ``>>>`` line) in its own docstring: the API reference (``make docs``) shows it, and this test runs it.
* The examples of exported objects defined outside ``mfscore/api/`` (the results model of
  ``mfscore/results.py``, say) pass too: the module walk above does not see them.

Doctest options: ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE`` (as numpy and scikit-learn use them); a docstring
may add others with ``# doctest: +FLAG``. Nothing is skipped: without ``mfscore.api`` the tests fail.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import io
from pathlib import Path

import pytest

PACKAGE = "mfscore.api"
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def api_modules() -> list[str]:
    """``mfscore.api`` and every module under ``mfscore/api/``, by name, found from the files (nothing imported
    but ``mfscore``): a module that fails to import is then a failing test, not a collection error."""
    spec = importlib.util.find_spec(PACKAGE)
    names = {PACKAGE}
    for root in (spec.submodule_search_locations or []) if spec else []:
        for path in Path(root).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            names.add(".".join((PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts))))
    return sorted(names)


def run(tests: list[doctest.DocTest]) -> tuple[int, int, str]:
    """Runs the tests: (examples tried, failed, the runner's report of the failures)."""
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = io.StringIO()
    for test in tests:
        runner.run(test, out=report.write)
    return runner.tries, runner.failures, report.getvalue()


def public_objects() -> dict[str, object]:
    """The functions and classes ``mfscore.api.__all__`` names (constants and modules are not held to examples)."""
    api = importlib.import_module(PACKAGE)
    names = getattr(api, "__all__", None)
    assert names is not None, f"{PACKAGE} has no __all__: the public API is what it lists"
    assert names, f"{PACKAGE}.__all__ is empty"
    missing = [name for name in names if not hasattr(api, name)]
    assert not missing, f"{PACKAGE}.__all__ names what the package does not define: {missing}"
    return {name: getattr(api, name) for name in names
            if inspect.isclass(getattr(api, name)) or inspect.isroutine(getattr(api, name))}


@pytest.mark.parametrize("name", api_modules())
def test_doctests_pass(name):
    module = importlib.import_module(name)
    tries, failed, report = run(doctest.DocTestFinder(exclude_empty=True).find(module))
    assert failed == 0, f"{failed} of the {tries} examples of {name} failed:\n{report}"


def test_every_public_function_and_class_has_an_example():
    objects = public_objects()
    assert objects, f"{PACKAGE}.__all__ names no function or class"
    parser = doctest.DocTestParser()
    without = [name for name, obj in objects.items() if not parser.get_examples(obj.__doc__ or "")]
    assert not without, (f"these public names of {PACKAGE} have no example (a '>>>' line in their own docstring, "
                         f"run as a doctest): {without}")


def test_examples_of_public_objects_defined_elsewhere_pass():
    tests, seen = [], set()
    for name, obj in public_objects().items():
        module = inspect.getmodule(obj)
        if module is None or module.__name__ == PACKAGE or module.__name__.startswith(PACKAGE + "."):
            continue  # test_doctests_pass runs these
        for test in doctest.DocTestFinder(exclude_empty=True).find(obj, f"{PACKAGE}.{name}", module=module,
                                                                    globs=vars(module)):
            if (test.filename, test.lineno, test.docstring) not in seen:
                seen.add((test.filename, test.lineno, test.docstring))
                tests.append(test)
    tries, failed, report = run(tests)
    assert failed == 0, f"{failed} of the {tries} examples of public objects outside {PACKAGE} failed:\n{report}"
