"""Image mask scoring: reference selection, no-score zones, histograms, metrics."""

KERNEL_SHAPES = ("box", "disc", "diamond", "gaussian", "line")  # morphology kernels of the no-score zones (mask.md §5)
