"""Image mask scoring: reference selection, no-score zones, histograms, metrics."""

KERNEL_SHAPES = ("box", "disc", "diamond", "gaussian", "line")  # the no-score zones' kernels (docs/masks.md §5.1)
MANIPULATION = "manipulation"  # the image task types (docs/masks.md §2 -t)
SPLICE = "splice"
IMAGE, SCORED_PIXELS = "image", "scored"  # the pixels the paper's metrics are summed over (--extras-pixels)
