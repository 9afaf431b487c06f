"""Comparing runs of one task on the same trials (docs/results.md "Comparing runs").

``compare(runs)`` ranks the runs with ``mfscore.leaderboard`` (the same board, intervals and order as ``mfscore
leaderboard``), and tests each adjacent pair of the whole run's ranking, and each run against the best, with the
paired bootstrap (``aligned`` + ``paired_bootstrap``) where both runs' per-trial values are known:

- **masks and the other tasks with per-trial records**: the primary metric's per-trial values (the mean of which
  is the row's value), ``Entry.trials``;
- **detection**: AUC is no mean over trials, so each trial's value is its position in one table of both systems'
  (score, target) pairs, and the statistic is the AUC of the resampled positions (``AucAt``): the same draws,
  the Mann-Whitney AUC with ties counted a half, which is the trapezoidal ROC area. The trials come from the run's
  ``--outMeta`` table (``<prefix>_meta_scored.csv``), used only when its AUC is the run's.

Runs of different tasks, or scored on different trials (different trial keys, or, where no run's keys are known,
different reference tables), are refused with one sentence. ``write_comparison`` writes the board (CSV, JSON), the
paired tests and the per-query table (CSV), the overlaid ROC and DET of detection runs (PNG) and one HTML page.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore import leaderboard as lb
from mfscore.errors import MfscoreError
from mfscore.results import ALL, Results

META_SCORED = "meta_scored.csv"  # detection's --outMeta table of the scored trials: <prefix>_meta_scored.csv
ADJACENT, VS_BEST = "adjacent", "vs best"


class CompareError(MfscoreError):
    """Runs that cannot be compared: of different tasks, or scored on different trials."""


@dataclass(frozen=True)
class Run:
    """A run to compare: its leaderboard entry; its trials (``keys``, where known); its per-trial values for the
    paired test (``values``: a Series keyed by trial for a mean metric; for detection a frame keyed by trial with
    columns ``target`` and ``score``); the SHA-256s of its reference tables (``ref/...``, from its provenance)."""

    entry: lb.Entry
    keys: frozenset | None = None
    values: pd.Series | pd.DataFrame | None = None
    reference: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Paired:
    """One paired test: ``better`` and ``worse`` are run ids in ranking order; ``test`` None with a ``note``
    saying why there is none."""

    kind: str
    better: str
    worse: str
    test: lb.PairedDifference | None
    note: str = ""


@dataclass(frozen=True)
class Comparison:
    board: lb.Leaderboard
    runs: tuple[Run, ...]
    paired: tuple[Paired, ...]


def compare(runs: Sequence[Run], *, metric: str | None = None, level: float = lb.LEVEL,
            n_resamples: int = lb.N_RESAMPLES, seed: int = lb.SEED, dataset: str = "local") -> Comparison:
    """Rank ``runs`` and test the pairs (module docstring); ``CompareError`` for runs that cannot be compared."""
    if len(runs) < 2:
        raise CompareError(f"a comparison needs at least two runs (given {len(runs)})")
    _check_same(runs)
    try:
        board = lb.leaderboard([run.entry for run in runs], dataset=dataset, task=runs[0].entry.results.task,
                               metric=metric, level=level, n_resamples=n_resamples, seed=seed)
    except ValueError as exc:
        raise CompareError(str(exc)) from None
    by_id = {run.entry.run: run for run in runs}
    order = [line.run for line in board.ranking(ALL).lines] if _has_all(board) else []
    pairs = [(ADJACENT, order[i], order[i + 1]) for i in range(len(order) - 1)]
    pairs += [(VS_BEST, order[0], other) for other in order[2:]]
    paired = tuple(_paired(kind, by_id[a], by_id[b], board.metric, level, n_resamples, seed) for kind, a, b in pairs)
    return Comparison(board, tuple(runs), paired)


def _has_all(board: lb.Leaderboard) -> bool:
    return any(ranking.query == ALL for ranking in board.rankings)


def _check_same(runs: Sequence[Run]) -> None:
    tasks = list(dict.fromkeys(run.entry.results.task for run in runs))
    if len(tasks) > 1:
        named = "; ".join(f"{task}: {', '.join(r.entry.run for r in runs if r.entry.results.task == task)}"
                          for task in tasks)
        raise CompareError(f"the runs are of different tasks ({named}); compare runs of one task")
    first = runs[0]
    for run in runs[1:]:
        if first.keys is not None and run.keys is not None and first.keys != run.keys:
            common = len(first.keys & run.keys)
            raise CompareError(f"runs {first.entry.run} and {run.entry.run} were scored on different trials "
                               f"({len(first.keys)} and {len(run.keys)} trials, {common} in common); compare runs "
                               "of the same trials")
        if first.reference and run.reference and first.reference != run.reference:
            raise CompareError(f"runs {first.entry.run} and {run.entry.run} were scored against different reference "
                               "tables (their provenance's SHA-256s differ); compare runs of the same trials")


def _paired(kind: str, better: Run, worse: Run, metric: str, level: float, n_resamples: int, seed: int) -> Paired:
    ids = (kind, better.entry.run, worse.entry.run)
    results = better.entry.results
    if metric != results.primary or better.values is None or worse.values is None:
        why = (f"per-trial values of {metric} are not known" if metric == results.primary
               else f"the paired test takes the primary metric {results.primary}")
        return Paired(*ids, None, why + "; no paired test")
    if isinstance(better.values, pd.DataFrame):
        a, b, statistic = _detection_pairs(better.values, worse.values)
    else:
        a, b = lb.aligned(better.values, worse.values)
        statistic = np.mean
    test = lb.paired_bootstrap(a, b, statistic=statistic, level=level, n_resamples=n_resamples, seed=seed)
    return Paired(*ids, test)


# ---------------------------------------------------------------------------------- detection's statistic

class AucAt:
    """The AUC of the trials at the positions given: ``scores`` and ``targets`` (booleans) are one table of both
    systems' trials, positions ``0..n-1`` the first system's and ``n..2n-1`` the second's, so resampling the
    positions of ``arange(n)`` and ``arange(n) + n`` together resamples the same trials of both.

    AUC = (sum of the targets' mid-ranks − P(P+1)/2) / (P·N) over each row (the Mann-Whitney count, ties a
    half); NaN for a resample without targets or non-targets."""

    def __init__(self, scores: np.ndarray, targets: np.ndarray):
        self.scores = np.asarray(scores, dtype=float)
        self.targets = np.asarray(targets, dtype=bool)

    def __call__(self, positions: np.ndarray, axis: int = -1) -> np.ndarray | float:
        from scipy.stats import rankdata

        index = np.asarray(positions).astype(np.intp)
        scores, targets = self.scores[index], self.targets[index]
        ranks = rankdata(scores, axis=-1)
        p = targets.sum(axis=-1)
        n = targets.shape[-1] - p
        with np.errstate(invalid="ignore", divide="ignore"):
            auc = (np.where(targets, ranks, 0.0).sum(axis=-1) - p * (p + 1) / 2) / (p * n)
        return auc if np.ndim(auc) else float(auc)


def _detection_pairs(first: pd.DataFrame, second: pd.DataFrame):
    scores_a, scores_b = lb.aligned(first["score"], second["score"])
    targets_a, targets_b = lb.aligned(first["target"].astype(float), second["target"].astype(float))
    if not np.array_equal(targets_a, targets_b):
        raise CompareError("the runs mark different trials as targets: they were scored against different references")
    n = scores_a.size
    statistic = AucAt(np.concatenate([scores_a, scores_b]), np.concatenate([targets_a, targets_a]) > 0.5)
    return np.arange(n, dtype=float), np.arange(n, dtype=float) + n, statistic


def detection_trials(results: Results, table: pd.DataFrame) -> pd.DataFrame | None:
    """A detection run's scored trials (its ``--outMeta`` table) as ``target``/``score`` keyed by ``ProbeFileID``;
    None unless their AUC is the whole run's (within ``mfscore.leaderboard.MATCH``: another query, say)."""
    needed = {"ProbeFileID", "IsTarget", "ConfidenceScore"}
    if not needed <= set(table.columns):
        return None
    trials = table.drop_duplicates("ProbeFileID")
    frame = pd.DataFrame({"target": trials["IsTarget"].astype(str).eq("Y").to_numpy(),
                          "score": pd.to_numeric(trials["ConfidenceScore"], errors="coerce").to_numpy()},
                         index=pd.Index(trials["ProbeFileID"].astype(str), name="ProbeFileID"))
    frame = frame[frame["score"].notna()]
    try:
        expected = results.primary_value(ALL) if results.primary == "AUC" else results.row(ALL).values.get("AUC")
    except KeyError:
        return None
    if frame.empty or expected is None or frame["target"].all() or not frame["target"].any():
        return None
    auc = AucAt(frame["score"].to_numpy(), frame["target"].to_numpy())(np.arange(len(frame)))
    return frame if abs(auc - expected) <= lb.MATCH else None


# ------------------------------------------------------------------------------------------------ writers

def paired_csv(comparison: Comparison) -> str:
    """The paired tests, ``|``-separated as the reports: one line per pair, ``Better`` ranked above ``Worse``."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="|", lineterminator="\n")
    metric = comparison.board.metric
    writer.writerow(["Comparison", "Better", "Worse", "Metric", "Trials", "Difference", "CI_LOWER", "CI_UPPER",
                     "PValue", "Level", "Resamples", "Seed", "Note"])
    for pair in comparison.paired:
        test = pair.test
        cells = (["", "", "", "", "", "", "", ""] if test is None else
                 [test.trials, repr(test.difference), repr(test.interval[0]), repr(test.interval[1]),
                  repr(test.p_value), repr(test.level), test.resamples, test.seed])
        writer.writerow([pair.kind, _label(comparison, pair.better), _label(comparison, pair.worse), metric, *cells,
                         pair.note])
    return out.getvalue()


def queries_csv(comparison: Comparison) -> str:
    """The per-query breakdown: a line per query, a column per run (in the whole run's order) of the metric's
    value, and one of its rank."""
    board = comparison.board
    order = [line.run for line in board.rankings[0].lines] if board.rankings else []
    out = io.StringIO()
    writer = csv.writer(out, delimiter="|", lineterminator="\n")
    labels = [_label(comparison, run) for run in order]
    writer.writerow(["Query", *labels, *(f"{label}_Rank" for label in labels)])
    for ranking in board.rankings:
        by_run = {line.run: line for line in ranking.lines}
        writer.writerow([ranking.query, *(_cell(by_run[run].value) for run in order),
                         *(by_run[run].rank for run in order)])
    return out.getvalue()


def _cell(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _label(comparison: Comparison, run_id: str) -> str:
    return next(run.entry.label for run in comparison.runs if run.entry.run == run_id)


def curves_png(comparison: Comparison, kind: str = "roc") -> bytes | None:
    """The runs' whole-run ROC (``kind`` "roc": detection rate over false-alarm rate) or DET (``"det"``: miss
    rate over false-alarm rate on normal-deviate axes) overlaid, one line per run, the legend giving its AUC; None
    when no run has a curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import norm

    order = [line.run for line in comparison.board.rankings[0].lines] if comparison.board.rankings else []
    runs = {run.entry.run: run for run in comparison.runs}
    drawn = 0
    figure, axes = plt.subplots(figsize=(6.4, 5.2), dpi=100)
    colours = _palette()
    for i, run_id in enumerate(order):
        results = runs[run_id].entry.results
        curve = next((c for c in results.curves if c.query == ALL and c.kind == "roc"), None)
        if curve is None:
            continue
        x, y = np.asarray(curve.x), np.asarray(curve.y)
        auc = results.row(ALL).values.get("AUC") if any(r.query == ALL for r in results.rows) else None
        label = f"{runs[run_id].entry.label} (AUC {'-' if auc is None else f'{auc:.4f}'})"
        if kind == "det":
            eps = 1e-4
            x, y = norm.ppf(np.clip(x, eps, 1 - eps)), norm.ppf(np.clip(1 - y, eps, 1 - eps))
        axes.plot(x, y, color=colours[i % len(colours)], label=label, linewidth=1.5)
        drawn += 1
    if not drawn:
        plt.close(figure)
        return None
    if kind == "det":
        ticks = [0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95]
        for set_ticks, set_labels in ((axes.set_xticks, axes.set_xticklabels), (axes.set_yticks, axes.set_yticklabels)):
            set_ticks(norm.ppf(ticks))
            set_labels([f"{t:g}" for t in ticks])
        axes.set_xlabel("false-alarm rate")
        axes.set_ylabel("miss rate")
        axes.set_title("DET, whole run")
    else:
        axes.plot([0, 1], [0, 1], color="#999999", linestyle=":", linewidth=1)
        axes.set_xlim(0, 1)
        axes.set_ylim(0, 1)
        axes.set_xlabel("false-alarm rate")
        axes.set_ylabel("detection rate")
        axes.set_title("ROC, whole run")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right" if kind == "roc" else "upper right", fontsize=9)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})  # no version in the bytes
    plt.close(figure)
    return buffer.getvalue()


def _palette() -> list[str]:
    """The reports' palette (``mfscore.reports.style.OKABE_ITO``), else matplotlib's."""
    try:
        from mfscore.reports.style import OKABE_ITO

        return list(OKABE_ITO)
    except ImportError:
        import matplotlib

        return list(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"])


def html_page(comparison: Comparison, plots: dict[str, bytes]) -> bytes:
    """One self-contained page: the board, the paired tests, the per-query table, the plots and the runs'
    metrics' glossary (mfscore.reports.html_report's building blocks)."""
    from mfscore.reports import html_report as page

    board = comparison.board
    paired_rows = list(csv.reader(io.StringIO(paired_csv(comparison)), delimiter="|"))
    query_rows = list(csv.reader(io.StringIO(queries_csv(comparison)), delimiter="|"))
    runs = [[run.entry.label, run.entry.run, run.entry.submitted] for run in comparison.runs]
    results = comparison.runs[0].entry.results
    sections = [
        page.section("Runs", page.table(["system", "run", "finished"], runs), "runs"),
        page.section("Leaderboard", page.leaderboard_table(board), "leaderboard"),
        page.section("Paired bootstrap tests", page.table(paired_rows[0], paired_rows[1:], attributes={
            "data-table": "paired"}) + '<p class="note">Difference: Better − Worse on the same resampled trials; '
            "PValue: two-sided, of no difference.</p>", "paired"),
        page.section("Per query", page.table(query_rows[0], query_rows[1:], attributes={"data-table": "queries"}),
                     "queries"),
    ]
    if plots:
        sections.append(page.section("Curves", "".join(page.figure(data, name) for name, data in plots.items()),
                                     "plots"))
    sections.append(page.section("Glossary", page.glossary(results, {}), "glossary"))
    return page.page(f"mfscore comparison: {board.task}, {board.metric}", sections)


def write_comparison(comparison: Comparison, out_dir: str | Path) -> list[Path]:
    """Write the comparison's files into ``out_dir``: leaderboard.csv/.json, paired.csv, queries.csv, roc.png and
    det.png (detection), compare.html; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = {f"{kind}.png": png for kind in ("roc", "det") if (png := curves_png(comparison, kind)) is not None}
    files = {"leaderboard.csv": lb.to_csv(comparison.board).encode(), "leaderboard.json": lb.to_json(comparison.board),
             "paired.csv": paired_csv(comparison).encode(), "queries.csv": queries_csv(comparison).encode(),
             **plots, "compare.html": html_page(comparison, plots)}
    for name, data in files.items():
        (out / name).write_bytes(data)
    return [out / name for name in files]
