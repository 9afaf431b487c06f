"""mfscore compare: two generated detection systems, B strictly better than A (its targets' scores raised), rank
B first, and the paired bootstrap equals a slow reference that loops over the same resamples; a mean metric's
paired test too; runs of another task or of other trials are refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mfscore import compare as core
from mfscore import leaderboard as lb
from mfscore.cli.compare import local_run
from mfscore.cli.main import main
from mfscore.errors import MfscoreError
from mfscore.formats.tables import read_table, write_table
from mfscore.sample_data.detection import generate_detection_dataset

RESAMPLES = 200


def _run(data, system: str, out) -> None:
    assert main(["detection", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", system, "-o", str(out / "run"), "--ci", "--outMeta",
                 "--quiet"]) == 0


def _better_system(data) -> str:
    """System B: A's scores with every target's raised by 0.15 (capped at 1): every target-nontarget pair A orders
    right stays right, so B's AUC is higher."""
    reference = read_table(data.directory / data.reference)
    targets = set(reference.loc[reference["IsTarget"] == "Y", "ProbeFileID"].astype(str))
    system = read_table(data.directory / data.system)
    raised = system["ProbeFileID"].astype(str).isin(targets)
    scores = pd.to_numeric(system["ConfidenceScore"])
    system["ConfidenceScore"] = np.where(raised, np.minimum(1.0, scores + 0.15), scores).round(4)
    name = "system/better.csv"
    write_table(system, data.directory / name)
    return name


@pytest.fixture(scope="module")
def two_systems(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    data = generate_detection_dataset(root / "data", 600)
    _run(data, data.system, root / "A")
    _run(data, _better_system(data), root / "B")
    return root


def _slow_auc(scores: np.ndarray, targets: np.ndarray) -> float:
    """The share of (target, nontarget) pairs the scores order right, ties a half: counted pair by pair."""
    positive, negative = scores[targets], scores[~targets]
    greater = np.greater.outer(positive, negative).sum()
    equal = np.equal.outer(positive, negative).sum()
    return float((greater + 0.5 * equal) / (positive.size * negative.size))


def _slow_paired(first, second, n: int, n_resamples: int, seed: int):
    """The paired bootstrap written out: ``first(trials)`` and ``second(trials)`` are the two systems' statistic
    over the trials at those indexes; the same draws (row b of integers(0, n, (B, n))), a plain loop."""
    draws = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    everything = np.arange(n)
    observed = first(everything) - second(everything)
    extreme = 0
    for b in range(n_resamples):
        replicate = first(draws[b]) - second(draws[b])
        if abs(replicate - observed) >= abs(observed):
            extreme += 1
    return observed, (1 + extreme) / (n_resamples + 1)


def test_the_better_system_ranks_first_and_its_paired_p_value_is_the_slow_references(two_systems, tmp_path):
    runs = [local_run(two_systems / "A"), local_run(two_systems / "B")]
    comparison = core.compare(runs, n_resamples=RESAMPLES)
    assert [line.label for line in comparison.board.ranking().lines] == ["B", "A"]
    (pair,) = comparison.paired
    assert (pair.kind, pair.better, pair.worse) == (core.ADJACENT, str(two_systems / "B"), str(two_systems / "A"))

    tables = {name: read_table(two_systems / name / "run_meta_scored.csv").drop_duplicates("ProbeFileID")
              .assign(ProbeFileID=lambda t: t["ProbeFileID"].astype(str)).sort_values("ProbeFileID")
              for name in ("A", "B")}
    targets = tables["A"]["IsTarget"].eq("Y").to_numpy()
    trials = {name: pd.to_numeric(t["ConfidenceScore"]).to_numpy() for name, t in tables.items()}
    observed, p_value = _slow_paired(lambda i: _slow_auc(trials["B"][i], targets[i]),
                                     lambda i: _slow_auc(trials["A"][i], targets[i]), targets.size, RESAMPLES, lb.SEED)
    test = pair.test
    assert test.trials == targets.size
    assert abs(test.difference - observed) <= 1e-12
    assert abs(test.p_value - p_value) <= 1e-12
    auc_a, auc_b = (runs[i].entry.results.primary_value() for i in (0, 1))
    assert abs(test.difference - (auc_b - auc_a)) <= 2e-6  # the reports round AUC to 6 digits
    assert test.difference > 0.02 and test.interval[0] > 0 and test.p_value <= 2 / (RESAMPLES + 1)


def test_the_paired_test_of_a_mean_is_the_slow_references():
    rng = np.random.default_rng(5)
    a = rng.normal(0.5, 0.2, 150)
    b = a - rng.normal(0.01, 0.05, 150)  # barely worse: a p-value neither 0 nor 1
    test = lb.paired_bootstrap(a, b, n_resamples=RESAMPLES, seed=11)
    observed, p_value = _slow_paired(lambda i: float(np.mean(a[i])), lambda i: float(np.mean(b[i])), a.size,
                                     RESAMPLES, 11)
    assert abs(test.difference - observed) <= 1e-12
    assert abs(test.p_value - p_value) <= 1e-12
    assert 2 / (RESAMPLES + 1) < test.p_value < 1


def test_auc_of_positions_is_the_pair_count():
    rng = np.random.default_rng(3)
    scores = np.round(rng.random(80), 1)  # many ties
    targets = rng.random(80) < 0.4
    statistic = core.AucAt(scores, targets)
    rows = rng.integers(0, 80, size=(5, 80))
    assert np.allclose(statistic(rows.astype(float)), [_slow_auc(scores[r], targets[r]) for r in rows], atol=1e-12)


def test_the_files_are_the_same_bytes_twice(two_systems, tmp_path):
    runs = [local_run(two_systems / name) for name in ("A", "B")]
    first = core.write_comparison(core.compare(runs, n_resamples=RESAMPLES), tmp_path / "one")
    second = core.write_comparison(core.compare(runs, n_resamples=RESAMPLES), tmp_path / "two")
    assert [p.name for p in first] == ["leaderboard.csv", "leaderboard.json", "paired.csv", "queries.csv", "roc.png",
                                       "det.png", "compare.html"]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second))
    paired = read_table(tmp_path / "one" / "paired.csv")
    assert list(paired["Better"]) == ["B"] and float(paired["PValue"][0]) < 0.05


def test_the_command_writes_the_comparison(two_systems, tmp_path, capsys):
    assert main(["compare", str(two_systems / "A"), str(two_systems / "B"), "--out", str(tmp_path / "c"),
                 "--resamples", str(RESAMPLES)]) == 0
    printed = capsys.readouterr().out
    assert "adjacent: B vs A: difference" in printed
    board = lb.from_json((tmp_path / "c" / "leaderboard.json").read_bytes())
    assert [line.label for line in board.ranking().lines] == ["B", "A"]


def test_runs_of_other_trials_are_refused(two_systems, tmp_path):
    data = generate_detection_dataset(tmp_path / "other", 500, seed=7)
    _run(data, data.system, tmp_path / "C")
    with pytest.raises(core.CompareError, match="scored on different trials"):
        core.compare([local_run(two_systems / "A"), local_run(tmp_path / "C")])


def test_runs_of_other_tasks_are_refused(two_systems, tmp_path, capsys):
    from mfscore.sample_data.masks import generate_mask_dataset

    masks = generate_mask_dataset(tmp_path / "masks", 6)
    assert main(["mask", "--refDir", str(masks.directory), "-r", masks.reference, "-x", masks.index,
                 "-s", str(masks.directory / masks.system), "-oR", str(tmp_path / "M" / "run"), "--quiet"]) == 0
    assert main(["compare", str(two_systems / "A"), str(tmp_path / "M"), "--out", str(tmp_path / "c")]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "different tasks (detection:" in error[0] and "compare runs of one task" in error[0]
    assert not (tmp_path / "c").exists()
    with pytest.raises(MfscoreError):
        core.compare([local_run(two_systems / "A")])


def test_two_mask_systems_are_tested_on_their_per_probe_values(tmp_path):
    """System B is A with every other mask inverted: worse on those probes, the same on the rest."""
    import shutil

    import cv2

    from mfscore.sample_data.masks import generate_mask_dataset

    masks = generate_mask_dataset(tmp_path / "masks", 16)
    system = masks.directory / masks.system
    worse = system.parent.with_name("worse")
    shutil.copytree(system.parent, worse)
    for path in sorted((worse / "mask").glob("*.png"))[::2]:
        cv2.imwrite(str(path), 255 - cv2.imread(str(path), cv2.IMREAD_GRAYSCALE))
    for name, csv_file in (("A", system), ("B", worse / system.name)):
        assert main(["mask", "--refDir", str(masks.directory), "-r", masks.reference, "-x", masks.index,
                     "-s", str(csv_file), "-oR", str(tmp_path / name / "run"), "--precision", "12", "--quiet"]) == 0
    comparison = core.compare([local_run(tmp_path / "B"), local_run(tmp_path / "A")], n_resamples=RESAMPLES)
    assert [line.label for line in comparison.board.ranking().lines] == ["A", "B"]
    (pair,) = comparison.paired
    values = {}
    for name in ("A", "B"):
        table = read_table(tmp_path / name / "run_mask_scores_perimage.csv")
        table = table[table["Scored"] == "Y"].assign(ProbeFileID=lambda t: t["ProbeFileID"].astype(str))
        values[name] = pd.to_numeric(table.set_index("ProbeFileID")["OptimumMCC"]).sort_index()
    assert list(values["A"].index) == list(values["B"].index)
    a, b = values["A"].to_numpy(), values["B"].to_numpy()
    observed, p_value = _slow_paired(lambda i: float(np.mean(a[i])), lambda i: float(np.mean(b[i])), a.size,
                                     RESAMPLES, lb.SEED)
    assert pair.test.trials == a.size
    assert abs(pair.test.difference - observed) <= 1e-12 and abs(pair.test.p_value - p_value) <= 1e-12
    assert pair.test.difference > 0.1 and pair.test.interval[0] > 0
