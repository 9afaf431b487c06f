"""Property tests of the detection pipeline pieces (hypothesis).

* ``detection_metrics`` does not depend on row order (the ROC is built from integer counts per
  tied-score group, so the values are identical, not just close: compared exactly, types included).
* The detection task's jobs (plan on a table: a subset's metrics and slices of its bootstrap replicates, of
  every slicing; ``TASK.score`` in any order, with or without the generator states a process keeps) and their
  records, folded in shards (any shard order, repeats collapse, conflicts raise, ``mfscore.records.fold``),
  give exactly the metrics of the full table, bootstrap intervals included, and the report of one job per
  subset; a record that is not its job's, or a job that could not read its file, stops the report.
* ``join`` equals ``DataFrame.merge(how, on, sort=False)``, dtypes included, by each lookup it can be given;
  ``unique_key`` finds the first key column without a repeat, and the key check built on it warns and refuses
  exactly as ``DataFrame.duplicated`` says.
* ``trial_response_rate`` rounds half away from zero to 2 decimals (docs/detection.md §4).

No tolerances: every comparison here is exact.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import tempfile
import uuid
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exact import identical
from mfscore.detection import bootstrap
from mfscore.detection.bootstrap import N_RESAMPLES
from mfscore.detection.metrics import detection_metrics
from mfscore.detection.options import PlotOptions
from mfscore.detection.roc import SortedTrials
from mfscore.detection.scorer import DetectionOptions, in_subset_order, subset_result
from mfscore.detection.trials import _check_keys, trial_response_rate
from mfscore.errors import InputFileError, MfscoreError
from mfscore.formats.joins import join, unique_key
from mfscore.formats.tables import write_table
from mfscore.records import JobKey, Problem, RecordConflictError, complete, decode_outcome, encode_outcome, fold
from mfscore.run.local import report_into, write_generated
from mfscore.tasks import detection
from mfscore.tasks.base import with_generated
from mfscore.tasks.detection import TASK, assembled
from output_files import tree

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])



def assert_same_metrics(m1, m2):
    assert (m1.n_target, m1.n_nontarget) == (m2.n_target, m2.n_nontarget)
    for name in ("auc", "eer", "partial_auc", "cdr"):
        assert identical(getattr(m1, name), getattr(m2, name)), (name, getattr(m1, name), getattr(m2, name))
    if m1.roc is None or m2.roc is None:
        assert m1.roc is None and m2.roc is None
    else:
        for arr in ("fpr", "tpr", "thresholds"):
            np.testing.assert_array_equal(getattr(m1.roc, arr), getattr(m2.roc, arr))
    assert (m1.intervals is None) == (m2.intervals is None)
    if m1.intervals is not None:
        for f in ("auc", "partial_auc", "cdr"):
            for bound in ("lower", "upper"):
                a = getattr(getattr(m1.intervals, f), bound)
                b = getattr(getattr(m2.intervals, f), bound)
                assert identical(a, b), (f, bound, a, b)


# --- permutation invariance ----------------------------------------------------------------------

score_values = st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0, -0.3])
trial_rows = st.lists(st.tuples(score_values, st.booleans()), min_size=0, max_size=60)


@FAST
@given(rows=trial_rows, far_stop=st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5, 1.0]), data=st.data())
def test_metrics_invariant_to_row_order(rows, far_stop, data):
    scores = np.array([s for s, _ in rows], dtype=np.float64)
    labels = np.array([int(t) for _, t in rows], dtype=np.int64)
    perm = np.array(data.draw(st.permutations(list(range(len(rows))))), dtype=np.intp)
    m1 = detection_metrics(scores, labels, far_stop=far_stop)
    m2 = detection_metrics(scores[perm], labels[perm], far_stop=far_stop)
    assert_same_metrics(m1, m2)
    assert m1.n_target == int(labels.sum()) and m1.n_trials == len(rows)


# --- record shards: the detection task's plan, score, fold and report --------------------------

@st.composite
def scored_tables(draw, max_rows=40):
    n = draw(st.integers(1, max_rows))
    scores = draw(st.lists(score_values, min_size=n, max_size=n))
    targets = draw(st.lists(st.sampled_from(["Y", "N", ""]), min_size=n, max_size=n))
    statuses = draw(st.lists(st.sampled_from(["Processed", "OptOutAll", None]), min_size=n, max_size=n))
    ids = draw(st.permutations([f"P{i:03d}" for i in range(n)]))  # unique trial keys, not in row order
    return pd.DataFrame({"ProbeFileID": pd.Series(ids, dtype="str"), "ConfidenceScore": scores,
                         "IsTarget": pd.Series(targets, dtype="str"), "ProbeStatus": statuses})


@contextlib.contextmanager
def planned(table: pd.DataFrame, slice_work: int = detection.SLICE_WORK, *, ci: bool = False,
            semafor: bool = False):
    """The detection task's plan of ``table`` (written as reference, index and system output, in its row
    order), with bootstrap slices of at most ``slice_work`` trial-replicates; yields (plan, the directory the
    files are in, the directory the plan's own files are in)."""
    with tempfile.TemporaryDirectory() as directory, mock.patch.object(detection, "SLICE_WORK", slice_work):
        root = Path(directory)
        write_table(table[["ProbeFileID", "IsTarget"]], root / "ref.csv")
        write_table(table[["ProbeFileID"]], root / "index.csv")
        write_table(table[["ProbeFileID", "ConfidenceScore", "ProbeStatus"]], root / "sys.csv")
        options = detection.Options(kind="manipulation", ref_dir=str(root), reference="ref.csv", index="index.csv",
                                    system=str(root / "sys.csv"), scoring=DetectionOptions(ci=ci, semafor=semafor),
                                    plot=PlotOptions(enabled=False))
        plan = TASK.plan(options)
        write_generated(plan.generated, root / "generated")
        yield plan, root, root / "generated"


def deliveries(plan, generated: Path) -> list[tuple]:
    """Each job's (key, outcome), scored by the task reading the plan's files where a runner put them."""
    return [(job.key, TASK.score(with_generated(TASK, job.work, plan.generated, str(generated)))) for job in plan.jobs]


def over_the_wire(outcome):
    """The outcome as another process receives it (a copy, equal by value)."""
    return decode_outcome(TASK.record_type, encode_outcome(outcome))


def split(items: list, k: int, data) -> list[list]:
    assign = data.draw(st.lists(st.integers(0, k - 1), min_size=len(items), max_size=len(items)))
    return [[item for item, j in zip(items, assign) if j == shard] for shard in range(k)]


def report(plan, outcomes: dict, root: Path) -> tuple:
    out = root / f"out-{uuid.uuid4().hex}"
    lines = report_into(TASK, plan, outcomes, str(out / "x"))
    return tree(out), lines.stdout, lines.stderr, lines.status


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 99_999, 100_001, 10**6, 10**7])
def test_a_subset_s_replicates_are_sliced_evenly_and_whole(n):
    for ci in (False, True):
        parts = detection.slices(n, ci)
        if not ci or n == 0:
            assert parts == [(0, 0)]
            continue
        assert [first for first, _ in parts] == [0, *np.cumsum([c for _, c in parts])[:-1].tolist()]
        assert sum(c for _, c in parts) == N_RESAMPLES and max(c for _, c in parts) - min(c for _, c in parts) <= 1
        assert max(c for _, c in parts) * n <= detection.SLICE_WORK or len(parts) == N_RESAMPLES
        assert len(parts) == min(N_RESAMPLES, math.ceil(n * N_RESAMPLES / detection.SLICE_WORK))
        many = detection.slices(n, ci, values=4 + 2 * 60 + 3)  # --semafor with 60 --far rates
        assert max(c for _, c in many) * (4 + 2 * 60 + 3) <= detection.MAX_RECORD_VALUES and len(many) >= len(parts)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=scored_tables(), slice_work=st.sampled_from([1, 137, 2000, 7919, 10**9]), k=st.integers(1, 5),
       semafor=st.booleans(), data=st.data())
def test_shards_fold_to_the_unsliced_metrics_and_report(table, slice_work, k, semafor, data):
    """Slices scored in any process order (the generator states a process keeps dropped or not), folded in shards
    in any order with repeats off the wire, report exactly what one job per subset reports."""
    with planned(table, slice_work, ci=True, semafor=semafor) as (plan, root, generated):
        if data.draw(st.booleans()):
            bootstrap._states.clear()
        order = data.draw(st.permutations(list(range(len(plan.jobs)))))
        scored = dict(deliveries(type(plan)(**{**vars(plan), "jobs": [plan.jobs[i] for i in order]}), generated))
        scored = [(job.key, scored[job.key]) for job in plan.jobs]
        assert [o.metrics is not None for _, o in scored] == [job.key.ordinal == 0 for job in plan.jobs]
        shards = split(scored, k, data)
        delivered = [shards[j] for j in data.draw(st.permutations(list(range(k))))]
        if data.draw(st.booleans()):  # one shard delivered twice, as copies off the wire
            delivered.append([(key, over_the_wire(o)) for key, o in shards[data.draw(st.integers(0, k - 1))]])
        folded = {}
        for shard in delivered:
            fold(shard, into=folded)
        in_order = fold(scored)
        assert sorted(folded) == sorted(in_order) == sorted(job.key for job in plan.jobs)
        assert {key: encode_outcome(o) for key, o in folded.items()} == \
            {key: encode_outcome(o) for key, o in in_order.items()}
        got = report(plan, folded, root)
        assert got[0] and got == report(plan, in_order, root)

        scores = table["ConfidenceScore"].to_numpy(dtype=np.float64)
        labels = (table["IsTarget"] == "Y").to_numpy(dtype=np.int64)
        whole = detection_metrics(scores, labels, far_stop=0.1, ci=True)
        (subset, trials, (point, replicates)), = zip(plan.prepared.subsets, plan.prepared.trials, assembled(plan, folded))
        assert_same_metrics(subset_result(subset, len(table), trials, point, replicates, plan.options.scoring).metrics,
                            whole)
    with planned(table, 10**9, ci=True, semafor=semafor) as (unsliced, root, generated):
        assert len(unsliced.jobs) == 1
        assert report(unsliced, fold(deliveries(unsliced, generated)), root) == got


def test_fold_is_idempotent_and_order_free_on_a_fixed_example():
    table = pd.DataFrame({"ProbeFileID": ["c", "a", "b", "d"], "ConfidenceScore": [0.2, 0.9, 0.2, 0.1],
                          "IsTarget": ["Y", "N", "Y", "N"], "ProbeStatus": [None] * 4})
    with planned(table, 4 * 250, ci=True) as (plan, root, generated):
        assert [job.key for job in plan.jobs] == [JobKey(0, "subset", 0), JobKey(0, "subset", 250)]
        assert [(job.work.metrics, job.work.first, job.work.count, TASK.trials(job.work)) for job in plan.jobs] == \
            [(True, 0, 250, 2), (False, 250, 250, 2)]
        scored = deliveries(plan, generated)
        first, second = scored
        assert first[1].replicates.first == 0 and second[1].replicates.first == 250 and second[1].metrics is None
        folded = fold([second, (first[0], over_the_wire(first[1])), second, first,
                       (second[0], over_the_wire(second[1]))])
        assert list(complete(folded, (job.key for job in plan.jobs))) == [first[0], second[0]]
        assert report(plan, folded, root) == report(plan, fold(scored), root)


def other(value) -> float:
    """A value unlike ``value`` (NaN included)."""
    return 2.0 if value != 2.0 else 3.0


@settings(max_examples=30, deadline=None)
@given(table=scored_tables(max_rows=15), which=st.sampled_from(["auc", "eer", "both_classes", "cdr"]),
       data=st.data())
def test_conflicting_records_raise(table, which, data):
    with planned(table, 2 * 15, ci=True) as (plan, _, generated):
        scored = deliveries(plan, generated)
        j = data.draw(st.integers(0, len(scored) - 1))
        key, record = scored[j]
        if which == "eer":
            if record.metrics is None:
                return
            altered = dataclasses.replace(record, metrics=dataclasses.replace(record.metrics,
                                                                              eer=other(record.metrics.eer)))
        else:
            values = list(getattr(record.replicates, which))
            i = data.draw(st.integers(0, len(values) - 1))
            values[i] = (not values[i]) if which == "both_classes" else other(values[i])
            altered = dataclasses.replace(record, replicates=dataclasses.replace(record.replicates,
                                                                                 **{which: tuple(values)}))
        pair = data.draw(st.permutations([(key, record), (key, altered)]))
        with pytest.raises(RecordConflictError, match=str(key)):
            fold(scored[:j] + pair + scored[j + 1:])


def test_a_record_that_is_not_its_job_s_and_a_job_that_cannot_read_its_file_stop_the_report():
    table = pd.DataFrame({"ProbeFileID": ["c", "a", "b", "d"], "ConfidenceScore": [0.2, 0.9, 0.2, 0.1],
                          "IsTarget": ["Y", "N", "Y", "N"], "ProbeStatus": [None] * 4})
    with planned(table, 4 * 250, ci=True) as (plan, root, generated):
        (first_key, first), (second_key, second) = deliveries(plan, generated)
        with pytest.raises(RecordConflictError, match="is not what the job computes"):
            report(plan, {first_key: first, second_key: first}, root)
        missing = TASK.score(plan.jobs[1].work)  # its file where no runner put it
        assert isinstance(missing, Problem) and missing.fatal and "planned/detection/subset-0.npy" in missing.message
        with pytest.raises(MfscoreError, match="cannot be read"):
            report(plan, {first_key: first, second_key: missing}, root)
        assert not list(root.glob("out-*/*"))  # nothing written


# --- join vs merge -------------------------------------------------------------------------------

KEY_KINDS = {
    "str": (["a", "b", "c", "d", None], "str"),
    "float": ([1.0, 2.0, 3.5, float("nan")], "float64"),
    "int": ([1, 2, 3, 4], "int64"),
}


def key_column(values, kind):
    return pd.Series(values, dtype=KEY_KINDS[kind][1])


@st.composite
def join_cases(draw):
    n_keys = draw(st.integers(1, 3))
    kinds = [draw(st.sampled_from(sorted(KEY_KINDS))) for _ in range(n_keys)]
    keys = [f"k{i}" for i in range(n_keys)]
    alphabet = [st.sampled_from(KEY_KINDS[kind][0]) for kind in kinds]
    key_tuple = st.tuples(*alphabet)

    right_shape = draw(st.sampled_from(["unique_tuples", "unique_first", "repeated"]))
    if right_shape == "unique_tuples":
        right_keys = draw(st.lists(key_tuple, max_size=12, unique_by=lambda t: tuple(repr(v) for v in t)))
    elif right_shape == "unique_first":  # first key column unique: the fast path with a per-column check
        firsts = draw(st.lists(alphabet[0], max_size=len(KEY_KINDS[kinds[0]][0]), unique_by=repr))
        rest = [draw(st.tuples(*alphabet[1:])) for _ in firsts]
        right_keys = [(f, *r) for f, r in zip(firsts, rest)]
    else:
        right_keys = draw(st.lists(key_tuple, max_size=12))
    if right_keys and draw(st.booleans()):  # the right's keys in its order (an index and its reference), some changed
        left_keys = [draw(st.one_of(st.just(keys_), key_tuple)) if draw(st.integers(0, 4)) == 0 else keys_
                     for keys_ in right_keys]
    else:  # some copied from the right's keys (matches), some random (may be missing on the right)
        left_keys = draw(st.lists(st.one_of(key_tuple, st.sampled_from(right_keys) if right_keys else key_tuple),
                                  max_size=15))

    def frame(rows, extra):
        cols = {k: key_column([r[i] for r in rows], kind) for i, (k, kind) in enumerate(zip(keys, kinds))}
        n = len(rows)
        cols.update({name: make(n) for name, make in extra.items()})
        return pd.DataFrame(cols)

    left = frame(left_keys, {"v": lambda n: np.arange(n, dtype=np.int64),
                             "u": lambda n: pd.Series([f"l{i}" for i in range(n)], dtype="str")})
    right_extra = {"w": lambda n: np.arange(n) % 2 == 0, "x": lambda n: np.arange(n, dtype=np.int64) * 10,
                   "y": lambda n: pd.Series([f"r{i}" if i % 3 else None for i in range(n)], dtype="str"),
                   "z": lambda n: np.linspace(0, 1, n)}
    if draw(st.booleans()):
        right_extra = {"x": right_extra["x"]}
    if draw(st.integers(0, 5)) == 0:  # a shared non-key column (merge adds suffixes)
        right_extra["v"] = lambda n: np.arange(n, dtype=np.int64)
    right = frame(right_keys, right_extra)
    # column order of the left: keys not necessarily first
    left = left[draw(st.permutations(list(left.columns)))]
    how = draw(st.sampled_from(["left", "inner"]))
    return left, right, keys, how


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=join_cases())
def test_join_equals_pandas_merge(case):
    left, right, keys, how = case
    expected = left.merge(right, how=how, on=keys, sort=False).reset_index(drop=True)
    got = join(left, right, keys, how).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected)  # dtypes included
    for lookup in (unique_key(right, keys), unique_key(right, keys, like=unique_key(left, keys))):
        pd.testing.assert_frame_equal(join(left, right, keys, how, lookup=lookup).reset_index(drop=True), expected)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=join_cases())
def test_unique_key_is_the_first_key_column_without_a_repeat(case):
    left, right, keys, _ = case
    expected = next((k for k in keys if not right[k].duplicated().any()), None)
    like = unique_key(left, keys)  # another table's: taken when it holds the same values in the same rows
    for lookup in (unique_key(right, keys), unique_key(right, keys, like=like)):
        if lookup is like and like is not None:
            assert not right[like.name].duplicated().any() and np.array_equal(like, right[like.name])
        else:
            assert (lookup.name if lookup is not None else None) == expected
            if lookup is not None:
                assert lookup.equals(pd.Index(right[expected]))


@pytest.mark.parametrize("repeat_at", [None, 1023, 1024, 2999])
def test_unique_key_looks_past_the_rows_it_checks_first(repeat_at):
    names = [f"p{i:05d}" for i in range(3000)]
    if repeat_at is not None:
        names[repeat_at] = names[0]
    frame = pd.DataFrame({"task": ["manipulation"] * 3000, "name": pd.Series(names, dtype="str"), "n": np.arange(3000)})
    assert unique_key(frame, ["task", "name", "n"]).name == ("name" if repeat_at is None else "n")


def _keys_checked_by_duplicated(frame, keys, warnings):
    """``_check_keys`` as it reads, on ``DataFrame.duplicated`` alone: the slow obvious reference."""
    same_key = frame.duplicated(subset=keys).to_numpy()
    repeated = frame.duplicated().to_numpy()
    if repeated.any():
        warnings.append(f"x: {int(repeated.sum())} line(s) repeat an earlier line exactly (first: line "
                        f"{int(np.flatnonzero(repeated)[0]) + 2}); each copy is scored, as MediScore does")
    conflicting = same_key & ~repeated
    if conflicting.any():
        pos = int(np.flatnonzero(conflicting)[0])
        raise InputFileError(f"duplicate trial key ({', '.join(f'{k}={frame.iloc[pos][k]}' for k in keys)}) "
                             "with different values; each trial must appear once", path="x", line=pos + 2)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=join_cases(), data=st.data())
def test_key_check_equals_the_duplicated_rule(case, data):
    _, right, keys, _ = case
    if len(right):  # some lines repeated verbatim
        copied = data.draw(st.lists(st.integers(0, len(right) - 1), max_size=3))
        right = pd.concat([right, right.iloc[copied]], ignore_index=True)
    outcomes = []
    like = unique_key(case[0], keys)
    for check in (lambda w: _check_keys(right, keys, Path("x"), "trial", w),
                  lambda w: _check_keys(right, keys, Path("x"), "trial", w, like=like),
                  lambda w: _keys_checked_by_duplicated(right, keys, w)):
        warnings: list[str] = []
        try:
            check(warnings)
            outcomes.append((warnings, None))
        except InputFileError as error:
            outcomes.append((warnings, str(error)))
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_join_nan_keys_match_nan_and_missing_rows():
    left = pd.DataFrame({"k": pd.Series(["a", None, "z"], dtype="str"), "v": [1, 2, 3]})
    right = pd.DataFrame({"k": pd.Series([None, "a", "q"], dtype="str"), "w": [10, 20, 30]})
    got = join(left, right, ["k"], "left")
    assert got["w"].tolist()[:2] == [20.0, 10.0] and math.isnan(got["w"].iloc[2])
    got = join(left, right, ["k"], "inner")
    assert got["v"].tolist() == [1, 2]


def test_join_keeps_string_dtype_when_nothing_matches():
    """Regression: the fast path used to return dtype object for a str column when no row matched."""
    left = pd.DataFrame({"k": pd.Series(["q", "z"], dtype="str"), "v": [1, 2]})
    right = pd.DataFrame({"k": pd.Series(["a", "b"], dtype="str"), "y": pd.Series(["x", "y"], dtype="str")})
    for how in ("left", "inner"):
        expected = left.merge(right, how=how, on=["k"], sort=False)
        got = join(left, right, ["k"], how)
        assert got["y"].dtype == expected["y"].dtype == right["y"].dtype
        pd.testing.assert_frame_equal(got, expected)


# --- TRR -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, total, expected", [
    (6, 7, 0.86), (4, 7, 0.57), (5, 7, 0.71), (3, 7, 0.43), (1, 8, 0.13), (7, 7, 1.0), (0, 7, 0.0),
    (1, 40, 0.03),   # 1/40 is stored as 0.025000000000000001387 -> 0.03
    (1, 200, 0.01),  # 1/200 is stored as 0.005000000000000000104 -> 0.01
])
def test_trial_response_rate(n, total, expected):
    got = trial_response_rate(n, total)
    assert type(got) is float and got == expected


def test_trial_response_rate_half_up_differs_from_python3_round():
    # 1/8 = 0.125 exactly: Python 3 round() gives 0.12 (half-even), Python 2 gave 0.13
    assert round(1 / 8, 2) == 0.12
    assert trial_response_rate(1, 8) == 0.13
    assert trial_response_rate(3, 8) == 0.38  # 0.375 exact -> 0.38
    assert trial_response_rate(5, 8) == 0.63  # 0.625 exact -> 0.63


def test_trial_response_rate_zero_total_is_nan():
    assert math.isnan(trial_response_rate(0, 0))


# --- the plan's trial files ----------------------------------------------------------------------

@FAST
@given(rows=trial_rows)
def test_a_subset_s_trial_file_reads_back_bit_for_bit(rows, tmp_path_factory):
    scores = np.array([s for s, _ in rows], dtype=np.float64)
    labels = np.array([int(t) for _, t in rows], dtype=np.int64)
    trials = SortedTrials.from_arrays(scores, labels)
    path = tmp_path_factory.mktemp("npy") / "trials.npy"
    path.write_bytes(trials.to_npy())
    back = SortedTrials.read_npy(str(path), len(rows))
    for name in ("scores", "labels", "order", "group_ends"):
        got, want = getattr(back, name), getattr(trials, name)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), name  # -0.0 stays -0.0
    assert [a.tobytes() for a in in_subset_order(back)] == [scores.tobytes(), labels.tobytes()]


def test_a_trial_file_of_another_shape_or_order_is_refused(tmp_path):
    trials = SortedTrials.from_arrays(np.array([0.5, 0.1, 0.9]), np.array([1, 0, 1]))
    path = tmp_path / "t.npy"
    path.write_bytes(trials.to_npy())
    with pytest.raises(ValueError, match="not 4 sorted trials"):
        SortedTrials.read_npy(str(path), 4)
    rows = np.load(path)
    rows["order"] = [0, 0, 2]
    np.save(path, rows)
    with pytest.raises(ValueError, match="not a permutation"):
        SortedTrials.read_npy(str(path), 3)
    np.save(path, np.arange(3.0))
    with pytest.raises(ValueError, match="not 3 sorted trials"):
        SortedTrials.read_npy(str(path), 3)
