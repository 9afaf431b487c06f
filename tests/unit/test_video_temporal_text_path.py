"""Video temporal's tables read as text against the same tables read by pandas: on generated inputs with the
cells that make the two differ (missing-value spellings, numbers pandas retypes, repeated rows and keys, names the
joins share, queries on numbers), the command's selection is pandas' selection, or the same error."""

from __future__ import annotations

import dataclasses
import random
import shutil

import pytest

from mfscore.errors import MfscoreError
from mfscore.sample_data.video import generate_temporal_dataset
from mfscore.video import temporal_scorer
from mfscore.video.temporal_scorer import TemporalInputs, TemporalOptions, select_video_temporal

QUERIES = ["*", "Operation == 'Blur'", "Operation in ['Blur', 'FillContentAwareFill']", "not (Purpose == 'remove')",
           "Operation != 'Blur' and Purpose == 'heal'", "ProbeFileID == 'vid00001' or JournalName == 'Jvid00002'",
           "TaskID == 'manipulation'", "Operation == Purpose", "Operation == 1", "FrameCount > 400",
           "Color == '255 0 0'", "Collection == 'alpha'", "HPDeviceID == 'x'", "Sequence == '1'"]


def _rows(path):
    return [line.split("|") for line in path.read_text().splitlines()]


def _write(path, rows):
    path.write_text("\n".join("|".join(row) for row in rows) + "\n")


def _set_cell(rng, path, column, values):
    rows = _rows(path)
    row = rng.randrange(1, len(rows))
    rows[row][rows[0].index(column)] = rng.choice(values)
    _write(path, rows)


def _repeat_row(rng, path, change=None):
    rows = _rows(path)
    copy = list(rng.choice(rows[1:]))
    if change:
        copy[rows[0].index(change[0])] = change[1](copy[rows[0].index(change[0])])
    rows.insert(rng.randrange(1, len(rows) + 1), copy)
    _write(path, rows)


def _add_column(path, name, value):
    rows = _rows(path)
    _write(path, [rows[0] + [name]] + [row + [value] for row in rows[1:]])


def _retype_column(path, column, values):
    rows = _rows(path)
    position = rows[0].index(column)
    for k, row in enumerate(rows[1:]):
        row[position] = values[k % len(values)]
    _write(path, rows)


def _perturb(rng, data):
    """One change that can set the two readings apart."""
    changes = [
        lambda: _set_cell(rng, data.index, "FrameCount", ["12.0", "1e3", "0", "abc", "", "NA", " 2999", "03000"]),
        lambda: _repeat_row(rng, data.index),
        lambda: _repeat_row(rng, data.index, ("FrameCount", lambda v: v + ".0")),
        lambda: _set_cell(rng, data.probe_journal_join, rng.choice(["ProbeFileID", "StartNodeID"]), ["NA", "", "null"]),
        lambda: _repeat_row(rng, data.probe_journal_join),
        lambda: _repeat_row(rng, data.journal_mask),
        lambda: _set_cell(rng, data.journal_mask, "VideoFrame", ["", "NA", "[]", "[[0,5]]", "[[1,999999]]", "[[3,1]]"]),
        lambda: _set_cell(rng, data.journal_mask, "Operation", ["NA", "True", "12", ""]),
        lambda: _retype_column(data.journal_mask, "Operation", ["1", "2"]),
        lambda: _retype_column(data.journal_mask, "Purpose", ["True", "False"]),
        lambda: _set_cell(rng, data.system, "ProbeStatus", ["", "NonProcessed", "NA"]),
        lambda: _set_cell(rng, data.system, "VideoFrameSegments", ["", "NA", "[[1,2]]", "[[2990,4000]]", "[[0,3]]"]),
        lambda: _set_cell(rng, data.system, "ProbeFileID", ["", "NA", "vid99999"]),
        lambda: _repeat_row(rng, data.system),
        lambda: _repeat_row(rng, data.system, ("ConfidenceScore", lambda v: v + "0")),
        lambda: _add_column(data.index, "Operation", "Blur"),
        lambda: _add_column(data.probe_journal_join, "Purpose", "heal"),
        lambda: _add_column(data.journal_mask, "ProbeFileID", "vid00000"),
    ]
    rng.choice(changes)()


def _outcome(select):
    try:
        return select()
    except MfscoreError as exc:
        return type(exc).__name__, str(exc)


def test_the_text_path_selects_what_pandas_selects(tmp_path):
    original = generate_temporal_dataset(tmp_path / "original", 8, seed=3)
    rng = random.Random(28)
    decided = 0
    for case in range(120):
        root = tmp_path / f"case{case}"
        shutil.copytree(tmp_path / "original", root)
        data = dataclasses.replace(original, **{f.name: root / getattr(original, f.name).relative_to(tmp_path / "original")
                                                for f in dataclasses.fields(original)})
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            _perturb(rng, data)
        inputs = TemporalInputs(index=data.index, journal_mask=data.journal_mask,
                                probe_journal_join=data.probe_journal_join, system=data.system, reference=data.reference)
        options = TemporalOptions(collar=rng.choice([None, 5]), queries=tuple(rng.sample(QUERIES, rng.randint(1, 2))),
                                  truncate=rng.random() < 0.5, opt_out=rng.random() < 0.8,
                                  video_opt_out=rng.random() < 0.8)
        nodes = temporal_scorer._parse_queries(options.queries)
        by_pandas = _outcome(lambda: temporal_scorer._selection(temporal_scorer._frame_tables(inputs, options),
                                                                options, nodes, inputs))
        assert _outcome(lambda: select_video_temporal(inputs, options)) == by_pandas, (case, options.queries)
        try:
            as_text = temporal_scorer._selection(temporal_scorer._text_tables(inputs, options), options, nodes, inputs)
        except (temporal_scorer._NotPlain, MfscoreError):
            continue
        decided += 1
        assert as_text == by_pandas
    assert decided > 20  # the text path itself decided a fifth of the cases or more


def test_bad_input_is_worded_by_pandas(tmp_path):
    """An error found on the text path is the pandas path's error, word for word."""
    data = generate_temporal_dataset(tmp_path, 4, seed=3)
    rows = _rows(data.index)
    rows[1][rows[0].index("FrameCount")] = "NA"
    _write(data.index, rows)
    inputs = TemporalInputs(index=data.index, journal_mask=data.journal_mask,
                            probe_journal_join=data.probe_journal_join, system=data.system)
    with pytest.raises(MfscoreError, match=r"FrameCount nan of probe vid00000 is not a positive whole number"):
        select_video_temporal(inputs, TemporalOptions())
