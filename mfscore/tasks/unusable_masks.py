"""The one exit-status rule for masks that cannot be used, shared by ``mask`` and ``video-spatial``.

When the reports were written, the run exits 0: one ``mfscore: ERROR:`` line per unusable mask says what
was done with its trial, and one line at the end counts them. ``--strict`` makes any unusable mask exit 1.
``--mediscore-compat`` keeps the MediScore tool's own rule instead: MaskScorer exits 1 once two or more
trials failed (in its default single-process mode, docs/masks.md §4.4), the video scorer once one probe
did (docs/video.md §B.5); the users' side is docs/masks.md "Bad input" and docs/video.md "Bad input". A
problem with the run as a whole stops it before anything is written, exit 1, whatever these say.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MediScoreRule:
    """From how many failed trials the MediScore tool exits 1, and that said in words."""

    fails_from: int
    said: str


MASKSCORER = MediScoreRule(2, "MaskScorer exits 1 from two failed trials")
VIDEO_SCORER = MediScoreRule(1, "MediScore's video scorer exits 1 from one failed probe")
STRICT_HELP = ("exit 1 when any mask could not be used (default: 0 once the reports are written; each unusable mask "
               "is one ERROR line, and the last line counts them)")  # --strict of both tasks


def conclusion(masks: int, failed_trials: int, consequence: str, *, strict: bool, mediscore_compat: bool,
               rule: MediScoreRule) -> tuple[list[str], int]:
    """(the last stderr line, the exit status) of a run whose reports were written, with ``masks`` unusable masks
    in ``failed_trials`` trials; ``consequence`` says what became of their trials. No line when there were none."""
    if not masks:
        return [], 0
    line = f"mfscore: {masks} mask(s) could not be used; {consequence}"
    if strict:
        return [f"{line} (exit status 1: --strict)"], 1
    if mediscore_compat and failed_trials >= rule.fails_from:
        return [f"{line} (exit status 1: --mediscore-compat, as {rule.said})"], 1
    return [line], 0
