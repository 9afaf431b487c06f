"""Score one mask: read the reference and system masks, build the no-score zones, histogram.

This is the only place in the mask scorer that reads images. A ``MaskJob`` carries everything a
worker needs (paths, which colours or bit-planes are selected, the options), so the same function
serves the embedded process pool and the distributed mask-scorer service.

A job's memory is a few bytes per pixel (``job_bytes_per_pixel``): the masks while they are
decoded, then at most ``JOB_MAP_BYTES`` one-byte maps, each dropped as soon as it is no longer
needed. A job whose masks would need more than ``max_job_bytes`` is refused from their headers,
before anything is decoded.

The reference mask is decoded on a reader thread while this one decodes the system mask (OpenCV releases
the GIL), when that decode needs at most ``OVERLAP_BYTES``: a 1024x768 probe's two decodes (about 6.7
and 4.2 ms) take the longer one's time; a large pair decodes one mask after the other, as the limit assumes.
A runner that scores jobs one after another names the next one (``read_next``): its reference is decoded
while the current job is scored, once the reader thread has finished the current one's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass
from functools import partial

import numpy as np

from mfscore.errors import ImageError
from mfscore.formats.images import (
    DEFAULT_MAX_PIXELS,
    ImageHeader,
    ImageSource,
    checked_header,
    file_size,
    read_colour,
    read_grey,
    read_layers,
    source_name,
)
from mfscore.limits import (
    DECODE_SAMPLE_BYTES,
    DECODED_MASK_BYTES,
    DEFAULT_MAX_JOB_BYTES,
    JOB_MAP_BYTES,
    JPEG2000_SAMPLE_BYTES,
)
from mfscore.masks.decoded_masks import DecodedMasks
from mfscore.masks.mask_record import NOT_SCOREABLE, UNREADABLE, MaskRecord, histogram_record
from mfscore.masks.noscore_zones import NoScoreZones, noscore_counts, noscore_zones
from mfscore.masks.options import ZoneOptions
from mfscore.masks.reference_selection import Selection, bitplane_selection, colour_selection


@dataclass(frozen=True)
class MaskJob:
    """One mask to score: a probe, or one side of a splice pair. A scorer of the cluster gives it its masks' files
    in memory (``ImageBytes``) instead of their paths."""

    reference_path: ImageSource | None
    system_path: ImageSource | None
    bitplanes: bool = False
    every_marked_pixel: bool = False
    selected_colours: tuple[tuple[int, int, int], ...] = ()
    selected_bitplanes: tuple[int, ...] = ()
    journal_bitplanes: tuple[int, ...] = ()
    with_distractors: bool = True
    pixel_value: int | None = None
    zones: ZoneOptions = ZoneOptions()
    max_pixels: int = DEFAULT_MAX_PIXELS
    max_job_bytes: int = DEFAULT_MAX_JOB_BYTES
    all_regions_without_zones: bool = False
    blank_size: tuple[int, int] | None = None  # (width, height) of a missing system mask; None: the reference's
    readers: int = 1  # the run's jobs that read these two masks (one per query): more keeps them decoded for the others


DECODED = DecodedMasks(DECODED_MASK_BYTES)  # a probe's masks, decoded once for its jobs under several queries
OVERLAP_BYTES = 16_000_000  # the most a system mask's decode may add to its job's memory, beside the reference's


def _reference(job: MaskJob) -> np.ndarray | None:
    """The job's reference mask decoded: a colour (or grey) image, or a bit-plane mask's layers; None without one."""
    if not job.reference_path:
        return None
    if job.bitplanes:
        return read_layers(job.reference_path, max_pixels=job.max_pixels)
    return DECODED.read(job.reference_path, ("colour", job.max_pixels),
                        lambda: read_colour(job.reference_path, max_pixels=job.max_pixels, keep_grey=True),
                        job.readers)


def _selection(job: MaskJob, reference: np.ndarray | None) -> Selection | None:
    if reference is None:
        return None
    if job.bitplanes:
        return bitplane_selection(reference, list(job.selected_bitplanes), list(job.journal_bitplanes))
    selection = colour_selection(reference, list(job.selected_colours), with_distractors=job.with_distractors)
    if job.every_marked_pixel:  # --rbin >= 0: every non-white pixel is the region (docs/masks.md §4.2)
        return Selection(selection.all_regions, np.zeros_like(selection.region), selection.all_regions)
    return selection


def _on_reader(function: Callable[[], np.ndarray]) -> Future:
    """``function()`` run on a thread of its own, which ends with it: no idle thread is left behind (a later run's
    figure worker is forked only from a process of one thread)."""
    future = Future()

    def run():
        try:
            future.set_result(function())
        except BaseException as error:  # the caller's result() raises it, as a call on its own thread would
            future.set_exception(error)

    threading.Thread(target=run, name="mask-reader").start()
    return future


def _read_system(job: MaskJob) -> np.ndarray:
    return DECODED.read(job.system_path, ("grey", job.max_pixels),
                        lambda: read_grey(job.system_path, max_pixels=job.max_pixels), job.readers)


def _read_system_beside(job: MaskJob) -> np.ndarray | ImageError | None:
    """The system mask read while the reader thread decodes the reference: its error is returned, to be reported
    only after the reference's (as the plain path does); None without a file."""
    if not job.system_path:
        return None
    try:
        return _read_system(job)
    except ImageError as error:
        return error


def _system(job: MaskJob, shape: tuple[int, int], read: np.ndarray | ImageError | None = None) -> np.ndarray:
    """The system mask (``read``, when it was read beside the reference); none given means "nothing detected",
    all 255 (docs/masks.md §4.4)."""
    if not job.system_path and job.blank_size is None:
        return np.full(shape, 255, np.uint8)
    if not job.system_path:
        system = np.full(job.blank_size[::-1], 255, np.uint8)
    elif isinstance(read, ImageError):
        raise read
    else:
        system = read if read is not None else _read_system(job)
    if system.shape != shape:
        name = source_name(job.system_path) if job.system_path else "(blank system mask of the index size)"
        raise ImageError(f"is {system.shape[1]}x{system.shape[0]} pixels but its reference mask is "
                         f"{shape[1]}x{shape[0]}", path=name)
    return system


class _ReadAhead(threading.local):
    """The reference mask of the job a thread scores next (``read_next``), decoded on a reader thread while the
    thread scores the one before: one at a time, only within ``OVERLAP_BYTES`` beside the job being scored."""

    following: MaskJob | None = None
    reading: tuple[MaskJob, Future] | None = None

    def start(self) -> None:
        job, self.following = self.following, None
        if job is not None and _may_read_ahead(job):
            self.reading = (job, _on_reader(partial(_reference, job)))

    def take(self, job: MaskJob) -> Future | None:
        """The decode started for ``job``; one started for another job (a run stopped short) is waited for, dropped."""
        reading, self.reading = self.reading, None
        if reading is None:
            return None
        if reading[0] is job:
            return reading[1]
        wait([reading[1]])
        return None


_AHEAD = _ReadAhead()


def read_next(job: MaskJob | None) -> None:
    """Name the job this thread scores after the current one (None: no other): its reference mask is decoded while
    the current one is scored, when both decodes fit within ``OVERLAP_BYTES`` (``mfscore.run.pool``)."""
    _AHEAD.following = job


def _may_read_ahead(job: MaskJob) -> bool:
    try:
        reference_decode, system_decode = _check_job_memory(job)
    except ImageError:
        return False
    return 0 < system_decode <= OVERLAP_BYTES and reference_decode <= OVERLAP_BYTES


def _unreadable(what: str, error: ImageError) -> str:
    return f"the {what} mask file {error.path} is unreadable: {error.message}"


def _size(n: int) -> str:
    """``n`` bytes in decimal units, three significant digits."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def decode_bytes(header: ImageHeader) -> int:
    """Bytes per pixel held while an image is decoded: OpenCV decodes grey to 1 channel, colour to 3
    and anything else (alpha, unknown) to at most 4, each sample costing ``DECODE_SAMPLE_BYTES``
    (``JPEG2000_SAMPLE_BYTES`` for JPEG 2000)."""
    channels = {1: 1, 3: 3}.get(header.channels, 4)
    return channels * (JPEG2000_SAMPLE_BYTES if header.format in ("jp2", "j2k") else DECODE_SAMPLE_BYTES)


def job_bytes_per_pixel(reference_decode: int, system_decode: int) -> int:
    """Peak bytes per pixel of a job (measured: docs/reliability.md), the largest of its three phases:
    decoding the reference, decoding the system mask beside three reference maps, and the no-score
    zones (``JOB_MAP_BYTES`` maps)."""
    return max(reference_decode, 3 + system_decode, JOB_MAP_BYTES)


def _declared(path: ImageSource | None, max_pixels: int) -> tuple[str, int, int, int, int] | None:
    """(name, width, height, decoding bytes per pixel, file bytes) from the header alone; None without
    a file, or for one the reader refuses before decoding it."""
    if not path:
        return None
    try:
        header = checked_header(path, max_pixels)
        return source_name(path), header.width, header.height, decode_bytes(header), file_size(path)
    except (ImageError, OSError):
        return None


def _check_job_memory(job: MaskJob) -> tuple[int, int]:
    """Refuse, from the headers alone, a job whose masks would need more than ``job.max_job_bytes``; the bytes
    decoding its reference and its system mask need (0 for a mask the reader would not decode, and for the system
    mask of a job without such a reference).

    The need is the largest declared size times ``job_bytes_per_pixel``, plus the files, which are
    read whole before they are decoded. A mask the reader refuses from its header (unreadable, over
    the pixel limit) is left to the reader to report; it is never decoded.
    """
    reference = _declared(job.reference_path, job.max_pixels)
    if reference is None:
        return 0, 0
    system = _declared(job.system_path, job.max_pixels)
    masks = [m for m in (reference, system) if m]
    sizes = [(width, height) for _, width, height, _, _ in masks]
    if job.blank_size is not None and not job.system_path:
        sizes.append(job.blank_size)
    width, height = max(sizes, key=lambda size: size[0] * size[1])
    per_pixel = job_bytes_per_pixel(reference[3], system[3] if system else 0)
    files = sum(m[4] for m in masks)
    need = width * height * per_pixel + files
    if need > job.max_job_bytes:
        paths = [m[0] for m in masks]
        subject = f"the masks {' and '.join(paths)} need" if len(paths) > 1 else f"the mask {paths[0]} needs"
        raise ImageError(f"{subject} about {_size(need)} to score ({width}x{height} pixels x {per_pixel} bytes "
                         f"+ {_size(files)} of files), more than the limit of {_size(job.max_job_bytes)} per job",
                         path=paths[0])
    return _decode_bytes(reference), _decode_bytes(system)


def _decode_bytes(declared: tuple[str, int, int, int, int] | None) -> int:
    """The bytes decoding a mask ``_declared`` needs (width x height x bytes per pixel), 0 for none."""
    if declared is None:
        return 0
    _, width, height, per_pixel, _ = declared
    return width * height * per_pixel


@dataclass
class MaskMaps:
    """The maps a scored mask's record is counted over: the reference-positive pixels as scored, the no-score zones
    (their ``weight``: the scored pixels) and the system mask as read."""

    region: np.ndarray
    zones: NoScoreZones | None
    system: np.ndarray
    missing_bitplanes: tuple[int, ...]


def mask_maps(job: MaskJob) -> MaskMaps | MaskRecord:
    """The job's maps, or the record of a mask that is not scored: unreadable files and jobs over the memory limit
    (``UNREADABLE``, naming the files), an empty selected region (``NOT_SCOREABLE``). Scoring counts the maps
    (``score_mask``); a report's per-probe visuals draw them (``mfscore.reports.mask_visuals``).

    The reference image is dropped after the selection and the distractors after the no-score zones.
    """
    reading = _AHEAD.take(job)
    try:
        _, system_decode = _check_job_memory(job)
    except ImageError as error:
        _AHEAD.start()
        return MaskRecord(status=UNREADABLE, message=error.message)
    if reading is None and 0 < system_decode <= OVERLAP_BYTES:
        reading = _on_reader(partial(_reference, job))
    system = _read_system_beside(job) if reading is not None else None
    try:
        reference = reading.result() if reading is not None else _reference(job)
    except ImageError as error:
        return MaskRecord(status=UNREADABLE, message=_unreadable("reference", error))
    finally:
        _AHEAD.start()  # the reader thread is free: the next job's reference is decoded while this one is scored
    selection = _selection(job, reference)
    del reference
    if selection is None or not selection.region.any():
        missing = selection.missing_bitplanes if selection else ()
        return MaskRecord(status=NOT_SCOREABLE, missing_bitplanes=missing)
    z = job.zones
    region, distractors, missing = selection.region, selection.distractors, selection.missing_bitplanes
    scored_region = region
    if job.all_regions_without_zones and z.erode_size == 0 and z.dilate_size == 0:
        scored_region = selection.all_regions  # docs/masks.md §5.2 side effect, kept under --mediscore-compat
    del selection
    try:
        system = _system(job, region.shape, system)
    except ImageError as error:
        return MaskRecord(status=UNREADABLE, message=_unreadable("system", error))
    zones = noscore_zones(region, distractors, system,
                          erode_size=z.erode_size, dilate_size=z.dilate_size,
                          distraction_size=z.distraction_size, kernel=z.kernel,
                          pixel_value=job.pixel_value)
    return MaskMaps(scored_region, zones, system, missing)


def score_mask(job: MaskJob) -> MaskRecord:
    """The job's record (``mask_maps`` counted), or the record ``mask_maps`` gives a mask that is not scored.

    The zones are dropped after their weight map.
    """
    maps = mask_maps(job)
    if isinstance(maps, MaskRecord):
        return maps
    counts = noscore_counts(maps.zones)
    weight = maps.zones.weight
    maps.zones = None
    return histogram_record(maps.region, weight, maps.system, pixel_bns=counts["PixelBNS"],
                            pixel_sns=counts["PixelSNS"], pixel_pns=counts["PixelPNS"],
                            missing_bitplanes=maps.missing_bitplanes, system_given=bool(job.system_path))
