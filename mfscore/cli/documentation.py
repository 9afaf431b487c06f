"""Help texts that point at a documentation page name its installed path (there is no public URL yet).

``see(parser, "compatibility.md")`` gives ``"see /…/mfscore/docs/compatibility.md"`` and makes the
parser's help wrap between words only, so the path is printed whole (argparse would otherwise cut it
at a hyphen, as in ``site-packages``, or wherever it passes the terminal's width).
"""

from __future__ import annotations

import argparse
import textwrap

from mfscore.documentation import doc_path


class KeepPaths(argparse.HelpFormatter):
    """argparse's formatter, wrapping only at spaces: a long word or a path stays on one line."""

    def _split_lines(self, text, width):
        text = self._whitespace_matcher.sub(" ", text).strip()
        return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        text = self._whitespace_matcher.sub(" ", text).strip()
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent,
                             break_long_words=False, break_on_hyphens=False)


def see(parser: argparse.ArgumentParser, page: str) -> str:
    """``"see <path of docs/page>"`` for a help text of ``parser``, whose help then keeps paths whole."""
    parser.formatter_class = KeepPaths
    return f"see {doc_path(page)}"
