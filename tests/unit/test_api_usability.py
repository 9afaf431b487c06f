"""The Python library as a new user meets it (issue 45, items 2-4): paths, errors, discoverability.

* **Paths.** ``score`` takes ``os.PathLike`` wherever it takes a path, and gives what ``str`` paths give.
* **Misplaced options.** A nested option given flat is refused, naming where it belongs in a form that works.
* **One error family.** Every ``mfscore.errors`` class is an ``MfscoreError`` and the built-in a caller catches
  (``ValueError``; ``FileNotFoundError`` for a missing file), with ``str()``, ``args``, ``sentence()`` and
  pickling as before; a missing input file reaches ``score``'s caller as a ``FileNotFoundError``.
* **Discoverability.** ``dir(mfscore)`` lists the lazy names without importing them; ``Results.to_json(text=True)``;
  docs/results.md documents ``Results``' methods and its examples run; ``mfscore.sample_data`` names its
  generators; docs/api.md's "Errors" and "Sample data" examples run.
"""

from __future__ import annotations

import ast
import doctest
import inspect
import os
import pickle
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mfscore
from mfscore import errors
from mfscore.api import score
from mfscore.cli.main import main
from mfscore.results import Results
from mfscore.sample_data.detection import generate_detection_dataset

DOCS = Path(__file__).resolve().parents[2] / "docs"
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


class Where(os.PathLike):
    """A path that is neither ``str`` nor ``pathlib``: only the ``os.PathLike`` protocol."""

    def __init__(self, path):
        self.path = os.fspath(path)

    def __fspath__(self) -> str:
        return self.path


@pytest.fixture(scope="module")
def detection_data(tmp_path_factory):
    return generate_detection_dataset(tmp_path_factory.mktemp("detection"), 300)


def _detection(data, **paths) -> dict:
    options = {"kind": "manipulation", "ref_dir": str(data.directory), "reference": data.reference,
               "index": data.index, "system": str(data.directory / data.system), "plot": {"enabled": False}}
    return {**options, **paths}


# ---- paths ------------------------------------------------------------------------------------------------------

def test_score_takes_path_objects_wherever_it_takes_a_path(detection_data, tmp_path):
    data = detection_data
    expected = score("detection", **_detection(data))
    with_paths = score("detection", out=tmp_path / "pathlib" / "run", **_detection(
        data, ref_dir=data.directory, reference=Path(data.reference), index=Path(data.index),
        system=data.directory / data.system))
    with_protocol = score("detection", out=Where(tmp_path / "protocol" / "run"), **_detection(
        data, ref_dir=Where(data.directory), reference=Where(data.reference),
        system=Where(data.directory / data.system)))
    assert with_paths.to_json() == with_protocol.to_json() == expected.to_json()
    assert (tmp_path / "pathlib" / "run_results.json").read_bytes() == expected.to_json()
    assert (tmp_path / "protocol" / "run_results.json").read_bytes() == expected.to_json()


def test_numpy_scalars_are_options_and_other_objects_are_refused_by_name(detection_data):
    data = detection_data
    as_numpy = score("detection", **_detection(data, scoring={"far_stop": np.float64(0.5), "ci": np.bool_(False)}))
    assert as_numpy == score("detection", **_detection(data, scoring={"far_stop": 0.5, "ci": False}))
    with pytest.raises(errors.OptionError, match=r"^the option scoring\.queries is a set: ") as refused:
        score("detection", **_detection(data, scoring={"queries": {"Purpose==['add']"}}))
    assert isinstance(refused.value, ValueError) and refused.value.option == "scoring.queries"


# ---- misplaced options ----------------------------------------------------------------------------------------

def _refusal(task: str, **options) -> errors.OptionError:
    with pytest.raises(errors.OptionError) as refused:
        score(task, **options)
    return refused.value


def test_a_nested_option_given_flat_is_refused_with_the_form_that_works(detection_data):
    data = detection_data
    error = _refusal("detection", **_detection(data), far_stop=0.5)
    assert str(error) == "far_stop is an option of scoring: scoring={'far_stop': 0.5}"
    assert error.option == "far_stop" and isinstance(error, ValueError)
    error = _refusal("detection", **_detection(data, scoring={"ci": False}), far_stop=0.5)
    assert str(error) == "far_stop is an option of scoring: scoring={'ci': False, 'far_stop': 0.5}"
    suggested = ast.literal_eval(str(error).split("scoring=", 1)[1])
    fixed = score("detection", **_detection(data, scoring=suggested))
    assert fixed == score("detection", **_detection(data, scoring={"far_stop": 0.5}))


def test_a_name_of_two_nested_options_names_both():
    error = _refusal("mask", ref_dir=".", reference="r.csv", index="i.csv", system="s.csv", mediscore_compat=True)
    assert str(error) == ("mediscore_compat is an option of scoring and of report: "
                          "scoring={'mediscore_compat': True} or report={'mediscore_compat': True}")


def test_unknown_and_top_level_names_keep_their_messages():
    common = {"kind": "manipulation", "ref_dir": ".", "reference": "r.csv", "index": "i.csv", "system": "s.csv"}
    assert str(_refusal("detection", **common, farstop=0.5)) == "there is no option farstop"
    kind = str(_refusal("detection", **{**common, "kind": "nonsense"}))
    assert kind.startswith("-t/--task 'nonsense': ") and kind.endswith("(option kind)")


# ---- one error family -----------------------------------------------------------------------------------------

# class -> (the built-ins it is, the built-ins it is not)
FAMILY = {
    errors.MfscoreError: ((Exception,), (ValueError, OSError)),
    errors.OptionError: ((ValueError,), (OSError,)),
    errors.QueryError: ((ValueError,), (OSError,)),
    errors.QueryOptionError: ((ValueError, errors.OptionError, errors.QueryError), (OSError,)),
    errors.InputFileError: ((ValueError,), (OSError,)),
    errors.ImageError: ((ValueError, errors.InputFileError), (OSError,)),
    errors.MissingFileError: ((FileNotFoundError, OSError, ValueError, errors.InputFileError), ()),
    errors.MissingImageError: ((FileNotFoundError, errors.ImageError, errors.MissingFileError), ()),
}


def test_every_error_class_is_in_the_table():
    defined = {obj for obj in vars(errors).values() if inspect.isclass(obj) and issubclass(obj, errors.MfscoreError)}
    assert defined == set(FAMILY)


@pytest.mark.parametrize("kind", FAMILY, ids=lambda kind: kind.__name__)
def test_each_error_is_the_builtin_a_caller_catches(kind):
    error = kind("bad", path="a.csv", line=3)
    is_, is_not = FAMILY[kind]
    assert isinstance(error, errors.MfscoreError)
    assert all(isinstance(error, base) for base in is_), [b for b in is_ if not isinstance(error, b)]
    assert not any(isinstance(error, base) for base in is_not), [b for b in is_not if isinstance(error, b)]


def test_a_ctrl_c_stays_a_keyboard_interrupt():
    interrupted = errors.Interrupted("no report was written")
    assert isinstance(interrupted, KeyboardInterrupt) and not isinstance(interrupted, Exception)
    assert str(interrupted) == interrupted.sentence() == "no report was written"


@pytest.mark.parametrize("kind", FAMILY, ids=lambda kind: kind.__name__)
def test_messages_args_and_pickling_are_unchanged(kind):
    error = kind("malformed table (expected 3 fields, saw 4)", path="dir/ref.csv", line=7)
    sentence = "dir/ref.csv, line 7: malformed table (expected 3 fields, saw 4)"
    assert (str(error), error.sentence(), error.args) == (sentence, sentence, (sentence,))
    assert repr(error) == f"{kind.__name__}({sentence!r})"
    assert str(kind("file not found", path="x.csv")) == "x.csv: file not found"
    assert str(kind("no path")) == "no path" and kind("no path").args == ("no path",)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is kind
    assert (str(copy), copy.args, copy.message, copy.path, copy.line) == (sentence, (sentence,), error.message,
                                                                           "dir/ref.csv", 7)


def test_option_errors_keep_their_fields():
    error = errors.OptionError("--farStop 2.0: a false-alarm rate is in [0, 1] (option far_stop)", option="far_stop",
                               flag="--farStop", reason="a false-alarm rate is in [0, 1]")
    assert str(error) == "--farStop 2.0: a false-alarm rate is in [0, 1] (option far_stop)"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.option, copy.flag, copy.reason, str(copy)) == (error.option, error.flag, error.reason, str(error))


def test_a_missing_file_error_reads_as_a_file_not_found_error():
    error = errors.MissingFileError("file not found", path="ref/x.csv")
    assert (error.errno, error.strerror, error.filename) == (2, os.strerror(2), "ref/x.csv")
    assert str(pickle.loads(pickle.dumps(error))) == "ref/x.csv: file not found"
    assert pickle.loads(pickle.dumps(error)).filename == "ref/x.csv"
    try:
        raise error
    except FileNotFoundError as caught:
        assert caught is error


def test_a_missing_input_file_reaches_the_caller_as_file_not_found(detection_data):
    data = detection_data
    missing = str(data.directory / "no-such-ref.csv")
    with pytest.raises(FileNotFoundError) as raised:
        score("detection", **_detection(data, reference="no-such-ref.csv"))
    assert isinstance(raised.value, errors.InputFileError) and raised.value.filename == missing
    assert str(raised.value) == f"{missing}: file not found"


def test_a_malformed_input_file_is_a_value_error_and_not_an_os_error(detection_data, tmp_path):
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError) as raised:
        score("detection", **_detection(detection_data, ref_dir=tmp_path, reference="empty.csv"))
    assert isinstance(raised.value, errors.InputFileError) and not isinstance(raised.value, OSError)
    assert str(raised.value) == f"{tmp_path / 'empty.csv'}: the file is empty (a header row is required)"


def test_the_command_prints_the_same_sentence(detection_data, capsys):
    data = detection_data
    status = main(["detection", "--refDir", str(data.directory), "-r", "no-such-ref.csv", "-x", data.index,
                   "-s", str(data.directory / data.system), "-o", str(data.directory / "out" / "run")])
    assert status == 1
    assert capsys.readouterr().err == f"mfscore: error: {data.directory / 'no-such-ref.csv'}: file not found\n"


# ---- discoverability ------------------------------------------------------------------------------------------

def test_dir_lists_the_lazy_names_without_importing_them():
    code = ("import sys, mfscore; names = dir(mfscore); "
            "print(sorted(n for n in names if not n.startswith('_')), '__version__' in names, "
            "'mfscore.api' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert shown == "['Results', 'score'] True False"
    assert mfscore.score is score and mfscore.Results is Results


def test_help_shows_the_lazy_names():
    import pydoc

    text = pydoc.render_doc(mfscore, renderer=pydoc.plaintext)
    assert "\n    score(task" in text and "class Results" in text


def test_to_json_as_text(detection_data):
    results = score("detection", **_detection(detection_data))
    as_bytes, as_text = results.to_json(), results.to_json(text=True)
    assert isinstance(as_bytes, bytes) and isinstance(as_text, str)
    assert as_text == as_bytes.decode()
    run = {"mfscore": mfscore.__version__}
    assert results.to_json(run, text=True) == results.to_json(run).decode()
    assert Results.from_json(as_text) == Results.from_json(as_bytes) == results


def _examples(text: str, name: str) -> tuple[int, int, str]:
    """Runs the ``>>>`` examples of Markdown ``text``, fence lines blanked (so an example's output ends there)."""
    text = re.sub(r"(?m)^```\w*$", "", text)
    test = doctest.DocTestParser().get_doctest(text, {}, name, name, 0)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = []
    runner.run(test, out=report.append)
    return runner.tries, runner.failures, "".join(report)


def _section(page: str, title: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    match = re.search(rf"(?ms)^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text)
    assert match, f"docs/{page} has no section '## {title}'"
    return match.group(1)


def test_results_md_documents_every_method_and_its_examples_run():
    section = _section("results.md", "In Python")
    public = [name for name, _ in inspect.getmembers(Results, callable) if not name.startswith("_")]
    assert public and all(f"`{name}(" in section or f"`Results.{name}(" in section for name in public), public
    tries, failed, report = _examples(section, "docs/results.md")
    assert tries >= 5 and failed == 0, report
    module = doctest.DocTestFinder().find(sys.modules[Results.__module__])
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    for test in module:
        runner.run(test)
    assert runner.tries >= 4 and runner.failures == 0


def test_sample_data_names_its_generators():
    import mfscore.sample_data as package

    doc = package.__doc__ or ""
    generators = []
    for module in pkgutil.iter_modules(package.__path__):
        loaded = __import__(f"{package.__name__}.{module.name}", fromlist=["_"])
        generators += [f"{module.name}.{name}" for name, obj in vars(loaded).items()
                       if inspect.isfunction(obj) and obj.__module__ == loaded.__name__
                       and re.match(r"(generate|sample)_\w*dataset$|example", name)]
    assert len(generators) >= 7 and all(name in doc for name in generators), [g for g in generators if g not in doc]
    assert "mfscore sample-data TASK DIR" in doc


def test_api_md_errors_section_names_every_class_and_its_examples_run():
    section = _section("api.md", "Errors")
    unnamed = [kind.__name__ for kind in FAMILY if f"`{kind.__name__}`" not in section]
    assert not unnamed, unnamed
    tries, failed, report = _examples(section, "docs/api.md Errors")
    assert tries >= 2 and failed == 0, report


def test_api_md_sample_data_examples_run():
    tries, failed, report = _examples(_section("api.md", "Sample data"), "docs/api.md Sample data")
    assert tries >= 5 and failed == 0, report
