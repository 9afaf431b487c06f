"""Score one video: stream the reference and system masks frame by frame into a ``VideoRecord``.

Each frame is tallied on its own (``frame_tally``) and its histograms are kept per frame, a few KB,
because which frames are scored is only known at the end: collars sit around the reference's
temporal intervals, which depend on every frame (docs/video.md §B.4). The pixels themselves are never
held beyond the few frames in flight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mfscore.formats.video_frames import video_frames
from mfscore.formats.video_masks import (
    DEFAULT_MAX_VIDEO_ELEMENTS,
    MaskBlock,
    VideoMaskError,
    VideoMaskFramesError,
    frame_base_hint,
    read_video_mask_layout,
)
from mfscore.masks.mask_record import BINS, NOT_SCOREABLE, SCORED, UNREADABLE, MaskRecord
from mfscore.masks.run_metrics import average_aucs
from mfscore.video.frame_tally import tally_frame, white_frame
from mfscore.video.interval_algebra import collars, frame_runs
from mfscore.video.options import FrameRules
from mfscore.video.temporal_confusion import temporal_counts
from mfscore.video.video_record import VideoRecord

Interval = tuple[int, int]


@dataclass(frozen=True)
class VideoJob:
    """Everything needed to score one probe's video masks (embedded pool or distributed worker alike)."""

    probe_id: str
    reference_path: str
    system_path: str | None           # None: no system mask, scored as all white (docs/video.md §B.2)
    frame_count: int | None           # the index FrameCount; None: from the reference mask
    rules: FrameRules = FrameRules()
    frame_size: tuple[int, int] | None = None  # (height, width) when neither mask has a block
    collar: int | None = None         # -c
    opt_out: tuple[Interval, ...] = ()  # VideoFrameOptOutSegments, with --video_opt_out
    temporal_gt_only: bool = False
    spatial: bool = True              # False: OptOutSpatial and the like, or --temporal_scoring_only
    temporal: bool = True             # False: OptOutTemporal and the like
    truncate: bool = False            # --truncate: system frames past the video's end are dropped
    mediscore_compat: bool = False
    max_elements: int = DEFAULT_MAX_VIDEO_ELEMENTS
    hdf5_frame_base: int = 0          # --hdf5-frame-base: what block names count from (docs/video.md §B.2)


def _with_hint(job: VideoJob, path: str, frame_count: int | None, *, layers: bool = False) -> str:
    """The clause ", but its blocks fit if numbered from …" when the mask fits the other numbering (docs/video.md §B.2)."""
    hint = frame_base_hint(path, frame_base=job.hdf5_frame_base, frame_count=frame_count,
                           max_elements=job.max_elements, layers=layers)
    return f", but {hint}" if hint else ""


def _read_blocks(job: VideoJob, path: str, frame_count: int | None, *, layers: bool) -> list[MaskBlock]:
    """The mask's blocks; a block before the first frame is refused with the frame-base hint if it applies."""
    try:
        return read_video_mask_layout(path, max_elements=job.max_elements, layers=layers,
                                      frame_base=job.hdf5_frame_base)
    except VideoMaskFramesError as exc:
        raise VideoMaskFramesError(exc.message + _with_hint(job, path, frame_count, layers=layers),
                                   path=path) from None


def _reference_blocks(job: VideoJob) -> tuple[list[MaskBlock], int, tuple[int, int] | None]:
    blocks = _read_blocks(job, job.reference_path, job.frame_count, layers=True)
    frame_count = job.frame_count or max((b.stop for b in blocks), default=0)
    if frame_count <= 0:
        raise VideoMaskError("the reference mask has no frame and the index gives no FrameCount",
                             path=job.reference_path)
    sizes = {(b.height, b.width) for b in blocks}
    if len(sizes) > 1:
        raise VideoMaskError(f"the reference mask's blocks have different frame sizes {sorted(sizes)}",
                             path=job.reference_path)
    past = [b for b in blocks if b.stop > frame_count]
    if past:
        raise VideoMaskError(f"the reference block starting at frame {past[0].start + 1} runs past the video's "
                             f"{frame_count} frames" + _with_hint(job, job.reference_path, frame_count, layers=True),
                             path=job.reference_path)
    return blocks, frame_count, sizes.pop() if sizes else job.frame_size


def _system_blocks(job: VideoJob, frame_count: int, size: tuple[int, int]) -> tuple[list[MaskBlock], str]:
    """The system blocks to read, and a problem to report ("" if none): a bad mask scores as all white."""
    if not job.system_path:
        return [], ""
    try:
        blocks = _read_blocks(job, job.system_path, frame_count, layers=False)
    except VideoMaskError as exc:
        return [], f"{exc.sentence()}; scored as an all-white (empty) mask"
    wrong = [b for b in blocks if (b.height, b.width) != size]
    if wrong:
        return [], (f"{job.system_path}: frames are {wrong[0].width}x{wrong[0].height} but the reference's are "
                    f"{size[1]}x{size[0]}; scored as an all-white (empty) mask")
    past = [b for b in blocks if b.stop > frame_count]
    if past and not (job.truncate or job.mediscore_compat):
        hint = _with_hint(job, job.system_path, frame_count) or " (--truncate drops such frames)"
        return [], (f"{job.system_path}: the block starting at frame {past[0].start + 1} runs past the video's "
                    f"{frame_count} frames{hint}; scored as an all-white (empty) mask")
    return [b for b in blocks if b.start < frame_count], ""


def _opt_out_intervals(job: VideoJob, frame_count: int) -> tuple[list[Interval], str]:
    past = [iv for iv in job.opt_out if max(iv) > frame_count or min(iv) < 1]
    if past and not (job.truncate or job.mediscore_compat):
        return [], (f"the opt-out interval {list(past[0])} lies outside frames 1..{frame_count} "
                    f"(--truncate clips it); no frame was opted out")
    return [(max(1, min(iv)), min(frame_count, max(iv))) for iv in job.opt_out
            if min(iv) <= frame_count and max(iv) >= 1], ""


def _frames_in(intervals: list[Interval], frame_count: int) -> np.ndarray:
    """Per-frame flags (index f-1 for frame f) of the frames the inclusive intervals cover."""
    flags = np.zeros(frame_count, bool)
    for a, b in intervals:
        flags[a - 1:b] = True
    return flags


@dataclass
class _Frames:
    """Per-frame tallies of one video (histograms as int32: one frame holds < 2**31 pixels)."""

    positive: np.ndarray
    negative: np.ndarray
    zones: np.ndarray            # PixelBNS, PixelSNS, PixelPNS, region pixels per frame
    system_min: np.ndarray
    present: np.ndarray

    @classmethod
    def empty(cls, frame_count: int) -> "_Frames":
        return cls(np.zeros((frame_count, BINS), np.int32), np.zeros((frame_count, BINS), np.int32),
                   np.zeros((frame_count, 4), np.int64), np.zeros(frame_count, np.int64), np.zeros(BINS, bool))

    def frame_record(self, i: int) -> MaskRecord:
        """Frame ``i``'s histograms, with the video's threshold set (so frame ROCs share their thresholds)."""
        return MaskRecord(status=SCORED, positive=self.positive[i].astype(np.int64),
                          negative=self.negative[i].astype(np.int64), present=self.present)


def _tally_frames(job: VideoJob, ref_blocks, sys_blocks, frame_count: int, size: tuple[int, int]) -> _Frames:
    frames = _Frames.empty(frame_count)
    blank_reference = np.zeros(size, np.uint8)
    white = white_frame(*size)
    blank = None
    references = video_frames(job.reference_path, ref_blocks, frame_count)
    systems = video_frames(job.system_path, sys_blocks, frame_count)
    for i, (reference, system) in enumerate(zip(references, systems)):
        if reference is None and system is None:
            blank = blank or tally_frame(blank_reference, white, job.rules)
            tally = blank
        else:
            tally = tally_frame(blank_reference if reference is None else reference,
                                white if system is None else system, job.rules)
        r = tally.record
        frames.positive[i], frames.negative[i] = r.positive, r.negative
        frames.zones[i] = (r.pixel_bns, r.pixel_sns, r.pixel_pns, r.region_pixels)
        frames.system_min[i] = tally.system_min
        frames.present |= r.present
    return frames


def _spatial_record(frames: _Frames, scored: np.ndarray, collared: np.ndarray, opted_out: np.ndarray,
                    frame_pixels: int) -> MaskRecord:
    """Histograms and zone counts summed over the scored frames; whole collared frames count as BNS and
    opted-out frames as PNS (docs/video.md §B.4)."""
    bns, sns, pns, region = frames.zones[scored].sum(axis=0)
    return MaskRecord(
        status=SCORED, positive=frames.positive[scored].sum(axis=0, dtype=np.int64),
        negative=frames.negative[scored].sum(axis=0, dtype=np.int64), present=frames.present,
        pixel_bns=int(bns) + frame_pixels * int(np.count_nonzero(collared)),
        pixel_sns=int(sns), pixel_pns=int(pns) + frame_pixels * int(np.count_nonzero(opted_out)),
        region_pixels=int(region),
    )


def _temporal_table(job: VideoJob, frames: _Frames, reference: list[Interval], opt_out: list[Interval],
                    frame_count: int) -> tuple[np.ndarray, np.ndarray]:
    """TP, TN, FP, FN of the frame intervals at each threshold, {-1} ∪ values present ∪ {255} (docs/video.md §B.5)."""
    thresholds = np.union1d(np.flatnonzero(frames.present), [-1, 255]).astype(np.int64)
    no_score = [] if job.mediscore_compat else opt_out  # MediScore ignores opt-out frames in time (docs)
    table = np.zeros((len(thresholds), 4), np.int64)
    for row, threshold in enumerate(thresholds):
        system = frame_runs(frames.system_min <= threshold)
        if job.mediscore_compat:  # docs/video.md §B.9: MediScore shifts system intervals by one frame
            system = [(a + 1, min(b + 1, frame_count)) for a, b in system if a + 1 <= frame_count]
        c = temporal_counts(frame_count, reference, system, collar=job.collar, no_score=no_score)
        table[row] = (c.tp, c.tn, c.fp, c.fn)
    return thresholds, table


def score_video(job: VideoJob) -> VideoRecord:
    """The probe's record; an unusable reference mask gives an UNREADABLE record naming the problem, and
    a blank one (no target pixel in any frame) a NOT_SCOREABLE record, which no table lists (docs/video.md §B.6)."""
    try:
        ref_blocks, frame_count, size = _reference_blocks(job)
        if size is None:
            raise VideoMaskError("the reference mask has no block and the index gives no frame size",
                                 path=job.reference_path)
        sys_blocks, system_problem = _system_blocks(job, frame_count, size)
        opt_out, opt_out_problem = _opt_out_intervals(job, frame_count)
        frames = _tally_frames(job, ref_blocks, sys_blocks, frame_count, size)
    except VideoMaskError as exc:
        return VideoRecord(job.probe_id, UNREADABLE, error=exc.sentence())
    problems = "; ".join(p for p in (system_problem, opt_out_problem) if p)
    if not frames.zones[:, 3].any():  # no frame has a pixel of the (selected) target: a blank reference
        return VideoRecord(job.probe_id, NOT_SCOREABLE, frame_count=frame_count, error=problems)
    height, width = size
    reference_positive = frames.positive.sum(axis=1) > 0
    reference = frame_runs(reference_positive)
    opted_out = _frames_in(opt_out, frame_count)
    collar_frames = collars(reference, job.collar, frame_count) if job.collar else []  # docs/video.md §B.4
    collared = _frames_in(collar_frames, frame_count) & ~opted_out
    skipped = job.temporal_gt_only & (frames.zones[:, 3] == 0)
    scored = ~(collared | opted_out | skipped)
    spatial = _spatial_record(frames, scored, collared & ~skipped, opted_out & ~skipped, height * width)
    pixel_auc, mask_auc = average_aucs([frames.frame_record(i) for i in np.flatnonzero(scored)])
    thresholds, table = _temporal_table(job, frames, reference, opt_out, frame_count)
    return VideoRecord(
        job.probe_id, SCORED, spatial=spatial, thresholds=thresholds, temporal=table, frame_count=frame_count,
        spatial_scored=job.spatial, temporal_scored=job.temporal, pixel_average_auc=pixel_auc,
        mask_average_auc=mask_auc, error=problems,
    )
