"""What a run releases to a submitter, a team that may not read the reference (docs/release.md).

A dataset's owner chooses a tier before the dataset is released: ``AGGREGATE`` (the task's aggregate report files,
``Task.aggregate_reports``, and the results' parts ``Task.aggregate_results``), ``PER_TRIAL`` (every report file but
the run's provenance) or ``FULL`` (everything). The owner and the operators always receive everything. An option that
chooses trials by the reference's columns (``mfscore.options.option(selects=True)``) would let a team read ground
truth out of aggregates, so a cluster refuses a run setting one (``selecting_options``) where its submitter receives
aggregates only.

Pure functions over the tasks' declarations: no file is read, nothing is imported beyond the core.
"""

from __future__ import annotations

import dataclasses
from fnmatch import fnmatchcase

from mfscore.errors import OptionError
from mfscore.options import fields_of
from mfscore.results import Results
from mfscore.run.local import is_provenance
from mfscore.tasks.base import Task

AGGREGATE = "aggregate"
PER_TRIAL = "per-trial"
FULL = "full"
TIERS = (AGGREGATE, PER_TRIAL, FULL)
PARTS = ("rows", "curves", "records")  # the parts of the results a tier may leave out


def checked_tier(tier: str) -> str:
    """``tier`` if it is one of ``TIERS``; ``OptionError`` naming them otherwise."""
    if tier not in TIERS:
        raise OptionError(f"there is no release tier {tier!r}; the tiers are {', '.join(TIERS)}", option="release")
    return tier


def released_reports(task: Task, names: list[str], tier: str) -> list[str]:
    """The report files of ``names`` ('/'-separated, relative to the output directory) a submitter receives at
    ``tier``, in the order given."""
    if checked_tier(tier) == FULL:
        return list(names)
    if tier == PER_TRIAL:
        return [name for name in names if not is_provenance(name)]
    return [name for name in names if not is_provenance(name)
            and any(fnmatchcase(name, pattern) for pattern in task.aggregate_reports)]


def released_results(task: Task, results: Results, tier: str) -> Results:
    """``results`` as a submitter receives them at ``tier``: at ``AGGREGATE``, the parts ``task`` does not declare
    (``Task.aggregate_results``) emptied; at the other tiers, unchanged."""
    if checked_tier(tier) != AGGREGATE:
        return results
    kept = set(task.aggregate_results)
    return dataclasses.replace(results, rows=results.rows if "rows" in kept else (),
                               curves=results.curves if "curves" in kept else (),
                               records=results.records if "records" in kept else None)


def selecting_options(options) -> list[str]:
    """The flags (as messages name them: ``-q/--query``) of the options declared ``selects`` whose value in the
    options dataclass ``options`` (nested ones included) is not the field's default, each once."""
    flags: list[str] = []
    for field, _ in fields_of(type(options)):
        value = getattr(options, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            flags += selecting_options(value)
        elif field.metadata.get("selects") and value != _default(field):
            flags.append(field.metadata.get("flag") or field.name)
    return list(dict.fromkeys(flags))


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING  # a required field differs from it whatever its value
