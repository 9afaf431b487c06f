"""``mfscore compare RUN...``: runs of one task on the same trials, ranked and tested pair by pair (docs/results.md
"Comparing runs").

A RUN is a local output directory (or its results file) or, with ``--cluster`` (or ``$MFSCORE_CLUSTER``), the id
of a run on a cluster, whose report files are fetched first into ``<out>/runs/<id>/`` by the cluster's ``mfscore
report`` machinery, found through the ``mfscore.commands`` entry point at run time (the CLI never imports the
services). The comparison itself is ``mfscore.compare``'s.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mfscore.cli.documentation import see
from mfscore.cli.leaderboard import DEFAULTS

HELP = "compare runs of one task: leaderboard, overlaid ROC/DET, per-query table, paired bootstrap tests"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("compare", help=HELP)
    p.description = ("Compare the runs RUN... (each a run's output directory or results file, or with --cluster a "
                     "run id on the cluster) of one task scored on the same trials: a leaderboard (the one of "
                     "'mfscore leaderboard'), the detection runs' ROC and DET overlaid, a per-query table, and a "
                     "paired bootstrap test of each adjacent pair and of each run against the best; written to "
                     f"--out as CSV, PNG and one HTML page ({see(p, 'results.md')}, 'Comparing runs').")
    p.add_argument("runs", nargs="+", metavar="RUN", help="a run's output directory or *results.json, or a cluster "
                   "run id")
    p.add_argument("--out", default="compare", metavar="DIR", help="directory for the files (default ./compare)")
    p.add_argument("--cluster", metavar="FILE", help="the cluster file of the runs named by id (default "
                   "$MFSCORE_CLUSTER)")
    p.add_argument("--metric", help="rank by this metric instead of the primary (no paired test then)")
    p.add_argument("--level", type=float, default=DEFAULTS["level"],
                   help=f"confidence level of the intervals (default {DEFAULTS['level']})")
    p.add_argument("--resamples", type=int, default=DEFAULTS["resamples"],
                   help=f"bootstrap resamples (default {DEFAULTS['resamples']})")
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"], help=f"bootstrap seed (default {DEFAULTS['seed']})")
    p.set_defaults(run=run)


def run(args) -> int:
    from mfscore import compare as core
    from mfscore import leaderboard as lb
    from mfscore.cli.leaderboard import _distinct_labels

    out = Path(args.out)
    runs = [local_run(_local_path(name, out, args.cluster)) for name in args.runs]
    entries = _distinct_labels([run.entry for run in runs])
    runs = [core.Run(entry, run.keys, run.values, run.reference) for entry, run in zip(entries, runs)]
    comparison = core.compare(runs, metric=args.metric, level=args.level, n_resamples=args.resamples, seed=args.seed)
    written = core.write_comparison(comparison, out)
    print("\n".join(lb.to_text(comparison.board)))
    for pair in comparison.paired:
        test = pair.test
        what = (pair.note if test is None else f"difference {test.difference:.4f} "
                f"[{test.interval[0]:.4f}, {test.interval[1]:.4f}], p = {test.p_value:.4g} ({test.trials} trials)")
        print(f"{pair.kind}: {core._label(comparison, pair.better)} vs {core._label(comparison, pair.worse)}: {what}")
    print(f"Written to {out}/: {', '.join(path.name for path in written)}", file=sys.stderr)
    return 0


def _local_path(name: str, out: Path, cluster: str | None) -> Path:
    """``name`` itself when it exists here; otherwise a cluster run, fetched into ``<out>/runs/<name>/``."""
    import os

    from mfscore.errors import MfscoreError

    path = Path(name)
    if path.exists():
        return path
    cluster = cluster or os.environ.get("MFSCORE_CLUSTER")
    if not cluster:
        raise MfscoreError(f"{name} is no run output directory here, and no cluster is named (--cluster FILE or "
                           "$MFSCORE_CLUSTER) to fetch it from")
    target = out / "runs" / name
    _cluster_fetch(name, target, cluster)
    return target


def _cluster_fetch(run_id: str, directory: Path, cluster: str) -> None:
    """Fetch a cluster run's report files into ``directory`` (``mfscore report``'s machinery, found through the
    ``mfscore.commands`` entry point at run time)."""
    import importlib
    from importlib.metadata import entry_points

    from mfscore.errors import MfscoreError

    for entry in entry_points(group="mfscore.commands"):
        fetch = getattr(importlib.import_module(entry.module), "cluster_fetch", None)
        if fetch is not None:
            fetch(run_id, str(directory), cluster)
            return
    raise MfscoreError("fetching a cluster's run is part of the distributed mode, which this installation lacks: "
                       "pip install 'mfscore[cluster]'")


def local_run(path: Path):
    """A run to compare from its output directory: its leaderboard entry (``mfscore leaderboard``'s), its trials
    and per-trial values where its files hold them, and its reference tables' digests from its provenance."""
    import json

    from mfscore import compare as core
    from mfscore.cli.leaderboard import RESULTS, local_entry, results_file
    from mfscore.formats.tables import read_table
    from mfscore.leaderboard import TRIAL_VALUES
    from mfscore.results import ALL

    entry = local_entry(path)
    found = results_file(path)
    results = entry.results
    prefix = found.name[:-len(RESULTS)]
    keys, values = None, None
    if results.task == "detection":
        meta = found.with_name(prefix + core.META_SCORED)
        if meta.is_file():
            trials = core.detection_trials(results, read_table(meta))
            if trials is not None:
                keys, values = frozenset(trials.index), trials
    elif results.task in TRIAL_VALUES and results.records is not None and results.records.where == "reports":
        records = found.parent / results.records.file
        if records.is_file():
            table = read_table(records)
            key = [k for k in results.records.key if k in table.columns]
            if key:
                keys = frozenset(map(tuple, table[key].astype(str).to_numpy()))
        if entry.trials and ALL in entry.trials:
            values = entry.trials[ALL]
    record = found.with_name(prefix + "run.json")
    reference = ()
    if record.is_file():
        tables = json.loads(record.read_bytes()).get("tables", {})
        reference = tuple(sorted((k, v) for k, v in tables.items() if k.startswith("ref/")))
    return core.Run(entry, keys, values, reference)
