"""Typed errors. Each one reaches the user as one sentence naming the file (and line)."""

from __future__ import annotations


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


class InputFileError(MfscoreError):
    """A file is missing, unreadable or malformed (bad columns, bad values, duplicate keys)."""


class QueryError(MfscoreError):
    """A query string does not parse, uses a construct outside the whitelist, or names an unknown column."""


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
