"""The per-video record: the spatial histograms of an image mask plus the temporal counts.

``spatial`` is a ``MaskRecord`` summed over the video's scored frames, so every spatial metric and
the run-wide Maximum threshold and average ROCs come from it exactly as for images, and an
aggregator folds videos and images the same way. ``temporal`` holds the frame-interval confusion
(TP, TN, FP, FN) at each system threshold, so TemporalMCC can be read at whichever threshold a
report picks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mfscore.masks.mask_record import NOT_SCOREABLE, SCORED, MaskRecord
from mfscore.video.temporal_confusion import TemporalCounts


@dataclass(frozen=True)
class VideoRecord:
    probe_id: str
    status: str  # mask_record.SCORED; UNREADABLE when the reference mask cannot be used; NOT_SCOREABLE when blank
    spatial: MaskRecord = field(default_factory=lambda: MaskRecord(status=SCORED))
    thresholds: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    temporal: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))  # TP, TN, FP, FN per threshold
    frame_count: int = 0
    spatial_scored: bool = True
    temporal_scored: bool = True
    pixel_average_auc: float = math.nan  # over the scored frames, pixel-weighted
    mask_average_auc: float = math.nan   # over the scored frames, frame-weighted
    error: str = ""                      # what went wrong with this probe's masks (the run exits 1)

    @property
    def scored(self) -> bool:
        return self.status == SCORED and (self.spatial_scored or self.temporal_scored)

    @property
    def blank_reference(self) -> bool:
        """No frame holds a pixel of the (selected) target: the video is in no table (docs/video.md §B.6)."""
        return self.status == NOT_SCOREABLE

    def temporal_at(self, threshold: float) -> TemporalCounts | None:
        """The temporal confusion at ``threshold`` (a step function between listed thresholds)."""
        if not self.temporal_scored or math.isnan(threshold) or not len(self.thresholds):
            return None
        i = int(np.searchsorted(self.thresholds, threshold, side="right")) - 1
        tp, tn, fp, fn = (int(x) for x in self.temporal[max(i, 0)])
        return TemporalCounts(tp, tn, fp, fn)

    def to_dict(self) -> dict:
        return {
            "probe_id": self.probe_id, "status": self.status, "spatial": self.spatial.to_dict(),
            "thresholds": self.thresholds.tolist(), "temporal": self.temporal.tolist(),
            "frame_count": self.frame_count, "spatial_scored": self.spatial_scored,
            "temporal_scored": self.temporal_scored, "pixel_average_auc": _json_float(self.pixel_average_auc),
            "mask_average_auc": _json_float(self.mask_average_auc), "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "VideoRecord":
        return cls(
            probe_id=data["probe_id"], status=data["status"], spatial=MaskRecord.from_dict(data["spatial"]),
            thresholds=np.asarray(data["thresholds"], dtype=np.int64),
            temporal=np.asarray(data["temporal"], dtype=np.int64).reshape(-1, 4),
            frame_count=int(data["frame_count"]), spatial_scored=bool(data["spatial_scored"]),
            temporal_scored=bool(data["temporal_scored"]),
            pixel_average_auc=_float(data["pixel_average_auc"]), mask_average_auc=_float(data["mask_average_auc"]),
            error=data["error"],
        )


def _json_float(x: float) -> float | None:
    return None if math.isnan(x) else x


def _float(x: float | None) -> float:
    return math.nan if x is None else float(x)
