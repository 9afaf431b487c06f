"""Whole tasks from Python: ``score(task, **options)`` runs a task as its command does and returns its results."""

from __future__ import annotations

import io
import json
import os
import tempfile

from mfscore import tasks
from mfscore.options import from_json
from mfscore.results import Results

__all__ = ["score"]


def score(task: str, *, out: str | os.PathLike | None = None, processes: int | None = None, **options) -> Results:
    """Score a whole run of ``task`` (``"detection"``, ``"mask"``, ...) and return its results (``mfscore.results``).

    ``options`` are the fields of the task's options type (``mfscore.tasks.get(task).options_type``), nested
    options as dicts, checked as the command line checks them: an unknown, missing or wrongly typed option, or
    a value out of range, raises ``mfscore.errors.OptionError`` (a ``ValueError``) naming it. Bad input files
    raise ``mfscore.errors.MfscoreError`` with the file and line. ``out`` is the ``DIR/PREFIX`` to write the
    report files to (MediScore's files, ``<prefix>_results.json`` and ``<prefix>_run.json``, all or nothing);
    without it nothing is kept. ``processes`` as the command's ``-p`` (None: one worker per CPU). Warnings go to
    stderr, as the command prints them; what it prints on stdout is dropped.

    Examples
    --------
    >>> import tempfile
    >>> from mfscore.api import score
    >>> from mfscore.sample_data.detection import generate_detection_dataset
    >>> data = generate_detection_dataset(tempfile.mkdtemp(), 400)
    >>> results = score("detection", kind="manipulation", ref_dir=str(data.directory), reference=data.reference,
    ...                 index=data.index, system=str(data.directory / data.system), plot={"enabled": False})
    >>> results.primary, round(results.primary_value(), 3), results.row().counts
    ('AUC', 0.8, {'targets': 190, 'nontargets': 210})
    >>> score("detection", kind="manipulation", ref_dir=".", reference="r.csv", index="i.csv", system="s.csv",
    ...       scoring={"far_stop": 2})
    Traceback (most recent call last):
    ...
    mfscore.errors.OptionError: --farStop 2.0: a false-alarm rate is in [0, 1] (option far_stop)
    """
    from mfscore.run.local import run_local

    chosen = tasks.get(task)
    values = from_json(chosen.options_type, json.dumps(options))
    with tempfile.TemporaryDirectory(prefix="mfscore-score-") as scratch:
        out_root = os.fspath(out) if out is not None else os.path.join(scratch, "run")
        lines = run_local(chosen, values, out_root, processes=processes, out=io.StringIO(), progress=False)
    return lines.results
