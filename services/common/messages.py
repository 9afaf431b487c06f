"""Between the core's dataclasses and the wire messages (proto/mfscore/v1): encode and decode, nothing else."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mfscore.masks.mask_record import BINS, MaskRecord
from mfscore.masks.mask_scoring import MaskJob, ZoneOptions
from services.wire import jobs_pb2, records_pb2


def mask_job_message(job: MaskJob, reference_key: str, system_key: str) -> jobs_pb2.MaskJob:
    """A planned job whose local paths became keys under the run's input prefix."""
    message = jobs_pb2.MaskJob(
        reference_key=reference_key, system_key=system_key, bitplanes=job.bitplanes,
        every_marked_pixel=job.every_marked_pixel,
        selected_colours=[jobs_pb2.Colour(b=b, g=g, r=r) for b, g, r in job.selected_colours],
        selected_bitplanes=job.selected_bitplanes, journal_bitplanes=job.journal_bitplanes,
        with_distractors=job.with_distractors, max_pixels=job.max_pixels,
        all_regions_without_zones=job.all_regions_without_zones,
        zones=jobs_pb2.ZoneOptions(erode_size=job.zones.erode_size, dilate_size=job.zones.dilate_size,
                                   distraction_size=job.zones.distraction_size, kernel=job.zones.kernel))
    if job.pixel_value is not None:
        message.pixel_value = job.pixel_value
    if job.blank_size is not None:
        message.blank_size.width, message.blank_size.height = job.blank_size
    return message


def mask_job(message: jobs_pb2.MaskJob, reference_path: str | None, system_path: str | None) -> MaskJob:
    """The core's job for a wire job whose masks were fetched to the given local paths."""
    z = message.zones
    return MaskJob(
        reference_path=reference_path, system_path=system_path, bitplanes=message.bitplanes,
        every_marked_pixel=message.every_marked_pixel,
        selected_colours=tuple((c.b, c.g, c.r) for c in message.selected_colours),
        selected_bitplanes=tuple(message.selected_bitplanes), journal_bitplanes=tuple(message.journal_bitplanes),
        with_distractors=message.with_distractors,
        pixel_value=message.pixel_value if message.HasField("pixel_value") else None,
        zones=ZoneOptions(z.erode_size, z.dilate_size, z.distraction_size, z.kernel),
        max_pixels=message.max_pixels, all_regions_without_zones=message.all_regions_without_zones,
        blank_size=(message.blank_size.width, message.blank_size.height) if message.HasField("blank_size") else None)


def mask_record_message(record: MaskRecord) -> records_pb2.MaskRecord:
    return records_pb2.MaskRecord(
        status=record.status, positive=record.positive.tolist(), negative=record.negative.tolist(),
        present=np.flatnonzero(record.present).tolist(), pixel_bns=record.pixel_bns, pixel_sns=record.pixel_sns,
        pixel_pns=record.pixel_pns, region_pixels=record.region_pixels,
        missing_bitplanes=list(record.missing_bitplanes), message=record.message)


def mask_record(message: records_pb2.MaskRecord) -> MaskRecord:
    present = np.zeros(BINS, bool)
    present[np.asarray(message.present, dtype=np.int64)] = True
    return MaskRecord(
        status=message.status, positive=np.asarray(message.positive, dtype=np.int64),
        negative=np.asarray(message.negative, dtype=np.int64), present=present, pixel_bns=message.pixel_bns,
        pixel_sns=message.pixel_sns, pixel_pns=message.pixel_pns, region_pixels=message.region_pixels,
        missing_bitplanes=tuple(message.missing_bitplanes), message=message.message)


def detection_job(trials: pd.DataFrame, score_column: str, status_column: str | None) -> jobs_pb2.DetectionJob:
    """A batch of scored-table rows; ``trials`` keeps the table's ordinals in an ``ordinal`` column."""
    statuses = trials[status_column].fillna("").astype(str) if status_column else [""] * len(trials)
    return jobs_pb2.DetectionJob(trials=[
        jobs_pb2.DetectionTrial(ordinal=int(o), confidence_score=repr(float(s)), is_target=str(t), status=st)
        for o, s, t, st in zip(trials["ordinal"], trials[score_column], trials["IsTarget"], statuses)])


def detection_records_frame(messages) -> pd.DataFrame:
    """The records of every delivered batch as the frame ``records.merge_detection_records`` takes."""
    rows = [(r.ordinal, r.score, r.is_target, r.status) for m in messages for r in m.records]
    frame = pd.DataFrame(rows, columns=["ordinal", "score", "is_target", "status"])
    return frame.astype({"ordinal": np.int64, "score": np.float64, "is_target": bool})
