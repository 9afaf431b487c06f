"""Generated video localization data: HDF5 reference and system masks plus MediScore's CSV tables.

MediScore's video test data ships without its masks, so mfscore writes its own. A dataset is
declared as a list of small ``VideoCase`` records (one per probe video); ``write_video_dataset``
writes what ``mfscore video-spatial`` reads and ``write_temporal_dataset`` what
``mfscore video-temporal`` reads (docs/video.md §A.2, §B.2). Used by ``make demo``, the benchmark and
the tests.

Frame conventions (those of ``mfscore.formats.video_masks``): HDF5 groups are named by a block's
**0-indexed** start frame, and volume index f is frame f + 1 of the 1-based temporal intervals
``[1, FrameCount]``. Reference masks hold bit-plane codes (bit b-1 of layer (b-1)//8 is bit-plane
b; frames outside every block read as 0); system masks hold 0 (manipulated) .. 255 (not
manipulated; frames outside every block read as 255).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import h5py
import numpy as np
import pandas as pd

from mfscore.formats.tables import write_table
from mfscore.sample_data.masks import COLOURS, OPERATIONS

Interval = tuple[int, int]  # [a, b]: 1-based frames a..b inclusive
Blocks = Mapping[int, np.ndarray]  # 0-indexed start frame -> uint8 block

REFERENCE_DIR = "reference/manipulation-video"


class JournalEntry(NamedTuple):
    """One journal operation of a probe; a plain ``(operation, bitplane, video_frames)`` tuple works too.

    ``bitplane`` None leaves the BitPlane cell empty (an operation without a mask, e.g. OutputAVI).
    ``video_frames`` None derives the VideoFrame intervals from the frames where the bit-plane is set
    in the reference mask.
    """

    operation: str
    bitplane: int | None = None
    video_frames: Sequence[Interval] | None = None
    purpose: str | None = None  # None: the purpose mask.py gives the operation, else empty


@dataclass(frozen=True, eq=False)
class VideoCase:
    """One probe video: its reference and system masks as blocks, journal, and system-output cells.

    ``reference_blocks`` None writes no reference mask (empty HDF5MaskFileName); ``system_blocks``
    None writes no system mask (empty OutputProbeMaskFileName). An empty mapping writes an HDF5 file
    without blocks (all-zero reference, all-white system).
    """

    probe_id: str
    frame_count: int
    height: int
    width: int
    reference_blocks: Blocks | None = None
    system_blocks: Blocks | None = None
    journal: Sequence[JournalEntry | tuple] = ()
    status: str = "Processed"
    frame_segments: str = "[]"  # VideoFrameSegments
    opt_out_segments: str = "[]"  # VideoFrameOptOutSegments
    pixel_value: str = ""  # ProbeOptOutPixelValue
    audio_segments: str = "[]"  # AudioSampleSegments
    confidence: float = 0.5
    is_target: bool = True
    task_designation: str = "spatial-temporal"  # index VideoTaskDesignation
    frame_rate: float = 30.0
    journal_name: str | None = None  # None: "J<probe_id>"; "" when the journal is empty
    reference_extra: Mapping[str, str] = field(default_factory=dict)  # more reference columns (for -q)

    def __post_init__(self):
        for what, blocks, dims in (("reference", self.reference_blocks, (3, 4)), ("system", self.system_blocks, (3,))):
            for start, data in (blocks or {}).items():
                if int(start) < 0 or not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim not in dims:
                    raise ValueError(f"{self.probe_id}: {what} block {start} must be a uint8 array of "
                                     f"{' or '.join(map(str, dims))} dimensions at a start frame >= 0")
        object.__setattr__(self, "journal", tuple(JournalEntry(*entry) for entry in self.journal))

    @property
    def journal_id(self) -> str:
        if self.journal_name is not None:
            return self.journal_name
        return f"J{self.probe_id}" if self.journal else ""

    def reference_volume(self) -> np.ndarray | None:
        """The whole reference, (frame_count, H, W[, layers]), uncovered frames 0; None without a mask."""
        return None if self.reference_blocks is None else assemble(self.reference_blocks, self.frame_count, 0)

    def system_volume(self) -> np.ndarray | None:
        """The whole system mask, (frame_count, H, W), uncovered frames 255; None without a mask."""
        return None if self.system_blocks is None else assemble(self.system_blocks, self.frame_count, 255,
                                                                 shape=(self.height, self.width))


@dataclass(frozen=True)
class VideoDatasetPaths:
    """Where ``write_video_dataset`` put things; ``reference``/``index`` are relative to ``root``,
    ``system`` to ``system_dir`` (as the -r/-x/-s options take them)."""

    root: Path
    reference: str
    index: str
    system_dir: Path
    system: str

    def cli_args(self) -> list[str]:
        """The input options of ``mfscore video-spatial`` for this dataset."""
        return ["--refDir", str(self.root), "-r", self.reference, "-x", self.index,
                "--sysDir", str(self.system_dir), "-s", self.system]


@dataclass(frozen=True)
class TemporalDatasetPaths:
    """The five input files of ``mfscore video-temporal`` (absolute paths)."""

    reference: Path
    index: Path
    journal_mask: Path
    probe_journal_join: Path
    system: Path

    def cli_args(self) -> list[str]:
        return ["-r", str(self.reference), "-i", str(self.index), "-j", str(self.journal_mask),
                "-p", str(self.probe_journal_join), "-s", str(self.system)]


# --------------------------------------------------------------------------------------------
# Drawing helpers


def rectangle_track(frame_count: int, height: int, width: int, *, frames: Interval,
                    box: tuple[int, int, int, int], step: tuple[int, int] = (0, 0)) -> np.ndarray:
    """Boolean (frame_count, height, width): a rectangle ``box = (top, left, box_height, box_width)``
    on frames a..b of ``frames`` (1-based, inclusive), moving ``step = (dy, dx)`` pixels per frame;
    clipped to the frame."""
    track = np.zeros((frame_count, height, width), bool)
    top, left, h, w = box
    first, last = max(1, frames[0]), min(frame_count, frames[1])
    for f in range(first, last + 1):
        y, x = top + step[0] * (f - frames[0]), left + step[1] * (f - frames[0])
        track[f - 1, max(0, y):max(0, y + h), max(0, x):max(0, x + w)] = True
    return track


def reference_codes(planes: Mapping[int, np.ndarray]) -> np.ndarray:
    """uint8 bit-plane codes from one boolean volume per bit-plane (numbered from 1).

    (frames, H, W) when every bit-plane is <= 8, else (frames, H, W, layers), layer l holding
    bit-planes 8l+1 .. 8l+8.
    """
    shape = next(iter(planes.values())).shape
    layers = max(1, (max(planes) + 7) // 8)
    codes = np.zeros((*shape, layers), np.uint8)
    for plane, region in planes.items():
        codes[..., (plane - 1) // 8] |= np.where(region, np.uint8(1 << ((plane - 1) % 8)), np.uint8(0))
    return codes[..., 0] if layers == 1 else codes


def system_volume(shape: tuple[int, int, int], marks: Sequence[tuple[np.ndarray, int]]) -> np.ndarray:
    """uint8 (frames, H, W) system mask: 255 everywhere, then each ``(region, value)`` darkens its
    region to ``value`` (the darkest value wins where regions overlap)."""
    volume = np.full(shape, 255, np.uint8)
    for region, value in marks:
        volume[region] = np.minimum(volume[region], np.uint8(value))
    return volume


def frame_intervals(volume: np.ndarray, *, background: int) -> list[Interval]:
    """1-based runs of frames that hold any pixel other than ``background``."""
    active = (volume != background).reshape(len(volume), -1).any(axis=1)
    return _runs(active)


def _runs(active: np.ndarray) -> list[Interval]:
    """1-based inclusive runs of True in a per-frame boolean vector."""
    edges = np.diff(np.r_[0, active.astype(np.int8), 0])
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(a) + 1, int(b)) for a, b in zip(starts, stops, strict=True)]


def blocks_from_volume(volume: np.ndarray, *, background: int, pad: int = 0) -> dict[int, np.ndarray]:
    """Split a whole volume into HDF5 blocks: the runs of frames holding a non-background pixel,
    widened by ``pad`` frames each side (merged where they meet). Keys are 0-indexed start frames."""
    blocks: dict[int, np.ndarray] = {}
    merged: list[list[int]] = []
    for a, b in frame_intervals(volume, background=background):
        start, stop = max(0, a - 1 - pad), min(len(volume), b + pad)  # 0-indexed, stop exclusive
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    for start, stop in merged:
        blocks[start] = np.ascontiguousarray(volume[start:stop])
    return blocks


def assemble(blocks: Blocks, frame_count: int, fill: int, *, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The whole volume of ``frame_count`` frames from blocks; uncovered frames hold ``fill``;
    frames past ``frame_count`` are dropped. ``shape`` (H, W[, layers]) is needed without blocks."""
    if blocks:
        shape = next(iter(blocks.values())).shape[1:]
    volume = np.full((frame_count, *shape), fill, np.uint8)
    for start, data in blocks.items():
        stop = min(frame_count, int(start) + len(data))
        if stop > int(start):
            volume[int(start):stop] = data[:stop - int(start)]
    return volume


def interval_text(intervals: Sequence[Interval]) -> str:
    """An interval list cell: ``[[a,b],[c,d]]`` or ``[]``."""
    return json.dumps([[int(a), int(b)] for a, b in intervals], separators=(",", ":"))


def write_mask_blocks(path: str | Path, blocks: Blocks, *, compression: str | None = None) -> None:
    """An HDF5 mask: group ``<start>`` with dataset ``masks`` per block; compressed blocks are
    chunked one frame per chunk (how a streaming reader wants them)."""
    with h5py.File(path, "w") as f:
        for start, data in sorted(blocks.items()):
            options = {} if compression is None else {"compression": compression, "chunks": (1, *data.shape[1:])}
            f.create_dataset(f"{int(start)}/masks", data=data, **options)


# --------------------------------------------------------------------------------------------
# Tables


def _journal_rows(case: VideoCase) -> tuple[list[dict], list[dict]]:
    """(probe-journal join rows, journal-mask rows) of one probe."""
    joins, journal = [], []
    reference = case.reference_volume()
    name = case.journal_id
    for i, entry in enumerate(case.journal):
        start, end = f"{name}_{i:02d}", f"{name}_{i + 1:02d}"
        frames = entry.video_frames
        if frames is None:
            frames = [] if reference is None or entry.bitplane is None else _plane_intervals(reference, entry.bitplane)
        purpose = entry.purpose if entry.purpose is not None else OPERATIONS.get(entry.operation, ("",))[0]
        joins.append({"ProbeFileID": case.probe_id, "JournalName": name, "StartNodeID": start, "EndNodeID": end,
                      "Sequence": str(len(case.journal) - i),
                      "BitPlane": "" if entry.bitplane is None else str(entry.bitplane)})
        journal.append({"JournalName": name, "StartNodeID": start, "EndNodeID": end, "Operation": entry.operation,
                        "Color": " ".join(map(str, COLOURS[i % len(COLOURS)])), "Purpose": purpose,
                        "OperationArgument": "", "AutoDesignName": "", "VideoTime": "[]",
                        "VideoFrame": interval_text(frames), "AudioTime": "[]", "AudioFrame": "[]"})
    return joins, journal


def _plane_intervals(reference: np.ndarray, plane: int) -> list[Interval]:
    """1-based runs of frames where bit-plane ``plane`` is set somewhere."""
    codes = reference if reference.ndim == 4 else reference[..., None]
    layer = (plane - 1) // 8
    if layer >= codes.shape[-1]:
        return []
    bit = (codes[..., layer] >> ((plane - 1) % 8)) & 1
    return _runs(bit.reshape(len(bit), -1).any(axis=1))


def _index_row(case: VideoCase) -> dict:
    return {"TaskID": "manipulation", "ProbeFileID": case.probe_id, "ProbeFileName": f"probe/{case.probe_id}.mp4",
            "ProbeWidth": str(case.width), "ProbeHeight": str(case.height),
            "ProbeFileSize": str(case.frame_count * case.height * case.width), "HPDeviceID": "",
            "FrameCount": str(case.frame_count), "FrameRate": repr(float(case.frame_rate)),
            "VideoTaskDesignation": case.task_designation}


def _reference_row(case: VideoCase, mask_name: str) -> dict:
    return {"TaskID": "manipulation", "ProbeFileID": case.probe_id, "ProbeFileName": f"probe/{case.probe_id}.mp4",
            "IsTarget": "Y" if case.is_target else "N", "ProbeMaskFileName": "", "ProbeBitPlaneMaskFileName": "",
            "HDF5MaskFileName": mask_name, "JournalName": case.journal_id, **case.reference_extra}


def _write_journal_tables(stem: Path, cases: Sequence[VideoCase]) -> None:
    joins, journal = [], []
    for case in cases:
        j, m = _journal_rows(case)
        joins += j
        journal += m
    join_columns = ["ProbeFileID", "JournalName", "StartNodeID", "EndNodeID", "Sequence", "BitPlane"]
    mask_columns = ["JournalName", "StartNodeID", "EndNodeID", "Operation", "Color", "Purpose", "OperationArgument",
                    "AutoDesignName", "VideoTime", "VideoFrame", "AudioTime", "AudioFrame"]
    write_table(pd.DataFrame(joins, columns=join_columns), f"{stem}-probejournaljoin.csv")
    masks = pd.DataFrame(journal, columns=mask_columns).drop_duplicates(["JournalName", "StartNodeID", "EndNodeID"])
    write_table(masks, f"{stem}-journalmask.csv")


def _check_unique(cases: Sequence[VideoCase]) -> None:
    ids = [case.probe_id for case in cases]
    if len(set(ids)) != len(ids):
        raise ValueError("two cases share a probe_id")


def write_video_dataset(root: str | Path, cases: Sequence[VideoCase], *, name: str = "mfscore-video",
                        system_dir: str | Path | None = None, compression: str | None = None) -> VideoDatasetPaths:
    """Write a video spatial-temporal localization dataset and one system's output.

    Under ``root``: ``reference/manipulation-video/<name>-ref.csv`` (+ ``-probejournaljoin.csv``,
    ``-journalmask.csv``) and the reference masks in ``reference/manipulation-video/mask/``;
    ``indexes/<name>-index.csv``. Under ``system_dir`` (default ``root/sys``): ``<name>.csv`` and
    the system masks in ``mask/``. ``compression`` ("gzip", "lzf") compresses the HDF5 blocks.
    """
    _check_unique(cases)
    root = Path(root)
    sys_dir = Path(system_dir) if system_dir is not None else root / "sys"
    for sub in (root / REFERENCE_DIR / "mask", root / "indexes", sys_dir / "mask"):
        sub.mkdir(parents=True, exist_ok=True)
    paths = VideoDatasetPaths(root, f"{REFERENCE_DIR}/{name}-ref.csv", f"indexes/{name}-index.csv", sys_dir, f"{name}.csv")
    references, index, system = [], [], []
    for case in cases:
        ref_name = ""
        if case.reference_blocks is not None:
            ref_name = f"{REFERENCE_DIR}/mask/{case.probe_id}-refmask.hdf5"
            write_mask_blocks(root / ref_name, case.reference_blocks, compression=compression)
        sys_name = ""
        if case.system_blocks is not None:
            sys_name = f"mask/{case.probe_id}-mask.hdf5"
            write_mask_blocks(sys_dir / sys_name, case.system_blocks, compression=compression)
        references.append(_reference_row(case, ref_name))
        index.append(_index_row(case))
        system.append({"ProbeFileID": case.probe_id, "ConfidenceScore": repr(float(case.confidence)),
                       "ProbeStatus": case.status, "OutputProbeMaskFileName": sys_name,
                       "VideoFrameSegments": case.frame_segments, "AudioSampleSegments": case.audio_segments,
                       "VideoFrameOptOutSegments": case.opt_out_segments, "ProbeOptOutPixelValue": case.pixel_value})
    write_table(pd.DataFrame(references).fillna(""), root / paths.reference)
    _write_journal_tables(root / paths.reference.removesuffix(".csv"), cases)
    write_table(pd.DataFrame(index), root / paths.index)
    write_table(pd.DataFrame(system), sys_dir / paths.system)
    return paths


def write_temporal_dataset(root: str | Path, cases: Sequence[VideoCase], *,
                           name: str = "mfscore-videotemploc") -> TemporalDatasetPaths:
    """Write the inputs of the temporal scorer (docs/video.md §A.2) for ``cases`` (their masks are
    not written; the reference is the journal's VideoFrame intervals, the system output the
    VideoFrameSegments / VideoFrameOptOutSegments cells).

    Files: ``root/reference/manipulation-video/<name>-ref.csv`` (+ ``-probejournaljoin.csv``,
    ``-journalmask.csv``), ``root/indexes/<name>-index.csv``, ``root/sys/<name>.csv``.
    """
    _check_unique(cases)
    root = Path(root)
    for sub in (REFERENCE_DIR, "indexes", "sys"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    stem = root / REFERENCE_DIR / f"{name}-ref"
    paths = TemporalDatasetPaths(Path(f"{stem}.csv"), root / "indexes" / f"{name}-index.csv",
                                 Path(f"{stem}-journalmask.csv"), Path(f"{stem}-probejournaljoin.csv"),
                                 root / "sys" / f"{name}.csv")
    write_table(pd.DataFrame([_reference_row(case, "") for case in cases]).fillna(""), paths.reference)
    _write_journal_tables(stem, cases)
    write_table(pd.DataFrame([_index_row(case) for case in cases]), paths.index)
    system = [{"ProbeFileID": case.probe_id, "ConfidenceScore": repr(float(case.confidence)),
               "ProbeStatus": case.status, "VideoFrameSegments": case.frame_segments,
               "AudioSampleSegments": case.audio_segments, "VideoFrameOptOutSegments": case.opt_out_segments}
              for case in cases]
    write_table(pd.DataFrame(system), paths.system)
    return paths


# --------------------------------------------------------------------------------------------
# The demo's videos


def sample_video_cases(*, frame_count: int = 40, height: int = 32, width: int = 48) -> list[VideoCase]:
    """Four small videos: a processed probe found fairly well (with a false alarm), an opted-out
    probe, a probe without a system mask, and a probe with a distractor bit-plane (layer 2) and an
    opt-out frame range; ``-qm "Operation == 'PasteSampled'"`` scores only its first operation."""
    fc, h, w = frame_count, height, width
    shape = (fc, h, w)

    # 1. Processed: a box moving right over frames 10-25; the system sees it one frame late, a
    # little offset and grey, and raises a false alarm on frames 30-33.
    paste = rectangle_track(fc, h, w, frames=(10, 25), box=(6, 4, 18, 20), step=(0, 1))
    found = rectangle_track(fc, h, w, frames=(11, 25), box=(7, 5, 18, 20), step=(0, 1))
    alarm = rectangle_track(fc, h, w, frames=(30, 33), box=(2, 30, 8, 10))
    edge = found & ~np.roll(found, 3, axis=2)  # its left 3 columns are only lightly suspected
    sys1 = system_volume(shape, [(found & ~edge, 40), (edge, 120), (alarm, 180)])
    ref1 = reference_codes({1: paste})
    processed = VideoCase("vid0001processed", fc, h, w, reference_blocks=blocks_from_volume(ref1, background=0),
                          system_blocks=blocks_from_volume(sys1, background=255, pad=1),
                          journal=[("OutputAVI", None, []), ("PasteSampled", 1)],
                          frame_segments=interval_text(frame_intervals(sys1, background=255)), confidence=0.9)

    # 2. Opted out of localization: a reference, no system mask.
    splice = rectangle_track(fc, h, w, frames=(5, 30), box=(10, 10, 16, 24))
    opted = VideoCase("vid0002optout", fc, h, w, reference_blocks={0: reference_codes({1: splice})},
                      journal=[("PasteSplice", 1)], status="OptOutLocalization", confidence=0.4)

    # 3. Processed but no mask given: scored against an all-white system mask.
    removed = rectangle_track(fc, h, w, frames=(20, 39), box=(4, 20, 20, 22), step=(0, -1))
    missing = VideoCase("vid0003nomask", fc, h, w, reference_blocks=blocks_from_volume(reference_codes({2: removed}), background=0),
                        journal=[("FillContentAwareFill", 2)], confidence=0.6)

    # 4. Two operations: PasteSampled (bit-plane 1) and a Blur (bit-plane 9, the second layer) next to
    # it, which -qm "Operation == 'PasteSampled'" turns into a distractor; frames 36-40 opted out.
    target = rectangle_track(fc, h, w, frames=(8, 28), box=(4, 2, 18, 18))
    blur = rectangle_track(fc, h, w, frames=(15, 38), box=(12, 26, 16, 20))
    ref4 = reference_codes({1: target, 9: blur})
    blur_found = rectangle_track(fc, h, w, frames=(17, 38), box=(14, 24, 16, 20))  # late and a little off
    sys4 = system_volume(shape, [(target, 20), (blur_found, 90),
                                 (rectangle_track(fc, h, w, frames=(36, 40), box=(0, 0, h, w)), 200)])
    distractor = VideoCase("vid0004distractor", fc, h, w, reference_blocks=blocks_from_volume(ref4, background=0),
                           system_blocks={0: sys4}, journal=[("PasteSampled", 1), ("Blur", 9)],
                           frame_segments=interval_text(frame_intervals(sys4, background=255)),
                           opt_out_segments="[[36,40]]", confidence=0.8)
    return [processed, opted, missing, distractor]


def sample_video_dataset(root: str | Path, *, compression: str | None = None) -> VideoDatasetPaths:
    """The demo's spatial-temporal dataset (``sample_video_cases``) under ``root``."""
    return write_video_dataset(root, sample_video_cases(), compression=compression)


def sample_temporal_dataset(root: str | Path) -> TemporalDatasetPaths:
    """The demo's temporal dataset: the same four videos' journal and system intervals."""
    return write_temporal_dataset(root, sample_video_cases())


def generate_temporal_dataset(root: str | Path, n_probes: int = 400, *, seed: int = 7) -> TemporalDatasetPaths:
    """``n_probes`` random videos for ``mfscore video-temporal`` (no masks): 300–3,000 frames, one to
    three journal operations each with one to three VideoFrame intervals, a system that finds them a
    few frames off and raises a false alarm now and then, and an opt-out range on one probe in five."""
    rng = np.random.default_rng(seed)
    operations = list(OPERATIONS)
    cases = []
    for i in range(n_probes):
        frames = int(rng.integers(300, 3001))
        journal, found = [], []
        for k in range(int(rng.integers(1, 4))):
            starts = np.sort(rng.choice(frames - 40, int(rng.integers(1, 4)), replace=False)) + 1
            spans = [(int(a), int(min(a + rng.integers(5, 40), frames))) for a in starts]
            journal.append(JournalEntry(operations[int(rng.integers(len(operations)))], k + 1, spans))
            shift = rng.integers(-4, 5, size=2)
            found += [(max(1, a + int(shift[0])), min(frames, b + int(shift[1]))) for a, b in spans
                      if rng.random() < 0.8]
        if rng.random() < 0.3:
            a = int(rng.integers(1, frames - 20))
            found.append((a, a + 10))
        opt_out = f"[[{frames - 30},{frames}]]" if rng.random() < 0.2 else "[]"
        cases.append(VideoCase(f"vid{i:05d}", frames, 1080, 1920, journal=journal,
                               frame_segments=interval_text(sorted(found)), opt_out_segments=opt_out,
                               confidence=round(float(rng.random()), 4), is_target=rng.random() < 0.9,
                               reference_extra={"Collection": str(rng.choice(["alpha", "beta"]))}))
    return write_temporal_dataset(root, cases)
