"""Image mask scoring: reference selection, no-score zones, histograms, metrics."""
