"""mfscore: an evaluation backend for media forensics (detection, masks, video, provenance)."""

__version__ = "0.1.0"
