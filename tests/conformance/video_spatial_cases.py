"""VideoSpatialLocalizationScorer cases of MediScore's test suite (docs/compatibility.md "Video spatial-temporal
cases"), as mfscore command lines.

Paths are relative to ``tests/conformance/data``; every run writes ``<name>/<name>_*.csv`` into its own
directory. The expected files are ``videoSpatialLocalizationScorerTests/compcheckfiles/<name>_*.csv``.

The test data ships without its HDF5 masks (MediScore generates them with ``gen_masks_for_ds.py`` and
``gen_spatial_mask.py``, which are not included, docs/video.md §B.7), so only what does not depend on the
pixels can be checked: the journal table, the trial counts of the averaged table, and the non-metric
columns of the per-video table. Every metric column is unavailable.
"""

from __future__ import annotations

from dataclasses import dataclass

VS = "videoSpatialLocalizationScorerTests"
CHECKFILES = f"{VS}/compcheckfiles"
SCORED_PROBE = "397eeb72e0cf71cc295f1e9ef7eb21b6"  # the one spatial target (the others: no HDF5MaskFileName)
REFERENCE_MASK = f"reference/manipulation-video/mask/{SCORED_PROBE}-refmask.hdf5"

COMMON = ("-t", "manipulation", "--refDir", VS, "--sysDir", f"{VS}/p-vsltest_1",
          "-r", "reference/manipulation-video/MFC18_Dev2-manipulation-video-ref.csv", "-s", "p-vsltest_1.csv",
          "-x", "indexes/MFC18_Dev2-manipulation-video-index.csv", "--precision", "12", "--truncate")

# _mask_score.csv columns that do not need the masks. ScoreableTargets counts the per-video rows with
# Scored = Y and an OptimumMCC, so it needs them too (without masks the one target is unscored: 0, not 1).
TRIAL_COLUMNS = ("TaskID", "Query", "TRR", "totalTrials", "ScoreableTrials", "totalTargets", "totalOptIn",
                 "totalOptOut", "optOutScoring")

# _pervideo.csv columns MediScore writes that need the masks besides mfscore's metric columns: the
# per-threshold TPR and FPR its threshold table leaves in the row.
MEDISCORE_METRIC_EXTRAS = ("TPR", "FPR")


@dataclass(frozen=True)
class Case:
    name: str     # output prefix and checkfile stem
    extra: tuple  # options after COMMON

    @property
    def args(self) -> tuple:
        return (*COMMON, *self.extra)

    def expected(self, table: str) -> str:
        return f"{self.name}_{table}.csv"


CASES = (
    Case("test1", ()),                                                              # basic_test
    Case("test1noed", ("--eks", "0", "--dks", "0")),                                # basic_test_noed
    Case("test1oo", ("--eks", "0", "--dks", "0", "--video_opt_out")),               # basic_video_oo_test
    Case("sel1", ("--eks", "0", "--dks", "0", "--ntdks", "0",                       # selective_test_1
                  "-qm", "Operation == 'PasteSampled'")),
)

# err_test: a system mask whose frames are another size than the reference's exits 1 (MediScore builds it
# with gen_spatial_mask.py --shift_frames 8, from p-vsltest_dims, masks not included). Reproduced on
# generated data; the same common options apply, with that data's paths.
ERR_TEST = "err_test"
ERR_OPTIONS = ("-t", "manipulation", "--precision", "12", "--truncate")
