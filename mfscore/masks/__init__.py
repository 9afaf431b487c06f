"""Image mask scoring: reference selection, no-score zones, histograms, metrics."""

KERNEL_SHAPES = ("box", "disc", "diamond", "gaussian", "line")  # morphology kernels of the no-score zones (mask.md §5)
MANIPULATION = "manipulation"  # the image task types (mask.md §2 -t)
SPLICE = "splice"
