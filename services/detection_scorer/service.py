"""The detection scorer pool: the jobs of detection runs large enough to leave the aggregator (a subset's metrics
and slices of its bootstrap replicates, each reading the subset's sorted trials the aggregator stored)."""

from mfscore.services.common.scorer_pool import ScorerPool

POOL = ScorerPool(name="detection-scorer", resources=("detection",))
