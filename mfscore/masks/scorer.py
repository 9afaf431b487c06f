"""The mask scorer's planning and assembly: one job per mask, and the records folded into tables.

For each ``-qm`` query (or once, without one) the run is: select the journal operations, plan a
``MaskJob`` per trial and role, score the jobs (``mfscore.tasks.mask``, wherever its runner puts
them), then build the per-image, averaged and journal tables from the records alone (docs/masks.md §6–§10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from mfscore.formats.images import confined_path
from mfscore.masks.journal_selection import (
    QuerySelection,
    journal_results,
    operations_by_probe,
    select_operations,
    trial_journal,
    trial_operations,
)
from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.mask_scoring import MaskJob
from mfscore.masks.options import MaskOptions
from mfscore.masks.reference_selection import BLACK
from mfscore.masks.run_metrics import average_aucs, maximum_threshold
from mfscore.masks.trial_metrics import trial_cells
from mfscore.masks.trials import FAILED, MANIPULATION, SPLICE, TrialTable, mask_roles, trial_keys


@dataclass
class RoleResult:
    """The records of one role (probe or donor side) over the kept trials, in trial order."""

    records: list[MaskRecord]
    cells: list[dict]
    pixel_average_auc: float
    mask_average_auc: float
    maximum_threshold: float | None
    actual_threshold: float | None


@dataclass
class QueryRun:
    """Everything one ``-qm`` query (or the plain run) produces."""

    query: str | None
    trials: pd.DataFrame
    roles: dict[str, RoleResult]
    journal: pd.DataFrame
    matched: bool = True
    messages: list[str] = field(default_factory=list)


def reference_column(task: str, role: str, jpeg2000: bool) -> str:
    """Which reference column names the mask of a role (docs/masks.md §4.1)."""
    if task == SPLICE:
        return "BinaryProbeMaskFileName" if role == "probe" else "DonorMaskFileName"
    return "ProbeBitPlaneMaskFileName" if jpeg2000 else "ProbeMaskFileName"


def _pixel_value(row: pd.Series, role: str, options: MaskOptions) -> int | None:
    """The no-score pixel value of one mask: per probe with ``-pppns``, else ``--nspx`` (docs/masks.md §5.4)."""
    if not options.per_probe_pixel_value:
        return None if options.pixel_value == -1 else options.pixel_value
    text = str(row.get(f"{role.capitalize()}OptOutPixelValue", "")).strip()
    return int(text) if text else None  # checked when the system output was read


def _status(row: pd.Series, role: str, status_column: str) -> str:
    if role == "donor" and "DonorStatus" in row:
        return row["DonorStatus"]
    return row[status_column]


def plan_jobs(table: TrialTable, trials: pd.DataFrame, selection: QuerySelection, journal: pd.DataFrame,
              options: MaskOptions, ref_dir: str, sys_csv: Path,
              index_sizes: dict | None = None) -> list[tuple[str, MaskJob]]:
    """One (role, job) per kept trial and role, in trial order.

    ``index_sizes`` ((role, file id) → (width, height)) is only used under ``--mediscore-compat``,
    where a missing system mask takes the index's size rather than the reference mask's.
    """
    task = options.task
    bitplanes = options.jpeg2000 and task == MANIPULATION
    system_root = str(sys_csv.parent)
    by_probe = operations_by_probe(journal, selection.evaluated)
    jobs = []
    for _, row in trials.iterrows():
        operations = None
        if task == MANIPULATION and options.rbin < 0:
            operations = trial_operations(by_probe, row["ProbeFileID"],
                                          row["JournalName"] if "JournalName" in row else None)
        for role, sys_column, _ in mask_roles(task):
            ref_name = row.get(reference_column(task, role, bitplanes), "")
            sys_name = row[sys_column]
            if _status(row, role, table.status_column) == FAILED:
                sys_name = ""
            job = MaskJob(
                reference_path=confined_path(ref_dir, ref_name, what="reference mask") if ref_name else None,
                system_path=confined_path(system_root, sys_name, what="system mask") if sys_name else None,
                bitplanes=bitplanes,
                every_marked_pixel=task == MANIPULATION and options.rbin >= 0,
                selected_colours=operations.colours if operations else (BLACK,),
                selected_bitplanes=operations.bitplanes if operations else (),
                journal_bitplanes=operations.journal_bitplanes if operations else (),
                with_distractors=not (task == SPLICE and role == "probe"),
                pixel_value=_pixel_value(row, role, options),
                zones=options.zones if task == MANIPULATION else replace(options.zones, distraction_size=0),
                max_pixels=options.max_pixels,
                max_job_bytes=options.max_job_bytes,
                all_regions_without_zones=options.mediscore_compat,
                blank_size=_index_size(index_sizes, role, row) if options.mediscore_compat and not sys_name else None,
            )
            jobs.append((role, job))
    return jobs


def _index_size(index_sizes: dict | None, role: str, row: pd.Series) -> tuple[int, int] | None:
    if not index_sizes:
        return None
    return index_sizes.get((role, row["ProbeFileID"] if role == "probe" else row["DonorFileID"]))


def _role_result(records: list[MaskRecord], options: MaskOptions) -> RoleResult:
    scored = [r for r in records if r.scored]
    pixel_auc, mask_auc = average_aucs(scored)
    maximum = maximum_threshold(scored) if options.uses_sbin else None
    if maximum is not None and math.isnan(maximum):
        maximum = None
    actual = float(options.sbin) if options.uses_sbin else None
    cells = [trial_cells(r, actual=actual, maximum=maximum) for r in records]
    return RoleResult(records, cells, pixel_auc, mask_auc, maximum, actual)


@dataclass
class QueryPlan:
    """One ``-qm`` query's trials and jobs, ready to score anywhere (here or on a cluster)."""

    query: str | None
    trials: pd.DataFrame
    journal: pd.DataFrame
    evaluated: pd.Series | None
    roles: list[str]
    jobs: list[MaskJob]
    matched: bool = True


def plan_query(table: TrialTable, journal: pd.DataFrame, options: MaskOptions, ref_dir: str, sys_csv: Path,
               query_text: str | None, index_sizes: dict | None = None) -> QueryPlan:
    """Select the trials and operations of one ``-qm`` query (all when ``query_text`` is None) and plan its jobs."""
    journal = trial_journal(table.journal_trials, journal, options.task)
    selection = select_operations(table.trials, journal, options.task, query_text)
    if not selection.matched:
        return QueryPlan(query_text, selection.trials.iloc[:0], journal.iloc[:0], None, [], [], matched=False)
    planned = plan_jobs(table, selection.trials, selection, journal, options, ref_dir, sys_csv, index_sizes)
    return QueryPlan(query_text, selection.trials, journal, selection.evaluated,
                     [role for role, _ in planned], [job for _, job in planned])


def assemble_plan(plan: QueryPlan, records: list[MaskRecord], options: MaskOptions) -> QueryRun:
    """A query's results from the records of its jobs, in plan order."""
    if not plan.matched:
        return QueryRun(plan.query, plan.trials, {}, plan.journal, matched=False)
    return assemble_query_run(plan.query, plan.trials, plan.roles, records, plan.journal, plan.evaluated, options)


def assemble_query_run(query_text: str | None, trials: pd.DataFrame, roles_in_order: list[str],
                       records: list[MaskRecord], journal: pd.DataFrame, evaluated: pd.Series,
                       options: MaskOptions) -> QueryRun:
    """Fold the records of the planned jobs (in plan order) into a query's results."""
    roles = {}
    for role, _, _ in mask_roles(options.task):
        mine = [rec for r, rec in zip(roles_in_order, records) if r == role]
        roles[role] = _role_result(mine, options)
    keys = trial_keys(options.task)
    journal_keys = [k for k in keys if k in journal.columns]
    trial_ids = [tuple(k)[: len(journal_keys)] for k in trials[keys].to_numpy()]
    unscoreable = {"probe": set(), "donor": set()}
    for role, result in roles.items():
        unscoreable[role] = {k for k, rec in zip(trial_ids, result.records) if not rec.scored}
    table_out = journal_results(journal, evaluated, unscoreable, options.task)
    messages = [r.message for r in records if r.message]
    return QueryRun(query_text, trials, roles, table_out, messages=messages)
