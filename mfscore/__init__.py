"""mfscore: an evaluation backend for media forensics (detection, masks, video, provenance).

``mfscore.score`` and ``mfscore.Results`` are ``mfscore.api.score`` and ``mfscore.results.Results``, imported on
first use (the command line starts without them); the rest of the public API is ``mfscore.api``.
"""

__version__ = "0.1.0"

_LAZY = {"score": "mfscore.api.scoring", "Results": "mfscore.results"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mfscore' has no attribute {name!r}")
