"""Whole tasks from Python: ``score(task, **options)`` runs a task as its command does and returns its results."""

from __future__ import annotations

import io
import json
import os
import tempfile

from mfscore import tasks
from mfscore.errors import OptionError
from mfscore.options import _dataclass_in, fields_of, from_json
from mfscore.results import Results

__all__ = ["score"]


def score(task: str, *, out: str | os.PathLike | None = None, processes: int | None = None, **options) -> Results:
    """Score a whole run of ``task`` (``"detection"``, ``"mask"``, ...) and return its results (``mfscore.results``).

    ``options`` are the fields of the task's options type (``mfscore.tasks.get(task).options_type``), nested
    options as dicts, checked as the command line checks them: an unknown, missing or wrongly typed option, or
    a value out of range, raises ``mfscore.errors.OptionError`` (a ``ValueError``) naming it. A nested option
    given flat (``far_stop=0.05`` for ``scoring={"far_stop": 0.05}``) is refused with the form it takes: one
    spelling per option, the one the run's record keeps. A path may be a ``str`` or any ``os.PathLike``
    (``pathlib.Path``), here and in ``out``. Bad input files raise ``mfscore.errors.InputFileError`` (a
    ``ValueError``; a missing one ``MissingFileError``, a ``FileNotFoundError``) with the file and line.
    ``out`` is the ``DIR/PREFIX`` to write the report files to (MediScore's files, ``<prefix>_results.json``
    and ``<prefix>_run.json``, all or nothing); without it nothing is kept. ``processes`` as the command's
    ``-p`` (None: one worker per CPU). Warnings go to stderr, as the command prints them; what it prints on
    stdout is dropped.

    Examples
    --------
    >>> import tempfile
    >>> from mfscore.api import score
    >>> from mfscore.sample_data.detection import generate_detection_dataset
    >>> data = generate_detection_dataset(tempfile.mkdtemp(), 400)
    >>> results = score("detection", kind="manipulation", ref_dir=data.directory, reference=data.reference,
    ...                 index=data.index, system=data.directory / data.system, plot={"enabled": False})
    >>> results.primary, round(results.primary_value(), 3), results.row().counts
    ('AUC', 0.8, {'targets': 190, 'nontargets': 210})
    >>> score("detection", kind="manipulation", ref_dir=".", reference="r.csv", index="i.csv", system="s.csv",
    ...       scoring={"far_stop": 2})
    Traceback (most recent call last):
    ...
    mfscore.errors.OptionError: --farStop 2.0: a false-alarm rate is in [0, 1] (option far_stop)
    >>> score("detection", kind="manipulation", ref_dir=".", reference="r.csv", index="i.csv", system="s.csv",
    ...       far_stop=0.05)
    Traceback (most recent call last):
    ...
    mfscore.errors.OptionError: far_stop is an option of scoring: scoring={'far_stop': 0.05}
    """
    from mfscore.run.local import run_local

    chosen = tasks.get(task)
    plain = {name: _plain(value, name) for name, value in options.items()}
    _check_placement(chosen.options_type, plain)
    values = from_json(chosen.options_type, json.dumps(plain))
    with tempfile.TemporaryDirectory(prefix="mfscore-score-") as scratch:
        out_root = os.fspath(out) if out is not None else os.path.join(scratch, "run")
        lines = run_local(chosen, values, out_root, processes=processes, out=io.StringIO(), progress=False)
    return lines.results


def _plain(value, name: str):
    """``value`` as JSON data: a path (``os.PathLike``) as its string, a numpy scalar as the Python one;
    ``OptionError`` naming the option for what JSON cannot hold."""
    if isinstance(value, os.PathLike):
        return os.fsdecode(value)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dict):
        return {key: _plain(item, f"{name}.{key}") for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, name) for item in value]
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        return _plain(value.item(), name)
    kind = type(value).__name__
    raise OptionError(f"the option {name} is a {kind}: an option is a string, path, number, boolean, list, dict "
                      "or None", option=name, reason=f"not an option's value ({kind})")


def _check_placement(kind: type, options: dict) -> None:
    """``OptionError`` saying where it belongs for a name of ``options`` that is not an option of ``kind`` but of
    one of its nested options (``far_stop``: ``scoring={'far_stop': ...}``); other unknown names are left to
    ``from_json``, which says there is no such option."""
    fields = fields_of(kind)
    top = {f.name for f, _ in fields}
    for name, value in options.items():
        if name in top:
            continue
        homes = [f.name for f, hint in fields
                 if (nested := _dataclass_in(hint)) is not None and name in {g.name for g, _ in fields_of(nested)}]
        if homes:
            forms = " or ".join(f"{home}={_merged(options.get(home), name, value)!r}" for home in homes)
            where = " and of ".join(homes)
            raise OptionError(f"{name} is an option of {where}: {forms}", option=name,
                              reason=f"an option of {where}")


def _merged(given, name: str, value) -> dict:
    """The nested options ``given`` (a dict, or nothing) with ``name`` set to ``value``."""
    return {**(given if isinstance(given, dict) else {}), name: value}
