"""The mask scorer pool: image masks (PNG) and video masks (HDF5), the tasks whose jobs read pixels."""

from mfscore.services.common.scorer_pool import ScorerPool

POOL = ScorerPool(name="mask-scorer", resources=("mask", "video"))
