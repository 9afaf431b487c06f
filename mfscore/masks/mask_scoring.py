"""Score one mask: read the reference and system masks, build the no-score zones, histogram.

This is the only place in the mask scorer that reads images. A ``MaskJob`` carries everything a
worker needs (paths, which colours or bit-planes are selected, the options), so the same function
serves the embedded process pool and the distributed mask-scorer service.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mfscore.errors import ImageError
from mfscore.formats.images import DEFAULT_MAX_PIXELS, read_colour, read_grey, read_layers
from mfscore.masks.mask_record import NOT_SCOREABLE, UNREADABLE, MaskRecord, histogram_record
from mfscore.masks.noscore_zones import noscore_counts, noscore_zones
from mfscore.masks.reference_selection import Selection, bitplane_selection, colour_selection


@dataclass(frozen=True)
class ZoneOptions:
    """Kernel sizes and shape of the no-score zones (mask.md §5)."""

    erode_size: int = 15
    dilate_size: int = 11
    distraction_size: int = 15
    kernel: str = "box"


@dataclass(frozen=True)
class MaskJob:
    """One mask to score: a probe, or one side of a splice pair."""

    reference_path: str | None
    system_path: str | None
    bitplanes: bool = False
    every_marked_pixel: bool = False
    selected_colours: tuple[tuple[int, int, int], ...] = ()
    selected_bitplanes: tuple[int, ...] = ()
    journal_bitplanes: tuple[int, ...] = ()
    with_distractors: bool = True
    pixel_value: int | None = None
    zones: ZoneOptions = ZoneOptions()
    max_pixels: int = DEFAULT_MAX_PIXELS
    all_regions_without_zones: bool = False
    blank_size: tuple[int, int] | None = None  # (width, height) of a missing system mask; None: the reference's


def _selection(job: MaskJob) -> Selection | None:
    if not job.reference_path:
        return None
    if job.bitplanes:
        layers = read_layers(job.reference_path, max_pixels=job.max_pixels)
        return bitplane_selection(layers, list(job.selected_bitplanes), list(job.journal_bitplanes))
    bgr = read_colour(job.reference_path, max_pixels=job.max_pixels)
    selection = colour_selection(bgr, list(job.selected_colours), with_distractors=job.with_distractors)
    if job.every_marked_pixel:  # --rbin >= 0: every non-white pixel is the region (mask.md §4.2)
        return Selection(selection.all_regions, np.zeros_like(selection.region), selection.all_regions)
    return selection


def _system(job: MaskJob, shape: tuple[int, int]) -> np.ndarray:
    """The system mask; none given means "nothing detected", all 255 (mask.md §4.4)."""
    if not job.system_path and job.blank_size is None:
        return np.full(shape, 255, np.uint8)
    if not job.system_path:
        system = np.full(job.blank_size[::-1], 255, np.uint8)
    else:
        system = read_grey(job.system_path, max_pixels=job.max_pixels)
    if system.shape != shape:
        raise ImageError(
            f"is {system.shape[1]}x{system.shape[0]} pixels but its reference mask is "
            f"{shape[1]}x{shape[0]}", path=job.system_path or "(blank system mask of the index size)")
    return system


def _unreadable(what: str, error: ImageError) -> str:
    return f"the {what} mask file {error.path} is unreadable: {error.message}"


def score_mask(job: MaskJob) -> MaskRecord:
    """The job's record; unreadable files give an ``UNREADABLE`` record naming the file."""
    try:
        selection = _selection(job)
    except ImageError as error:
        return MaskRecord(status=UNREADABLE, message=_unreadable("reference", error))
    if selection is None or not selection.region.any():
        missing = selection.missing_bitplanes if selection else ()
        return MaskRecord(status=NOT_SCOREABLE, missing_bitplanes=missing)
    try:
        system = _system(job, selection.region.shape)
    except ImageError as error:
        return MaskRecord(status=UNREADABLE, message=_unreadable("system", error))
    z = job.zones
    zones = noscore_zones(selection.region, selection.distractors, system,
                          erode_size=z.erode_size, dilate_size=z.dilate_size,
                          distraction_size=z.distraction_size, kernel=z.kernel,
                          pixel_value=job.pixel_value)
    counts = noscore_counts(zones)
    region = selection.region
    if job.all_regions_without_zones and z.erode_size == 0 and z.dilate_size == 0:
        region = selection.all_regions  # mask.md §5.2 side effect, kept under --mediscore-compat
    return histogram_record(region, zones.weight, system, pixel_bns=counts["PixelBNS"],
                            pixel_sns=counts["PixelSNS"], pixel_pns=counts["PixelPNS"],
                            missing_bitplanes=selection.missing_bitplanes, system_given=bool(job.system_path))
