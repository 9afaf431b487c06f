"""No-score weight maps (True = scored) and their pixel counts (spec mask.md §5)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mfscore.masks.kernels import dilate, erode


def boundary_noscore(region: np.ndarray, erode_size: int, dilate_size: int, kernel: str) -> np.ndarray:
    """BNS weight: False on the band ``dilate(R) \\ erode(R)`` around the selected region."""
    # mask.md §5.2
    if erode_size == 0 and dilate_size == 0:
        return np.ones(region.shape, bool)
    return ~(dilate(region, kernel, dilate_size) & ~erode(region, kernel, erode_size))


def distraction_noscore(
    distractors: np.ndarray, region: np.ndarray, erode_size: int, dilate_size: int, kernel: str
) -> np.ndarray:
    """SNS weight: False on the dilated distractors, but never on the eroded selected region."""
    # mask.md §5.3
    if not distractors.any():
        return np.ones(distractors.shape, bool)
    return ~dilate(distractors, kernel, dilate_size) | erode(region, kernel, erode_size)


def pixel_noscore(system: np.ndarray, value: int | None) -> np.ndarray:
    """PNS weight: False where the raw system mask equals the declared opt-out value."""
    # mask.md §5.4
    if value is None or value == -1:
        return np.ones(system.shape, bool)
    return system != value


@dataclass(frozen=True)
class NoScoreZones:
    bns: np.ndarray
    sns: np.ndarray
    pns: np.ndarray

    @cached_property
    def weight(self) -> np.ndarray:
        return self.bns & self.sns & self.pns


def noscore_zones(
    region: np.ndarray,
    distractors: np.ndarray,
    system: np.ndarray,
    *,
    erode_size: int,
    dilate_size: int,
    distraction_size: int,
    kernel: str,
    pixel_value: int | None,
) -> NoScoreZones:
    """The three weight maps of one trial."""
    return NoScoreZones(
        bns=boundary_noscore(region, erode_size, dilate_size, kernel),
        sns=distraction_noscore(distractors, region, erode_size, distraction_size, kernel),
        pns=pixel_noscore(system, pixel_value),
    )


def noscore_counts(zones: NoScoreZones) -> dict[str, int]:
    """PixelN/SNS/BNS/PNS as MediScore reports them.

    SNS takes priority over BNS, but PNS is counted regardless, so PNS pixels inside the other
    zones are counted twice and the four counts can exceed the image size.
    """
    # mask.md §5.5
    return {
        "PixelN": int(np.count_nonzero(zones.weight)),
        "PixelSNS": int(np.count_nonzero(~zones.sns)),
        "PixelBNS": int(np.count_nonzero(~zones.bns & zones.sns)),
        "PixelPNS": int(np.count_nonzero(~zones.pns)),
    }
