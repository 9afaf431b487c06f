"""What a run leaves behind, and for how long (docs/distributed.md, "Retention").

A run that ends loses at once what only a running run needs (its queued jobs, its records, the files the aggregator
made for it, its work directory); its status, reports and input manifest stay MFSCORE_RETENTION_DAYS, then the
sweep deletes them, and the objects it alone named (``objects.Objects.collect``). A run created and never submitted
goes after a day. What fails because NATS or S3 is down is left to the next sweep.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from pathlib import Path

import nats.errors

from mfscore.errors import MfscoreError
from mfscore.services.aggregator import state
from mfscore.services.aggregator.lease import NotLeading
from mfscore.services.aggregator.run import Run, State
from mfscore.services.aggregator.state import RunBook
from mfscore.services.common import input_manifest
from mfscore.services.common.object_store import ObjectStore, ObjectStoreError
from mfscore.services.common.retry import one_line
from mfscore.services.common.run_layout import RUNS, input_prefix, run_prefix, work_dir
from mfscore.services.common.settings import Settings
from mfscore.services.common.streams import purge_run_jobs
from mfscore.services.common.subjects import RESULTS_STREAM, result_subject

SWEEP_SECONDS = 60.0              # how often clean-ups that failed are retried and expired runs deleted
STORAGE_SWEEP_SECONDS = 3600.0    # how often uploads no run claims are looked for
ORPHAN_UPLOAD_SECONDS = 86400.0   # a run created this long ago and never submitted is deleted (a client gave up)
DAY_SECONDS = 86400
log = logging.getLogger("mfscore.aggregator")


def remove_run_dirs(root: str, keep: set[str] = frozenset()) -> list[str]:
    """Delete the scratch folders under ``root`` (the aggregator's work directory) of every run but ``keep``: at
    start (this process runs no run yet, and one it resumes fetches its inputs again), and in each sweep (a run that
    ended, or that another aggregator finished); the run ids removed."""
    runs = Path(work_dir(root, "x")).parent
    removed = [path.name for path in (runs.iterdir() if runs.is_dir() else ())
               if path.name not in keep and path.is_dir() and not path.is_symlink()]
    for name in removed:
        shutil.rmtree(runs / name, ignore_errors=True)
    return removed


class Retention:
    def __init__(self, settings: Settings, store: ObjectStore, js, book: RunBook, objects=None):
        self.settings, self.store, self.js, self.book = settings, store, js, book
        self.objects = objects  # objects.Objects: what a deleted run alone named is deleted with it
        self._cleaning: set[str] = set()
        self._storage_swept = 0.0

    async def clean_up(self, run: Run) -> None:
        """Remove what a finished run no longer needs: its queued jobs, its records, the files the aggregator made for
        it (under its input prefix) and its work directory. Its input manifest stays, and so do the objects it names,
        as long as the run: a resubmission of the same files uploads nothing. When NATS or S3 is down the run is
        left to the next sweep; the run itself is not touched."""
        run_id = run.run_id
        if run_id in self._cleaning:
            return
        self._cleaning.add(run_id)
        run.cleaned = True  # first: a record that arrives meanwhile sets it back
        try:
            await purge_run_jobs(self.js, run_id)
            await self.js.purge_stream(RESULTS_STREAM, subject=result_subject(run_id))
            await asyncio.to_thread(self.store.delete_prefix, input_prefix(run_id))
            await asyncio.to_thread(shutil.rmtree, work_dir(self.settings.work_dir, run_id), ignore_errors=True)
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            run.cleaned = False
            log.warning("run %s: clean-up left to the next sweep: %s", run_id, one_line(error))
        finally:
            self._cleaning.discard(run_id)

    async def sweep(self, now: float | None = None) -> None:
        """Retry the clean-ups that failed; purge the records of runs with no state and what landed of runs that
        could not be recorded; delete the runs whose retention period is over, and those created a day ago and
        never submitted (``now`` is a Unix time, default now); now and then, delete uploads no run claims."""
        book = self.book
        if not book.connected() or not book.leading():
            return
        await asyncio.to_thread(remove_run_dirs, self.settings.work_dir,
                                keep={run_id for run_id, run in list(book.runs.items()) if not run.ended}
                                | self._cleaning)
        now = time.time() if now is None else now
        expired_before = now - self.settings.retention_days * DAY_SECONDS
        for run in list(book.runs.values()):
            status = run.status
            if run.state == State.RUN_STATE_CREATED and not run.uploading \
                    and status.submitted_at.ToSeconds() < now - ORPHAN_UPLOAD_SECONDS:
                await self._expire(run, "created a day ago and never submitted")
                continue
            if not run.ended:
                continue
            if not run.cleaned:
                await self.clean_up(run)
            ended = status.finished_at if status.HasField("finished_at") else status.submitted_at
            if ended.ToSeconds() < expired_before:
                await self._expire(run, f"its retention period of {self.settings.retention_days} day(s) is over")
        try:
            for subject in list(book.strays):
                await self.js.purge_stream(RESULTS_STREAM, subject=subject)
                book.strays.discard(subject)
            for run_id in list(book.abandoned):
                async with book.recording:
                    if run_id not in book.runs:
                        await state.purge(book.kv, run_id)
                    book.abandoned.discard(run_id)
            if now - self._storage_swept >= STORAGE_SWEEP_SECONDS:
                await self._sweep_storage(now)
                self._storage_swept = now
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            log.warning("the sweep stopped, the next one goes on: %s", one_line(error))

    async def delete(self, run: Run, why: str) -> None:
        """Delete a run that has ended, now: what its clean-up removes if that is not done yet, then its files
        (input manifest, reports), its work directory and its state in the bucket, then the objects nothing else
        names. What retention does once the retention period is over, and DeleteRun at once. Raises (NATS, S3
        unavailable) with the run still there, for another try; objects left once the run is gone are the sweep's."""
        run_id = run.run_id
        if run.ended and not run.cleaned:
            await self.clean_up(run)
        named = set()
        if self.objects is not None:
            named = input_manifest.keys(await asyncio.to_thread(input_manifest.read, self.store, run_id))
        await asyncio.to_thread(self.store.delete_prefix, run_prefix(run_id))
        await state.purge(self.book.kv, run_id)
        await asyncio.to_thread(shutil.rmtree, work_dir(self.settings.work_dir, run_id), ignore_errors=True)
        if self.book.runs.get(run_id) is run:
            del self.book.runs[run_id]
        self.book.count_states(run)
        log.info("run %s: deleted, %s", run_id, why)
        if named:
            try:
                await self.objects.collect(named)
            except (nats.errors.Error, TimeoutError, MfscoreError) as error:
                log.warning("run %s: deleting the objects it named is left to the sweep: %s", run_id, one_line(error))

    async def _expire(self, run: Run, why: str) -> None:
        """``delete`` the run, or leave it to the next sweep when NATS or S3 is down."""
        try:
            await self.delete(run, why)
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            log.warning("run %s: %s; deleting it is left to the next sweep: %s", run.run_id, why,
                        one_line(error))

    async def _sweep_storage(self, now: float) -> None:
        """Delete the objects under ``runs/`` that no run claims once nothing was written under them for
        ORPHAN_UPLOAD_SECONDS, the objects and datasets' lists of files that nothing names after as long, and the
        bucket's old deletion markers."""
        for folder in await asyncio.to_thread(self.store.folders, RUNS):
            run_id = folder[len(RUNS):].rstrip("/")
            if run_id in self.book.runs or run_id in self._cleaning:
                continue
            deleted = await asyncio.to_thread(self.store.delete_prefix, folder,
                                              written_before=now - ORPHAN_UPLOAD_SECONDS)
            if deleted:
                log.info("deleted %d uploaded file(s) under %s, which no run claims", deleted, folder)
        if self.objects is not None:
            await self.objects.sweep(now)
            await self.objects.datasets.sweep(written_before=now - ORPHAN_UPLOAD_SECONDS)
        await self.book.kv.purge_deletes(olderthan=int(STORAGE_SWEEP_SECONDS))

    async def sweep_periodically(self, interval: float = SWEEP_SECONDS) -> None:
        """``sweep`` every ``interval`` seconds, until cancelled. A sweep cut short by the lease lapsing (NATS away)
        is one warning line; the next one goes on."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except NotLeading as error:
                log.warning("the sweep stopped, the next one goes on: %s", one_line(error))
            except Exception:  # a bug: logged, and the next sweep tries again
                log.exception("the sweep failed")
