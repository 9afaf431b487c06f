"""A campaign's HTML board (``mfscore.campaigns.board_html``) in a real browser (Debian's chromium, driven by
playwright-core from npm: check_page.js), opened from file:// with no network: nothing is fetched, nothing errs, the
page is not blank, and its ranked rows are the board's in rank order. ``make test-browser`` runs it."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import cv2
import numpy as np
import pytest

from mfscore.campaigns import PUBLIC, Entry, board, board_html, load_campaign
from mfscore.results import HIGHER, MetricSpec, Results, Row

pytestmark = pytest.mark.browser


CAMPAIGN = {
    "name": "mfc-2026",
    "teams": [{"name": "alpha", "members": ["amelia"]}, {"name": "beta", "members": ["bob"]},
              {"name": "gamma", "members": ["gil"]}],
    "competitions": [{"name": "det", "task": "detection", "dataset": "mfc-eval@1", "primary": "AUC",
                      "goal": {"metric": "AUC", "threshold": 0.75, "better": "higher"},
                      "options": {"ref_dir": "ref", "reference": "ref.csv", "index": "index.csv",
                                  "kind": "manipulation"}}],
    "phases": [{"name": "dev", "start": "2026-01-01T00:00:00Z", "end": "2026-02-01T00:00:00Z", "late": "mark",
                "board": "public", "release": "aggregate",
                "split": {"by": "hash", "fraction": 0.5, "salt": "pepper"}}],
}


def _entry(run: str, team: str, system: str, version: int, auc: float, *, late: bool = False) -> Entry:
    results = Results("detection", "AUC", (MetricSpec("AUC", HIGHER, "area under the ROC"),), (
        Row("CampaignSplit=='public'", {"AUC": auc}, {}, {"AUC": (auc - 0.05, auc + 0.05)}),
        Row("CampaignSplit=='private'", {"AUC": 1 - auc})))
    return Entry(run, team, f"{team}-member", system, version, datetime(2026, 1, 2, tzinfo=timezone.utc), late,
                 False, results, f"<i>{team}</i> system")


def test_the_board_page_shows_the_ranked_rows(browser, tmp_path):
    campaign = load_campaign(json.dumps(CAMPAIGN).encode())
    entries = [_entry("r1", "beta", "p-b", 1, 0.70), _entry("r2", "alpha", "p-a", 1, 0.60),
               _entry("r3", "alpha", "p-a", 2, 0.90), _entry("r4", "gamma", "p-g", 1, 0.72),
               _entry("r5", "gamma", "c-g", 1, 0.99), _entry("r6", "beta", "p-b", 2, 0.95, late=True)]
    made = board(campaign, campaign.competitions[0], campaign.phases[0], entries, PUBLIC)
    page = tmp_path / "board.html"
    page.write_text(board_html(made), encoding="utf-8")
    shot = tmp_path / "board.png"
    found = browser(page, shot)
    assert found["console_errors"] == [] and found["page_errors"] == [] and found["requests"] == []
    screenshot = cv2.imread(str(shot), cv2.IMREAD_GRAYSCALE)
    assert screenshot is not None and screenshot.shape[1] == 1280 and float(np.var(screenshot)) > 0
    ranked = found["leaderboard"]  # Rank|Team|System|Version|AUC|CI|OverlapsNext|Goal|Submitted|Description
    assert [row[:5] for row in ranked] == [["1", "alpha", "p-a", "2", "0.9000"], ["2", "gamma", "p-g", "1", "0.7200"],
                                          ["3", "beta", "p-b", "1", "0.7000"]]
    assert [row[6] for row in ranked] == ["N", "Y", ""]
    assert [row[7] for row in ranked] == ["met", "not met", "not met"]
    assert ranked[0][9] == "<i>alpha</i> system"  # the text as written, not markup
