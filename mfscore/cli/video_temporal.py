"""``mfscore video-temporal``: placeholder until the command lands."""

from __future__ import annotations


def add_parser(subparsers) -> None:
    subparsers.add_parser("video-temporal", help="(in progress)")
