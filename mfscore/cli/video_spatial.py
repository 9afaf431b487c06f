"""``mfscore video-spatial``: placeholder until the command lands."""

from __future__ import annotations


def add_parser(subparsers) -> None:
    subparsers.add_parser("video-spatial", help="(in progress)")
