"""The mask scorer: one image mask job (a probe, or one side of a splice pair) to its histogram record."""
