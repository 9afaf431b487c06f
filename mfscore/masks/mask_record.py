"""The per-mask record: everything the metrics need, in a few hundred integers.

A scorer reads a reference and a system mask once and keeps, over the scored pixels (weight 1),
the 256-bin histograms of system values on reference-positive and reference-negative pixels.
Every threshold's confusion matrix, GWL1, the soft confusion matrix and the ROC follow exactly
from these (docs/architecture.md "Mergeable per-trial records"). The same two histograms over every pixel of the image
serve the metrics defined without no-score zones (Bammey et al., docs/metrics.md §2.1).
Counts are int64 end to end.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

SCORED = "scored"
NOT_SCOREABLE = "not_scoreable"  # docs/masks.md §6.6: the selected reference region is empty
UNREADABLE = "unreadable"  # docs/masks.md §4.4: the trial is left unscored, scoring continues

BINS = 256


@dataclass(frozen=True)
class MaskRecord:
    """One scored mask (a probe, or the probe or donor side of a splice pair): the per-threshold pixel counts a run's
    averages merge; JSON through ``to_dict`` and ``from_dict``.

    Examples
    --------
    >>> record = MaskRecord(status=SCORED, positive=np.eye(1, BINS, 0, dtype=np.int64)[0] * 3)
    >>> again = MaskRecord.from_dict(record.to_dict())
    >>> again.pixel_n, again.status
    (3, 'scored')
    """

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
    image_positive: np.ndarray | None = None  # as positive/negative, over every pixel of the image
    image_negative: np.ndarray | None = None
    system_given: bool = True  # False: no system mask file, scored as all white (docs/masks.md §4.4)

    @property
    def scored(self) -> bool:
        return self.status == SCORED

    @property
    def pixel_n(self) -> int:
        return int(self.positive.sum() + self.negative.sum())

    def whole_image(self) -> "MaskRecord":
        """This record with the whole image's histograms in place of the scored pixels'."""
        if self.image_positive is None or self.image_negative is None:
            raise ValueError("this record carries no whole-image histograms")
        return replace(self, positive=self.image_positive, negative=self.image_negative)

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
            "image_positive": None if self.image_positive is None else self.image_positive.tolist(),
            "image_negative": None if self.image_negative is None else self.image_negative.tolist(),
            "system_given": self.system_given,
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
            image_positive=_counts(data["image_positive"]),
            image_negative=_counts(data["image_negative"]),
            system_given=bool(data["system_given"]),
        )


def _counts(values: list | None) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=np.int64)


# Pixels per cv2.calcHist call: its float32 bins are exact only up to 2**24 counts.
_EXACT_FLOAT32 = 1 << 24


def coded_histogram(codes: np.ndarray, bins: int) -> np.ndarray:
    """Exact int64 counts of the integer ``codes`` in ``[0, bins)``.

    OpenCV's histogram is several times faster than ``np.bincount`` but counts in float32, so the
    image is cut into row bands of at most 2**24 pixels and the bands are summed as integers.
    """
    import cv2  # here, not at the top: the video-temporal scorer imports this module for no histogram

    rows = max(1, _EXACT_FLOAT32 // max(1, codes.shape[1]))
    total = np.zeros(bins, np.int64)
    for top in range(0, codes.shape[0], rows):
        counts = cv2.calcHist([codes[top:top + rows]], [0], None, [bins], [0, bins])
        total += counts.ravel().astype(np.int64)
    return total


# Pixels of neighbouring columns count into separate copies of the bins ("lanes"): a mask is
# mostly one value, and OpenCV's histogram is ~3× faster when consecutive pixels hit different bins.
_LANES = 4
# Pixels coded at a time: the 3-byte codes of a band, not of the whole image, are held at once.
_BAND_PIXELS = 1 << 22


def _codes(region: np.ndarray, weight: np.ndarray, system: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    """``value | (region + 2·weight + 4·lane) << 8`` per pixel, as uint16."""
    import cv2

    flags = cv2.add(region.view(np.uint8), cv2.add(weight.view(np.uint8), weight.view(np.uint8)))
    flags |= lanes
    codes = flags.astype(np.uint16)
    codes <<= 8
    codes |= system
    return codes


def histogram_record(region: np.ndarray, weight: np.ndarray, system: np.ndarray, *,
                     pixel_bns: int, pixel_sns: int, pixel_pns: int,
                     missing_bitplanes: tuple[int, ...] = (), system_given: bool = True) -> MaskRecord:
    """The record of one mask: ``region`` is the reference-positive map, ``weight`` the scored map.

    One histogram pass over the codes of ``_codes``, a band of rows at a time, gives all three histograms.
    """
    lanes = (np.arange(system.shape[1], dtype=np.uint8) % _LANES) << 2
    rows = max(1, _BAND_PIXELS // max(1, system.shape[1]))
    counts = np.zeros(_LANES * 4 * BINS, np.int64)
    for top in range(0, system.shape[0], rows):
        band = slice(top, top + rows)
        counts += coded_histogram(_codes(region[band], weight[band], system[band], lanes), _LANES * 4 * BINS)
    counts = counts.reshape(_LANES, 4, BINS).sum(axis=0)
    return MaskRecord(  # rows of counts: (weight, region) = 00, 01, 10, 11
        status=SCORED, positive=counts[3], negative=counts[2], present=counts.sum(axis=0) > 0,
        pixel_bns=pixel_bns, pixel_sns=pixel_sns, pixel_pns=pixel_pns,
        region_pixels=int(np.count_nonzero(region)), missing_bitplanes=missing_bitplanes,
        image_positive=counts[1] + counts[3], image_negative=counts[0] + counts[2], system_given=system_given,
    )
