"""The provenance scorer pool: the tasks whose jobs read a system's provenance JSON."""

from mfscore.services.common.scorer_pool import ScorerPool

POOL = ScorerPool(name="provenance-scorer", resources=("json",))
