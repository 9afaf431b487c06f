"""The video-temporal task's options (``mfscore.tasks.video_temporal``): its five tables, how to score them, and
which extras to write; light to import, for the command line's flags."""

from __future__ import annotations

from dataclasses import dataclass, field

from mfscore.options import file_name, option, validate
from mfscore.video.options import TemporalOptions


@dataclass(frozen=True)
class Options:
    """A video-temporal run: its five tables, how to score them, and which extras to write."""

    index: str = field(metadata=option("-i/--path_index", path=True, help="index CSV (ProbeFileID, FrameCount)"))
    journal_mask: str = field(metadata=option("-j/--path_journalmask", path=True, help="*-ref-journalmask.csv"))
    probe_journal_join: str = field(metadata=option(
        "-p/--path_probejournaljoin", path=True, help="*-ref-probejournaljoin.csv"))
    system: str = field(metadata=option("-s/--path_sysout", path=True, help="system output CSV"))
    reference: str | None = field(default=None, metadata=option(  # only checked to be a readable table
        "-r/--path_ref", path=True, help="reference CSV (checked to exist; no column of it is used)"))
    scoring: TemporalOptions = TemporalOptions()
    dump: str | None = field(default=None, metadata=option(  # -d: the records' file name as asked (.pkl: as .csv)
        "--dump_dataframe_file_name", file_name(what="the -d file name")))
    log: bool = field(default=False, metadata=option(
        "-l/--log", help="write log.txt (each probe's intervals and counts) into the output directory"))
    html: bool = field(default=False, metadata=option(
        "-R/--html-report", help="write scores_probes.html, a plain HTML table of the per-probe scores"))
    timeline: bool = field(default=False, metadata=option(
        "-T/--timeline-report", help="write plots/timeline_<ProbeFileID>_<query>.png per probe and a Timeline column"))
    plots: bool = field(default=False, metadata=option(  # mcc_distribution.png
        "--plots", help="also draw mcc_distribution.png: each query's per-probe MCC as a histogram and a box "
                        "(mfscore extension)"))

    def __post_init__(self):
        validate(self)

    def draws(self) -> tuple[str, ...]:
        """The formats of the run's figures: the MCC distribution (``--plots``)."""
        return ("png",) if self.plots else ()
