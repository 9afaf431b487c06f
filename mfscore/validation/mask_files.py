"""Checking one submitted image mask from its header only: a confined path, PNG, 8-bit grey, right size.

Only the header is read (``formats/images.py``), so validating 50,000 masks costs 50,000 small
reads; the pixel data is decoded by the scorer, which reports a corrupt mask as unscored.
"""

from __future__ import annotations

import os

from mfscore.errors import ImageError
from mfscore.formats.images import confined_path, image_header
from mfscore.validation.findings import ValidationReport

WRONG_SIZE = "dimensions"


def is_blank(name: str) -> bool:
    return name.strip() in ("", "nan")


def check_png_mask(report: ValidationReport, root: str, name: str, *, owner: str, width: int, height: int,
                   max_pixels: int, file: str, line: int) -> str | None:
    """Report what is wrong with mask ``name`` (relative to ``root``); returns WRONG_SIZE when its size
    differs from the probe's, the failure ``--output_revised_system`` excuses."""
    where = {"file": file, "line": line}
    if not name.lower().endswith(".png"):
        report.error("mask.not_png", f"Mask image {name} for {owner} is not a png.", **where)
        return None
    try:
        path = confined_path(root, name, what="mask")
    except ImageError as exc:
        report.error("mask.path", f"Mask image {name} for {owner} is refused: {exc.message}.", **where)
        return None
    if not os.path.isfile(path):
        report.error("mask.missing", f"Expected mask image {name} for {owner}, but it does not exist. "
                     "Please check the name of the mask image.", **where)
        return None
    try:
        header = image_header(path)
    except ImageError as exc:
        report.error("mask.unreadable", f"Mask image {name} for {owner} cannot be read as a png: {exc.message}.",
                     **where)
        return None
    if header.format != "png":
        report.error("mask.unreadable", f"Mask image {name} for {owner} cannot be read as a png: it is a "
                     f"{header.format.upper()} file.", **where)
        return None
    if header.width * header.height > max_pixels:
        report.error("mask.too_large", f"Mask image {name} for {owner} declares {header.width}x{header.height} "
                     f"pixels, more than the limit of {max_pixels}.", **where)
    if header.channels != 1:
        report.error("mask.channels", f"Mask image {name} for {owner} is not single-channel. "
                     f"It has {header.channels} channels.", **where)
    if header.bit_depth is not None and header.bit_depth > 8:
        report.error("mask.bit_depth", f"Mask image {name} for {owner} has {header.bit_depth}-bit samples; "
                     "masks must be 8-bit.", **where)
    if (header.height, header.width) != (height, width):
        report.error("mask.dimensions", f"Expected dimensions {height},{width} (height,width) for mask image "
                     f"{name} of {owner}, got {header.height},{header.width}.", **where)
        return WRONG_SIZE
    return None
