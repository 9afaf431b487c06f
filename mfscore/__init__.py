"""mfscore: an evaluation backend for media forensics (detection, masks, video, provenance).

``mfscore.score`` and ``mfscore.Results`` are ``mfscore.api.score`` and ``mfscore.results.Results``, imported on
first use (the command line starts without them); ``dir(mfscore)`` and ``help(mfscore)`` list them. The rest of
the public API is ``mfscore.api``; generated sample data is ``mfscore.sample_data``.
"""

__version__ = "0.1.0"

_LAZY = {"score": "mfscore.api.scoring", "Results": "mfscore.results"}
__all__ = list(_LAZY)


def __getattr__(name: str):
    """``score`` and ``Results``, imported on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mfscore' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and the lazy ones, which ``dir()`` would not see until they were first used."""
    return sorted({*globals(), *_LAZY})
