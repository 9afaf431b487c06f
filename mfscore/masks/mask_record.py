"""The per-mask record: everything the metrics need, in a few hundred integers.

A scorer reads a reference and a system mask once and keeps, over the scored pixels (weight 1),
the 256-bin histograms of system values on reference-positive and reference-negative pixels.
Every threshold's confusion matrix, GWL1, the soft confusion matrix and the ROC follow exactly
from these (DESIGN.md, "The central idea"). Counts are int64 end to end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SCORED = "scored"
NOT_SCOREABLE = "not_scoreable"  # mask.md §6.6: the selected reference region is empty
UNREADABLE = "unreadable"  # mask.md §4.4: the trial is left unscored, scoring continues

BINS = 256


@dataclass(frozen=True)
class MaskRecord:
    """One scored mask (a probe, or the probe or donor side of a splice pair)."""

    status: str
    positive: np.ndarray = field(default_factory=lambda: np.zeros(BINS, np.int64))
    negative: np.ndarray = field(default_factory=lambda: np.zeros(BINS, np.int64))
    present: np.ndarray = field(default_factory=lambda: np.zeros(BINS, bool))
    pixel_bns: int = 0
    pixel_sns: int = 0
    pixel_pns: int = 0
    region_pixels: int = 0
    missing_bitplanes: tuple[int, ...] = ()
    message: str = ""

    @property
    def scored(self) -> bool:
        return self.status == SCORED

    @property
    def pixel_n(self) -> int:
        return int(self.positive.sum() + self.negative.sum())

    def to_dict(self) -> dict:
        """Plain JSON-able form (the wire and the aggregator's state use it)."""
        return {
            "status": self.status,
            "positive": self.positive.tolist(),
            "negative": self.negative.tolist(),
            "present": np.flatnonzero(self.present).tolist(),
            "pixel_bns": self.pixel_bns,
            "pixel_sns": self.pixel_sns,
            "pixel_pns": self.pixel_pns,
            "region_pixels": self.region_pixels,
            "missing_bitplanes": list(self.missing_bitplanes),
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "MaskRecord":
        present = np.zeros(BINS, bool)
        present[np.asarray(data["present"], dtype=np.int64)] = True
        return cls(
            status=data["status"],
            positive=np.asarray(data["positive"], dtype=np.int64),
            negative=np.asarray(data["negative"], dtype=np.int64),
            present=present,
            pixel_bns=int(data["pixel_bns"]),
            pixel_sns=int(data["pixel_sns"]),
            pixel_pns=int(data["pixel_pns"]),
            region_pixels=int(data["region_pixels"]),
            missing_bitplanes=tuple(data["missing_bitplanes"]),
            message=data["message"],
        )


def histogram_record(region: np.ndarray, weight: np.ndarray, system: np.ndarray, *,
                     pixel_bns: int, pixel_sns: int, pixel_pns: int,
                     missing_bitplanes: tuple[int, ...] = ()) -> MaskRecord:
    """The record of one mask: ``region`` is the reference-positive map, ``weight`` the scored map."""
    scored = system[weight]
    positive_values = system[weight & region]
    positive = np.bincount(positive_values, minlength=BINS).astype(np.int64)
    negative = np.bincount(scored, minlength=BINS).astype(np.int64) - positive
    present = np.bincount(system.ravel(), minlength=BINS) > 0
    return MaskRecord(
        status=SCORED, positive=positive, negative=negative, present=present,
        pixel_bns=pixel_bns, pixel_sns=pixel_sns, pixel_pns=pixel_pns,
        region_pixels=int(np.count_nonzero(region)), missing_bitplanes=missing_bitplanes,
    )
