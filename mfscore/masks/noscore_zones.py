"""No-score weight maps (True = scored) and their pixel counts (docs/masks.md §5).

A job's memory is a few one-byte maps per pixel (limits.py), so each map is built with at most
two image-sized temporaries (``~(D & ~E)`` as ``~D | E``, in place), and a zone that leaves out
nothing is an all-True read-only view that takes no memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mfscore.masks.kernels import dilate, erode


def _everywhere(shape: tuple[int, ...]) -> np.ndarray:
    """An all-True weight map of ``shape`` (a read-only broadcast of one value)."""
    return np.broadcast_to(np.True_, shape)


def _is_everywhere(weight: np.ndarray) -> bool:
    """Whether ``weight`` is an ``_everywhere`` map: reading its pixels one by one (a count, an ``&``) costs
    as much as a whole map's, so the counts and the weight skip it."""
    return weight.ndim > 0 and not any(weight.strides) and not weight.flags.writeable and bool(weight.flat[0])


def _count(weight: np.ndarray) -> int:
    return weight.size if _is_everywhere(weight) else int(np.count_nonzero(weight))


def _both(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a & b`` as a new map, without reading an ``_everywhere`` operand."""
    if _is_everywhere(b):
        a, b = b, a
    if _is_everywhere(a):
        return np.ones(b.shape, bool) if _is_everywhere(b) else b.copy()
    return a & b


def boundary_noscore(region: np.ndarray, erode_size: int, dilate_size: int, kernel: str) -> np.ndarray:
    """BNS weight: False on the band ``dilate(R) \\ erode(R)`` around the selected region."""
    # docs/masks.md §5.2
    if erode_size == 0 and dilate_size == 0:
        return _everywhere(region.shape)
    weight = ~dilate(region, kernel, dilate_size)
    weight |= erode(region, kernel, erode_size)
    return weight


def distraction_noscore(
    distractors: np.ndarray, region: np.ndarray, erode_size: int, dilate_size: int, kernel: str
) -> np.ndarray:
    """SNS weight: False on the dilated distractors, but never on the eroded selected region."""
    # docs/masks.md §5.3
    if not distractors.any():
        return _everywhere(distractors.shape)
    weight = ~dilate(distractors, kernel, dilate_size)
    weight |= erode(region, kernel, erode_size)
    return weight


def pixel_noscore(system: np.ndarray, value: int | None) -> np.ndarray:
    """PNS weight: False where the raw system mask equals the declared opt-out value."""
    # docs/masks.md §5.4
    if value is None or value == -1:
        return _everywhere(system.shape)
    return system != value


@dataclass(frozen=True)
class NoScoreZones:
    bns: np.ndarray
    sns: np.ndarray
    pns: np.ndarray

    @cached_property
    def weight(self) -> np.ndarray:
        weight = _both(self.bns, self.sns)
        if not _is_everywhere(self.pns):
            weight &= self.pns
        return weight


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
    # docs/masks.md §5.5
    size = zones.sns.size
    outside_sns = _count(zones.sns)
    if _is_everywhere(zones.pns):
        scored = outside_bns_and_sns = _count(zones.weight)
    else:
        outside_bns_and_sns = _count(_both(zones.bns, zones.sns))
        scored = _count(zones.weight)
    return {
        "PixelN": scored,
        "PixelSNS": size - outside_sns,
        "PixelBNS": outside_sns - outside_bns_and_sns,
        "PixelPNS": size - _count(zones.pns),
    }
