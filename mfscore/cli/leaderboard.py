"""``mfscore leaderboard OUTDIR...``: local runs of one task ranked by its primary metric (docs/results.md
"Leaderboards").

Each OUTDIR is a run's output directory (or its results file): its ``*results.json`` gives the results, its
``*run.json`` when the submission finished (the tie-break), and the per-trial records file the results name,
when it is there, the values a bootstrap interval is drawn from. The ranking is ``mfscore.leaderboard``'s,
which the cluster's leaderboard uses too.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mfscore.cli.documentation import see

HELP = "rank local runs of one task by its primary metric, with confidence intervals"
RESULTS = "results.json"  # a results file is <prefix>_results.json, or results.json for a run without a prefix


# mfscore.leaderboard's LEVEL, N_RESAMPLES and SEED, restated so that building the parser imports no numpy (a test
# checks they agree)
DEFAULTS = {"level": 0.9, "resamples": 1000, "seed": 77}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("leaderboard", help=HELP)
    p.description = ("Rank the runs in OUTDIR... (each a run's output directory, or its results file) by their task's "
                     "primary metric, for the whole run and per query, with each run's confidence interval where it "
                     "has one, else a bootstrap interval over its per-trial records; '~' marks a run not separable "
                     f"from the next ({see(p, 'results.md')}, 'Leaderboards').")
    p.add_argument("outdirs", nargs="*", metavar="OUTDIR", help="a run's output directory, or its *results.json; or, "
                   "with --cluster (or $MFSCORE_CLUSTER), one NAME@VERSION: the cluster's shared board of that dataset")
    p.add_argument("--dataset", default="local", help="the dataset's name on the board (default: local)")
    p.add_argument("--task", help="with NAME@VERSION on a cluster: the task whose runs are ranked")
    p.add_argument("--cluster", metavar="FILE", help="with NAME@VERSION: the cluster file ('mfscore local-cluster up' "
                   "writes one) whose shared leaderboard to print (needs the cluster extra)")
    p.add_argument("--campaign", metavar="C", help="a campaign's board on the cluster, with --competition "
                   f"({see(p, 'campaigns.md')})")
    p.add_argument("--competition", metavar="X", help="with --campaign: the competition whose board to print")
    p.add_argument("--phase", metavar="P", help="with --campaign: the phase (default: the open one, else the last)")
    p.add_argument("--split", choices=("public", "private"),
                   help="with --campaign: the split ranked (default public; private once the phase has ended)")
    p.add_argument("--export", metavar="FILE", help="with --campaign, an operator's: the board with every entry's "
                   "system description, as CSV (FILE.csv) or JSON (FILE.json)")
    p.add_argument("--metric", help="rank by this metric instead of the primary (every run must report it)")
    p.add_argument("--json", action="store_true", help="print the leaderboard as JSON instead of the table")
    p.add_argument("--csv", metavar="FILE", help="also write the leaderboard as a |-separated table to FILE")
    p.add_argument("--html", metavar="FILE", help="also write the leaderboard as a self-contained HTML page to FILE")
    p.add_argument("--level", type=float, default=DEFAULTS["level"],
                   help=f"confidence level of the bootstrap intervals (default {DEFAULTS['level']})")
    p.add_argument("--resamples", type=int, default=DEFAULTS["resamples"],
                   help=f"bootstrap resamples (default {DEFAULTS['resamples']})")
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"], help=f"bootstrap seed (default {DEFAULTS['seed']})")
    p.set_defaults(run=run)


DATASET = re.compile(r"^(?:[^/@\s]+/)?[^/@\s]+@[^/@\s]+$")  # [OWNER/]NAME@VERSION (the cluster checks it whole)


def on_cluster(args) -> bool:
    """Whether the command asks for a cluster's board: one NAME@VERSION (not a path here) and a cluster named."""
    import os

    return bool(args.campaign) or (
        len(args.outdirs) == 1 and bool(DATASET.match(args.outdirs[0])) and not Path(args.outdirs[0]).exists()
        and bool(args.cluster or os.environ.get("MFSCORE_CLUSTER")))


def cluster_run(args) -> int:
    """The cluster's board: its implementation is found through the ``mfscore.commands`` entry point at run time (as
    the cluster commands are), so the CLI never imports the services."""
    import importlib
    from importlib.metadata import entry_points

    from mfscore.errors import MfscoreError

    for entry in entry_points(group="mfscore.commands"):
        implementation = getattr(importlib.import_module(entry.module), "cluster_leaderboard", None)
        if implementation is not None:
            return implementation(args)
    raise MfscoreError("a cluster's leaderboard is part of the distributed mode, which this installation lacks: "
                       "pip install 'mfscore[cluster]'")


def run(args) -> int:
    from mfscore import leaderboard as lb
    from mfscore.errors import MfscoreError

    if on_cluster(args):
        return cluster_run(args)
    if not args.outdirs:
        raise MfscoreError("name the runs to rank (OUTDIR...), or a campaign's board (--campaign C --competition X)")
    entries = [local_entry(path) for path in args.outdirs]
    entries = _distinct_labels(entries)
    tasks = list(dict.fromkeys(entry.results.task for entry in entries))
    if len(tasks) > 1:
        runs = "; ".join(f"{task}: {', '.join(e.run for e in entries if e.results.task == task)}" for task in tasks)
        raise MfscoreError(f"the runs are of different tasks ({runs}); a leaderboard ranks runs of one task")
    try:
        board = lb.leaderboard(entries, dataset=args.dataset, task=tasks[0], metric=args.metric, level=args.level,
                               n_resamples=args.resamples, seed=args.seed)
    except ValueError as exc:
        raise MfscoreError(str(exc)) from None
    write_files(board, args)
    if args.json:
        sys.stdout.buffer.write(lb.to_json(board))
        sys.stdout.flush()
    else:
        print("\n".join(lb.to_text(board)))
    return 0


def write_files(board, args) -> None:
    """``--csv FILE`` and ``--html FILE``: the board's table and its page (the local board's and a cluster's)."""
    from mfscore import leaderboard as lb

    if args.csv:
        Path(args.csv).write_text(lb.to_csv(board), encoding="utf-8")
    if args.html:
        from mfscore.reports.html_report import leaderboard_page

        Path(args.html).write_bytes(leaderboard_page(board))


def results_file(path: str | Path) -> Path:
    """The results file of a run: ``path`` itself, or the one ``*results.json`` in the directory ``path``."""
    from mfscore.errors import InputFileError

    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise InputFileError("no such run output directory or results file", path=str(path))
    found = sorted(path.glob(f"*{RESULTS}"))
    if not found:
        raise InputFileError(f"no results file (*{RESULTS}) in this directory: is it a run's output?", path=str(path))
    if len(found) > 1:
        raise InputFileError(f"several results files ({', '.join(f.name for f in found)}): name one", path=str(path))
    return found[0]


def local_entry(path: str | Path):
    """A leaderboard entry of a local run: run id the path given, label its directory's name, no owner, submitted
    when the run finished (its ``*run.json``; else the results file's time), and the per-trial values of its
    records file where the task has them."""
    import json
    from datetime import datetime, timezone

    from mfscore.errors import InputFileError, MfscoreError
    from mfscore.leaderboard import Entry, read_trials
    from mfscore.results import Results

    found = results_file(path)
    try:
        results = Results.from_json(found.read_bytes())
    except (ValueError, KeyError, TypeError) as exc:
        raise InputFileError(f"not an mfscore results file ({exc})", path=str(found)) from None
    submitted = None
    record = found.with_name(found.name[:-len(RESULTS)] + "run.json")
    if record.is_file():
        try:
            submitted = json.loads(record.read_bytes()).get("finished")
        except (ValueError, AttributeError):
            submitted = None
    if not submitted:
        submitted = datetime.fromtimestamp(found.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        trials = read_trials(found, results)
    except MfscoreError as exc:  # a bad records file costs the interval, not the board
        print(f"mfscore: warning: no bootstrap interval for {path}: {exc.sentence()}", file=sys.stderr)
        trials = {}
    return Entry(str(path), "", submitted, found.parent.resolve().name, results, trials)


def _distinct_labels(entries: list) -> list:
    """Entries labelled by their directory's name, or by the path given where two names are the same."""
    import dataclasses

    labels = [entry.label for entry in entries]
    return [entry if labels.count(entry.label) == 1 else dataclasses.replace(entry, label=entry.run.rstrip("/"))
            for entry in entries]
