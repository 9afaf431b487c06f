"""The detection scorer pool (a detection run's subset metrics and bootstrap slices)."""
