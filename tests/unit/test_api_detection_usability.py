"""What a data scientist meets first in the detection API (issue 45 items 4 to 6), one test or more an item.

* ``DetectionScores`` has a repr saying what it holds.
* ``import mfscore.api`` (and the detection functions) loads no pandas, OpenCV, ``scipy.optimize`` or matplotlib,
  in a fresh interpreter; every exported name still resolves and ``dir`` lists them.
* ``bootstrap_intervals`` gives exactly the intervals of the command line's path (its replicates in slices,
  joined), on the same trials.
* ``mfscore --help`` and ``--version`` import no command module, and the help is the full parser's, byte for byte.
* ``sample_weight`` agrees with scikit-learn's weighted ROC (within 1e-12; its points exactly), and integer
  weights with repeated trials; ``drop_intermediate`` gives scikit-learn's points; an ``(n, 1)`` column is read
  with a ``DataConversionWarning`` pointing at the caller's line.
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score as sk_roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

import mfscore.api
from mfscore.api import (
    DataConversionWarning,
    DetectionScores,
    bootstrap_intervals,
    cdr_at_far_score,
    eer_error,
    partial_auc_score,
    pd_at_far_score,
    roc_auc_score,
    roc_curve,
)

HEAVY = ("pandas", "cv2", "scipy.optimize", "matplotlib")


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    runner = f"import sys\n{code}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


# ---- item 4: the repr ---------------------------------------------------------------------------

def test_repr_says_trials_classes_updates_and_shards():
    left = DetectionScores().update([0, 1, 1], [0.1, 0.5, 0.9]).update(["N"], [0.3])
    right = DetectionScores().update([True, False], [0.7, 0.2])
    assert repr(DetectionScores()) == "DetectionScores(n_trials=0, n_target=0, n_nontarget=0, n_updates=0, n_shards=1)"
    assert repr(left) == "DetectionScores(n_trials=4, n_target=2, n_nontarget=2, n_updates=2, n_shards=1)"
    assert repr(left.merge(right).merge(DetectionScores())) == (
        "DetectionScores(n_trials=6, n_target=3, n_nontarget=3, n_updates=3, n_shards=3)")


# ---- item 5: import time, bootstrap path, --help ------------------------------------------------

@pytest.mark.parametrize("code", ["import mfscore.api",
                                  "from mfscore.api import roc_auc_score, DetectionScores, bootstrap_intervals"])
def test_import_loads_no_heavy_module(code):
    loaded = loaded_after(code)
    assert "numpy" in loaded or code == "import mfscore.api"  # the runner saw the import happen
    assert not [name for name in HEAVY if name in loaded], f"{code!r} loaded {[n for n in HEAVY if n in loaded]}"


def test_a_function_that_needs_scipy_still_loads_it():
    loaded = loaded_after("from mfscore.api import min_cllr_loss\nmin_cllr_loss([0, 1], [0.0, 1.0])")
    assert "scipy.optimize" in loaded


def test_every_exported_name_resolves_and_dir_lists_it():
    assert set(mfscore.api.__all__) <= set(dir(mfscore.api))
    for name in mfscore.api.__all__:
        assert getattr(mfscore.api, name).__name__ == name
    with pytest.raises(AttributeError, match="no_such_metric"):
        mfscore.api.no_such_metric  # noqa: B018


def test_bootstrap_intervals_are_the_command_lines(tmp_path, monkeypatch):
    import mfscore.tasks.detection as task
    from mfscore.sample_data.detection import generate_detection_dataset

    data = generate_detection_dataset(tmp_path / "data", 300, seed=45)
    monkeypatch.setattr(task, "SLICE_WORK", 300 * 70)  # several jobs of replicates, as 10^6 trials make
    assert len(task.slices(300, True)) >= 7
    found = mfscore.api.score("detection", kind="manipulation", ref_dir=str(data.directory), reference=data.reference,
                              index=data.index, system=str(data.directory / data.system), scoring={"ci": True})
    reference = pd.read_csv(data.directory / data.reference, sep="|")
    system = pd.read_csv(data.directory / data.system, sep="|")
    trials = reference.merge(system, on="ProbeFileID", how="left")  # the command line's order: the reference's rows
    api = bootstrap_intervals(trials["IsTarget"], trials["ConfidenceScore"])
    cli = found.row().intervals
    assert (cli["AUC"], cli["AUC@FAR"], cli["CDR@FAR"]) == (api.auc, api.partial_auc, api.cdr)


def test_help_and_version_import_no_command_module():
    runner = ("import sys\nfrom mfscore.cli.main import main\nfor argv in (['--help'], ['--version'], []):\n"
              "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
              "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, check=True)
    loaded = set(done.stderr.split())
    commands = sorted(name for name in loaded if name.startswith("mfscore.services.commands.")
                      or (name.startswith("mfscore.cli.") and name != "mfscore.cli.main"))
    assert "mfscore.cli.main" in loaded and "usage: mfscore" in done.stdout
    assert not commands, f"mfscore --help/--version imported command modules: {commands}"


@pytest.mark.parametrize("columns", ["80", "120", "50"])
def test_help_without_commands_is_the_full_parsers(columns, monkeypatch):
    from mfscore.cli.main import build_parser, summary_parser

    monkeypatch.setenv("COLUMNS", columns)
    assert summary_parser().format_help() == build_parser().format_help()
    assert summary_parser(["--help"]).format_help() == build_parser(["--help"]).format_help()


# ---- item 6: sample_weight, drop_intermediate, column vectors ----------------------------------

def weighted_trials(seed: int, n: int = 400):
    """Labels, tied scores, and weights of which some are zero."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(y * 0.8, 1.0), 1)
    w = rng.exponential(1.0, n) * (rng.random(n) > 0.1)
    return y, s, w


def without_origin(fpr, tpr, thresholds, top):
    """The points after a prepended origin (its threshold above every score), as arrays."""
    cut = 1 if thresholds[0] > top else 0
    return fpr[cut:], tpr[cut:], thresholds[cut:]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("drop", [True, False])
def test_weighted_roc_curve_is_sklearns(seed, drop):
    y, s, w = weighted_trials(seed)
    ours = without_origin(*roc_curve(y, s, sample_weight=w, drop_intermediate=drop), s.max())
    theirs = without_origin(*sk_roc_curve(y, s, sample_weight=w, drop_intermediate=drop), s.max())
    for mine, sk in zip(ours, theirs):
        np.testing.assert_array_equal(mine, sk)


@pytest.mark.parametrize("seed", range(5))
def test_unweighted_drop_intermediate_is_sklearns(seed):
    rng = np.random.default_rng(seed)
    y, s = rng.integers(0, 2, 300), np.round(rng.normal(size=300), 1)
    for drop in (True, False):
        ours = without_origin(*roc_curve(y, s, drop_intermediate=drop), s.max())
        theirs = without_origin(*sk_roc_curve(y, s, drop_intermediate=drop), s.max())
        for mine, sk in zip(ours, theirs):
            np.testing.assert_array_equal(mine, sk)
    assert roc_curve(y, s, drop_intermediate=False)[0].size > roc_curve(y, s)[0].size


@pytest.mark.parametrize("seed", range(5))
def test_weighted_metrics_agree_with_sklearns_curve(seed):
    y, s, w = weighted_trials(seed)
    fpr, tpr, _ = sk_roc_curve(y, s, sample_weight=w)
    assert abs(roc_auc_score(y, s, sample_weight=w) - sk_roc_auc_score(y, s, sample_weight=w)) < 1e-12
    gap = np.abs(fpr - (1 - tpr))
    j = int(np.argmin(gap))
    assert abs(eer_error(y, s, sample_weight=w) - (fpr[j] + 1 - tpr[j]) / 2) < 1e-12
    last = np.flatnonzero(fpr <= 0.1)[-1]
    expected_pauc = np.sum(np.diff(fpr[:last + 1]) * (tpr[1:last + 1] + tpr[:last]) / 2)
    assert abs(partial_auc_score(y, s, sample_weight=w) - expected_pauc) < 1e-12
    assert abs(cdr_at_far_score(y, s, far=0.1, sample_weight=w) - np.interp(0.1, fpr, tpr)) < 1e-12
    assert abs(pd_at_far_score(y, s, far=0.1, sample_weight=w) - np.interp(0.1, fpr, tpr)) < 1e-12
    all_fpr, all_tpr, _ = sk_roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    step = pd_at_far_score(y, s, far=0.1, method="step", sample_weight=w)
    assert step == all_tpr[all_fpr <= 0.1].max()


@pytest.mark.parametrize("seed", range(3))
def test_integer_weights_are_repeated_trials(seed):
    rng = np.random.default_rng(seed)
    y, s, k = rng.integers(0, 2, 200), np.round(rng.normal(size=200), 1), rng.integers(0, 4, 200)
    repeated = np.repeat(y, k), np.repeat(s, k)
    for metric, options in ((roc_auc_score, {}), (eer_error, {}), (partial_auc_score, {"max_far": 0.2}),
                            (cdr_at_far_score, {"far": 0.15}), (pd_at_far_score, {"far": 0.1, "method": "step"})):
        assert abs(metric(y, s, sample_weight=k, **options) - metric(*repeated, **options)) < 1e-12, metric.__name__


def test_unit_weights_change_nothing():
    y, s, _ = weighted_trials(7)
    ones = np.ones(y.size)
    assert roc_auc_score(y, s, sample_weight=ones) == roc_auc_score(y, s)
    assert eer_error(y, s, sample_weight=ones) == eer_error(y, s)
    for mine, plain in zip(roc_curve(y, s, sample_weight=ones), roc_curve(y, s)):
        np.testing.assert_array_equal(mine, plain)


@pytest.mark.parametrize("weights, words", [
    ([1.0, -1.0, 1.0, 1.0], "sample_weight must not be negative"),
    ([1.0, np.nan, 1.0, 1.0], "sample_weight must be finite"),
    ([1.0, 1.0, 1.0], "differ in length"),
    ([0.0, 0.0, 1.0, 1.0], "sample_weight gives the non-targets no weight"),
    ([[1.0, 1.0], [1.0, 1.0]], "sample_weight must be 1-D"),
])
def test_bad_weights_are_a_value_error_naming_sample_weight(weights, words):
    with pytest.raises(ValueError, match=words):
        roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], sample_weight=weights)


def test_drop_intermediate_must_be_a_bool():
    with pytest.raises(ValueError, match="drop_intermediate"):
        roc_curve([0, 1], [0.1, 0.2], drop_intermediate="no")


@pytest.mark.parametrize("argument", ["y_true", "y_score", "sample_weight"])
def test_a_column_vector_is_read_with_a_warning_at_the_callers_line(argument):
    y, s, w = weighted_trials(3, n=50)
    inputs = {"y_true": y, "y_score": s, "sample_weight": w}
    inputs[argument] = inputs[argument].reshape(-1, 1)
    with pytest.warns(DataConversionWarning, match=f"{argument} is a column vector of shape \\(50, 1\\)") as caught:
        value = roc_auc_score(**inputs)
    assert caught[0].filename == __file__
    assert issubclass(DataConversionWarning, UserWarning)
    assert value == roc_auc_score(y, s, sample_weight=w)


def test_a_column_vector_in_update_warns_too_and_other_2d_shapes_still_fail():
    with pytest.warns(DataConversionWarning):
        scores = DetectionScores().update(np.array([[0], [1]]), [0.2, 0.7])
    assert scores.n_trials == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="y_score must be 1-D"):
            roc_auc_score([0, 1], [[0.1, 0.2], [0.3, 0.4]])


def test_api_md_detection_examples_run():
    import doctest
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    heading = "\n## Detection: weights, the ROC's points, column vectors\n"
    assert heading in text
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL))
    test = doctest.DocTestParser().get_doctest(code, {}, "docs/api.md Detection", "docs/api.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    runner.run(test, out=report.append)
    assert runner.tries >= 8 and runner.failures == 0, "".join(report)
