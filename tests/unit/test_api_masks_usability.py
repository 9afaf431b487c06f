"""The mask API as a new user meets it (issue 45): visible no-score defaults, the command line's defaults, a repr
saying which pixels each metric counted, a warning saying why a small mask is NaN, an empty ``MaskScores`` refused
as an empty ``DetectionScores`` is, records taken back as JSON dicts, and the docs' mask session run as a doctest."""

from __future__ import annotations

import argparse
import doctest
import inspect
import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from mfscore.api.detection import DetectionScores
from mfscore.api.masks import MaskRecord, MaskScores, UndefinedMaskMetricWarning, mask_metrics

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SESSION_HEADING = "## Masks: MediScore's no-score zone, on by default"
ZONE_ARGUMENTS = ("erode_size", "dilate_size", "distraction_size", "kernel")


def square(shape=(32, 32), top=8, size=16) -> np.ndarray:
    region = np.zeros(shape, bool)
    region[top:top + size, top:top + size] = True
    return region


def grey(region: np.ndarray) -> np.ndarray:
    return np.where(region, 0, 255).astype(np.uint8)


def quietly(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mask_metrics(*args, **kwargs)
    return result, [w for w in caught if issubclass(w.category, UndefinedMaskMetricWarning)]


# ---- item 1: the defaults, where a user looks -----------------------------------------------------

def test_signature_shows_mediscores_defaults_as_values():
    for function in (mask_metrics, MaskScores.update):
        parameters = inspect.signature(function).parameters
        assert {name: parameters[name].default for name in ZONE_ARGUMENTS} == {
            "erode_size": 15, "dilate_size": 11, "distraction_size": 15, "kernel": "box"}, function.__qualname__
    assert "erode_size=15, dilate_size=11" in str(inspect.signature(mask_metrics))


def test_docstring_opens_with_the_defaults_and_how_to_turn_them_off():
    opening = " ".join(inspect.getdoc(mask_metrics).split("\n\n")[:2])
    assert "``erode_size=15``" in opening and "``dilate_size=11``" in opening
    assert "``erode_size=0, dilate_size=0``" in opening
    assert "every pixel" in opening


def test_the_command_line_has_the_apis_defaults():
    """``mfscore mask``'s flags, parsed with none of the zone flags given, are the API's defaults."""
    from mfscore.cli import mask as mask_command
    from mfscore.masks.options import ZoneOptions

    parser = argparse.ArgumentParser()
    mask_command.add_arguments(parser)
    args = parser.parse_args(["--refDir", "ref", "-r", "ref.csv", "-s", "sys.csv", "-oR", "out/run"])
    run = mask_command.options(args).options
    cli = {name: getattr(run.scoring.zones, name) for name in ZONE_ARGUMENTS}
    cli["extras_pixels"] = run.report.extras_pixels
    api = {name: p.default for name, p in inspect.signature(mask_metrics).parameters.items() if name in cli}
    assert api == cli
    update = inspect.signature(MaskScores.update).parameters
    assert {name: update[name].default for name in ZONE_ARGUMENTS} == {n: cli[n] for n in ZONE_ARGUMENTS}
    assert {name: getattr(ZoneOptions(), name) for name in ZONE_ARGUMENTS} == {n: cli[n] for n in ZONE_ARGUMENTS}


def test_repr_says_which_pixels_each_metric_counted():
    region = square()
    m = mask_metrics(region, grey(region))
    text = repr(m)
    excluded = region.size - m.pixel_n
    assert 0 < excluded == m.pixel_bns  # the boundary zone is all that was left out
    assert (f"MCC, NMM, BWL1, GWL1, AUC, EER: pixels outside the no-score zone (erode 15, dilate 11: "
            f"{excluded:,} of {region.size:,} pixels excluded); IoU, F1, soft: every pixel") in text
    assert text.startswith("MaskMetrics(scored=True, ") and f"optimum_mcc={m.optimum_mcc!r}" in text


def test_repr_follows_the_options_given():
    region = square()
    every = repr(mask_metrics(region, grey(region), erode_size=0, dilate_size=0, extras_pixels="scored"))
    assert "(erode 0, dilate 0: 0 of 1,024 pixels excluded); IoU, F1, soft: the same pixels" in every
    others = np.zeros_like(region)
    others[0:2, 0:2] = True
    left_out = np.zeros_like(region)
    left_out[-1, :] = True
    m = mask_metrics(region, grey(region), distractors=others, no_score=left_out, erode_size=3, dilate_size=5)
    assert f"(erode 3, dilate 5, distraction 15, no_score: {region.size - m.pixel_n:,} of 1,024" in repr(m)
    blank, _ = quietly(np.zeros((4, 4), bool), np.zeros((4, 4), np.uint8))
    assert "not scored: the reference has no manipulated pixel" in repr(blank)


def test_a_small_mask_warns_that_the_zone_covers_it_and_how_to_score_it():
    region = square((5, 5), 1, 2)
    m, caught = quietly(region, grey(region))
    assert math.isnan(m.optimum_mcc) and m.pixel_n == 0
    (warning,) = caught
    message = str(warning.message)
    assert "no-score zone (erode 15, dilate 11) covers the whole 5x5 mask" in message
    assert "pass erode_size=0, dilate_size=0" in message
    followed, caught = quietly(region, grey(region), erode_size=0, dilate_size=0)
    assert followed.optimum_mcc == 1.0 and followed.pixel_n == 25 and not caught


def test_a_no_score_map_covering_the_mask_is_named_as_the_cause():
    region = square((6, 6), 1, 3)
    _, caught = quietly(region, grey(region), no_score=np.ones((6, 6), bool), erode_size=0, dilate_size=0)
    (warning,) = caught
    assert str(warning.message).startswith("no_score is True at every pixel of the 6x6 mask")
    assert "erode_size=0" not in str(warning.message)


# ---- items 3/4: an empty MaskScores, records as dicts ---------------------------------------------

def test_empty_mask_scores_raise_as_empty_detection_scores_do():
    with pytest.raises(ValueError, match="is empty: there is no trial to score") as detection:
        DetectionScores().compute()
    with pytest.raises(ValueError, match="is empty: there is no mask to score") as masks:
        MaskScores().compute()
    assert type(masks.value) is type(detection.value)
    with pytest.raises(ValueError, match="no mask to score"):
        MaskScores().merge(MaskScores()).compute(threshold=10)


def test_masks_that_are_not_scored_still_give_a_run_of_nan_means():
    run = MaskScores().update(np.zeros((3, 3), bool), np.zeros((3, 3), np.uint8)).compute()
    assert run.total_trials == 1 and run.scoreable_trials == 0 and math.isnan(run.optimum_mcc)


def test_mask_record_is_importable_from_the_mask_api():
    import mfscore.api as api
    import mfscore.api.masks as masks
    from mfscore.masks.mask_record import MaskRecord as core

    assert MaskRecord is core and masks.MaskRecord is core
    assert api.MaskRecord is core and "MaskRecord" in api.__all__ and "MaskRecord" in dir(api)


def test_records_are_taken_back_from_their_json_dicts():
    region = square()
    scores = MaskScores().update(region, grey(region)).update(region, np.full((32, 32), 90, np.uint8))
    scores.update(np.zeros((32, 32), bool), grey(region))
    dicts = json.loads(json.dumps([record.to_dict() for record in scores.records]))
    again = MaskScores(records=dicts)
    assert again.compute(threshold=100) == scores.compute(threshold=100)
    assert [r.status for r in again.records] == [r.status for r in scores.records]
    mixed = MaskScores(records=[scores.records[0], dicts[1], dicts[2]])
    assert all(isinstance(r, MaskRecord) for r in mixed.records)
    assert mixed.compute() == scores.compute()


@pytest.mark.parametrize("change, pattern", [
    (lambda d: d.pop("status"), r"records\[1\] lacks the key 'status'"),
    (lambda d: d.update(positive=[1, 2, 3]), r"records\[1\]\['positive'\] must hold 256 counts"),
    (lambda d: d.update(negative=[-1] * 256), r"records\[1\]\['negative'\] must hold 256 counts"),
    (lambda d: d.update(status="done"), r"records\[1\] has status 'done'"),
    (lambda d: d.update(positive="many"), r"records\[1\] is not a MaskRecord's dict"),
])
def test_a_bad_record_dict_is_refused_naming_it(change, pattern):
    region = square()
    good = MaskScores().update(region, grey(region)).records[0].to_dict()
    bad = json.loads(json.dumps(good))
    change(bad)
    with pytest.raises(ValueError, match=pattern):
        MaskScores(records=[good, bad])


def test_records_that_are_neither_records_nor_dicts_are_refused():
    with pytest.raises(ValueError, match=r"records\[0\] must be a MaskRecord or its dict"):
        MaskScores(records=["scored"])
    with pytest.raises(ValueError, match="records must be an iterable"):
        MaskScores(records=5)


# ---- docs/api.md's mask session --------------------------------------------------------------------

def mask_session() -> str:
    """The examples of docs/api.md's mask session: its ``python`` blocks, up to the next section."""
    text = DOCS.read_text(encoding="utf-8")
    assert SESSION_HEADING in text, f"docs/api.md has no section {SESSION_HEADING!r}"
    section = text.split(SESSION_HEADING, 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```python\n(.*?)```", section, flags=re.S))


def test_the_docs_mask_session_runs():
    session = mask_session()
    parser = doctest.DocTestParser()
    test = parser.get_doctest(session, {}, "docs/api.md (masks)", str(DOCS), 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
    assert "erode_size=0, dilate_size=0" in session and "erode 15, dilate 11" in session
