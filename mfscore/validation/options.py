"""What a detection/localization validation run is asked to check (MediScore's validator options)."""

from __future__ import annotations

from dataclasses import dataclass

from mfscore.errors import OptionError
from mfscore.limits import (
    DEFAULT_MAX_FINDINGS,
    DEFAULT_MAX_PIXELS,
    DEFAULT_MAX_TABLE_BYTES,
    DEFAULT_MAX_VIDEO_ELEMENTS,
    HARD_MAX_FINDINGS,
    HARD_MAX_PIXELS,
)

VALIDATION_TYPES = ("SSD", "SSD-video", "SSD-event", "SSD-camera", "DSD")
# nc2017: MediScore's rules (EXPID names, any real score); mfc2019: SubID names, scores in [0, 1]
# (MFC2019 plan §5.1.1.1 and Appendix A); semafor: SubID names, any real score (log-likelihood ratios).
PLANS = ("nc2017", "mfc2019", "semafor")


@dataclass(frozen=True)
class ValidatorOptions:
    kind: str = "SSD"
    name_check: bool = False
    ncid: str = "NC17"
    plan: str = "nc2017"
    reference: str | None = None       # -r: limit mask and status checks to target trials
    index_filter: bool = False         # -xF: rows missing from the index are not reported
    neglect_mask: bool = False         # -nm
    neglect_pixel: bool = False        # -np: skip the opt-out column and pixel-value checks
    ignore_eof: bool = False           # video: out-of-range intervals are warnings
    ignore_overlap: bool = False       # video: intersecting intervals are warnings
    revised_name: str | None = None    # --output_revised_system
    mediscore_compat: bool = False
    max_pixels: int = DEFAULT_MAX_PIXELS
    max_table_bytes: int = DEFAULT_MAX_TABLE_BYTES
    max_video_elements: int = DEFAULT_MAX_VIDEO_ELEMENTS
    hdf5_frame_base: int = 0           # video: HDF5 block names count from 0 (MFC2019 plan) or 1 (MediScore)
    max_findings: int = DEFAULT_MAX_FINDINGS  # findings listed; the others are counted (findings.ValidationReport)

    def __post_init__(self):
        if self.hdf5_frame_base not in (0, 1):  # options also arrive decoded from the wire
            raise OptionError(f"--hdf5-frame-base {self.hdf5_frame_base}: block names count from 0 or 1")
        if not 1 <= self.max_pixels <= HARD_MAX_PIXELS:
            raise OptionError(f"--max-pixels {self.max_pixels}: the pixel limit is in [1, {HARD_MAX_PIXELS}]")
        check_max_findings(self.max_findings)

    @property
    def scores_in_unit_interval(self) -> bool:
        return self.plan == "mfc2019"


def check_max_findings(value: int) -> None:
    """``--max-findings``, of either validator: ``OptionError`` outside [1, HARD_MAX_FINDINGS]."""
    if not 1 <= value <= HARD_MAX_FINDINGS:
        raise OptionError(f"--max-findings {value}: the number of findings listed is in [1, {HARD_MAX_FINDINGS}]")
