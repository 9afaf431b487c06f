"""Typed errors. Each one reaches the user as one sentence naming the file (and line).

One family under ``MfscoreError``, each class also the built-in exception a Python caller would catch
(docs/api.md "Errors"): a bad option or query is a ``ValueError``, a malformed input file a ``ValueError``, a
missing one a ``FileNotFoundError`` (an ``OSError``). The built-in bases change neither ``str()`` nor ``args``:
both are the sentence, as the command line prints it.
"""

from __future__ import annotations

import os
from errno import ENOENT


class MfscoreError(Exception):
    """Base class: a user-facing problem with the input or the options, exit status 1."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self.sentence())

    def sentence(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}"
            if self.line is not None:
                where += f", line {self.line}"
            where += ": "
        return where + self.message


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C, saying what became of the work in one sentence (``mfscore: interrupted; <sentence>``, exit 130)."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def sentence(self) -> str:
        return self.message


class InputFileError(MfscoreError, ValueError):
    """A file is missing, unreadable or malformed (bad columns, bad values, duplicate keys); a ``ValueError`` too,
    and a missing one a ``MissingFileError``."""


class MissingFileError(InputFileError, FileNotFoundError):
    """An input file that does not exist: a ``FileNotFoundError`` too, whose ``errno`` is ENOENT and ``filename``
    the path (read from ``path``, so ``str()``, ``args`` and pickling stay those of the sentence)."""

    @property
    def errno(self) -> int:
        return ENOENT

    @property
    def strerror(self) -> str:
        return os.strerror(ENOENT)

    @property
    def filename(self) -> str | None:
        return self.path


class QueryError(MfscoreError, ValueError):
    """A query string does not parse, uses a construct outside the whitelist, or names an unknown column (a
    ``ValueError`` too)."""


class OptionError(MfscoreError, ValueError):
    """An option's value refused where the options are made, or a combination of options that cannot be honoured
    (a ``ValueError`` too, as Python callers of ``mfscore.api`` expect of a bad argument).

    A refused value names its option: ``option`` is its field name in the options type (``far_stop``), ``flag``
    its command-line flag (``--farStop``), ``reason`` why it was refused without either (``mfscore.options``).
    """

    def __init__(self, message: str, *, option: str | None = None, flag: str | None = None,
                 reason: str | None = None, path: str | None = None, line: int | None = None):
        self.option = option
        self.flag = flag
        self.reason = reason if reason is not None else message
        super().__init__(message, path=path, line=line)


class QueryOptionError(OptionError, QueryError):
    """An option holding a query that does not parse: refused where the options are made, naming the option."""


class ImageError(InputFileError):
    """An image is missing, unreadable, too large, or has the wrong shape."""


class MissingImageError(ImageError, MissingFileError):
    """An image that does not exist (an ``ImageError`` and a ``FileNotFoundError``)."""
