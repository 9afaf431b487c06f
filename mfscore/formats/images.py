"""Reading untrusted mask images safely.

Submissions name image files; the names are confined to the submission directory and each image's
header is parsed by hand (``struct``, a few bytes) so that its size can be checked against a pixel
limit before OpenCV decodes it.  Every problem with a file becomes an ``ImageError`` naming it;
``cv2.error``, ``struct.error`` and ``OSError`` never escape.
"""

from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass
from typing import BinaryIO

from mfscore.errors import ImageError, MissingImageError
from mfscore.formats import file_names
from mfscore.limits import DEFAULT_MAX_PIXELS


def __getattr__(name: str):
    """``cv2``, imported when an image is first decoded: path checks (``confined_path``) need no OpenCV (and no
    numpy, which the decoding functions import as they run)."""
    if name == "cv2":
        import cv2

        return cv2
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JP2_SIGNATURE = b"\x00\x00\x00\x0cjP  \r\n\x87\n"
_J2K_SIGNATURE = b"\xff\x4f\xff\x51"
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}
# SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the range.
_JPEG_SOF = {m for m in range(0xC0, 0xD0) if m not in (0xC4, 0xC8, 0xCC)}


@dataclass(frozen=True)
class ImageBytes:
    """An image file held in memory (a scorer's copy of an object), named in messages as its file.

    ``data`` None is a file that is not there; with ``size`` too, one the scorer did not fetch because it has
    ``size`` bytes, more than ``limit``. Every reader takes one wherever it takes a path, and answers alike.
    ``identity`` names these very bytes for good (a content-addressed object's key), so what is decoded from
    them may be kept for another job (``masks/decoded_masks.py``); None for bytes known by no such name.
    """

    name: str
    data: bytes | None
    size: int | None = None
    limit: int | None = None
    identity: str | None = None


ImageSource = str | ImageBytes


def source_name(source: ImageSource) -> str:
    """The name a message gives the image: its path, or the in-memory file's name."""
    return source.name if isinstance(source, ImageBytes) else source


def file_size(source: ImageSource) -> int:
    """The file's bytes (``OSError`` for a path that cannot be read, as ``os.path.getsize``)."""
    if isinstance(source, ImageBytes):
        if source.data is None:
            raise FileNotFoundError(source.name)
        return len(source.data)
    return os.path.getsize(source)


class _Bad(Exception):
    """A header problem; ``image_header`` turns it into an ImageError naming the file."""


@dataclass(frozen=True)
class ImageHeader:
    """What an image's header declares. ``channels``/``bit_depth`` are None when the header does not say
    (a BMP palette may be grey or colour; a JPEG 2000 file may mix bit depths)."""

    width: int
    height: int
    channels: int | None
    bit_depth: int | None
    format: str  # 'png', 'jpeg', 'jp2', 'j2k', 'tiff' or 'bmp'


def confined_path(root: str, relative: str, *, what: str) -> str:
    """Join ``relative`` to ``root``, refusing names that reach outside it (``file_names.confined_path``), as an
    ``ImageError``."""
    return file_names.confined_path(root, relative, what=what, error=ImageError)


def _at(f: BinaryIO, offset: int, n: int) -> bytes:
    """``n`` bytes at ``offset``, or _Bad if the file ends first."""
    f.seek(offset)
    data = f.read(n)
    if len(data) < n:
        raise _Bad("the image header is truncated")
    return data


def _png(f: BinaryIO) -> ImageHeader:
    length, kind, width, height, depth, colour = struct.unpack(">I4sIIBB", _at(f, 8, 18))
    if kind != b"IHDR" or length != 13 or colour not in _PNG_CHANNELS:
        raise _Bad("the PNG header (IHDR) is malformed")
    return ImageHeader(width, height, _PNG_CHANNELS[colour], depth, "png")


def _jpeg(f: BinaryIO) -> ImageHeader:
    """Walk the marker segments after SOI until a start-of-frame (SOFn) segment (bounded, for hostile files)."""
    pos = 2
    for _ in range(100_000):
        if _at(f, pos, 1) != b"\xff":
            raise _Bad("the JPEG marker sequence is malformed")
        marker = _at(f, pos + 1, 1)[0]
        if marker == 0xFF:  # fill byte
            pos += 1
        elif 0xD0 <= marker <= 0xD7 or marker == 0x01:  # standalone markers
            pos += 2
        elif marker in (0xD9, 0xDA):
            raise _Bad("the JPEG has no frame header before its image data")
        else:
            (length,) = struct.unpack(">H", _at(f, pos + 2, 2))
            if marker in _JPEG_SOF:
                depth, height, width, components = struct.unpack(">BHHB", _at(f, pos + 4, 6))
                return ImageHeader(width, height, components, depth, "jpeg")
            if length < 2:
                raise _Bad("the JPEG marker sequence is malformed")
            pos += 2 + length
    raise _Bad("the JPEG has no frame header in its first 100000 markers")


def _jp2(f: BinaryIO) -> ImageHeader:
    """Find the image header box (``ihdr``) inside the JP2 header box (``jp2h``)."""
    pos, end = 12, None
    while end is None or pos < end:
        length, kind = struct.unpack(">I4s", _at(f, pos, 8))
        header = 8
        if length == 1:
            (length,) = struct.unpack(">Q", _at(f, pos + 8, 8))
            header = 16
        elif length == 0:  # box runs to the end of the file
            length = f.seek(0, os.SEEK_END) - pos
        if length < header:
            raise _Bad("a JPEG 2000 box has an invalid length")
        if kind == b"jp2h":
            pos, end = pos + header, pos + length  # descend into the superbox
            continue
        if kind == b"ihdr" and end is not None:
            height, width, components, bpc = struct.unpack(">IIHB", _at(f, pos + header, 11))
            return ImageHeader(width, height, components, None if bpc == 255 else (bpc & 0x7F) + 1, "jp2")
        if kind == b"jp2c":
            break
        pos += length
    raise _Bad("the JPEG 2000 file has no image header box (ihdr)")


def _j2k(f: BinaryIO) -> ImageHeader:
    """Raw codestream: the SIZ segment follows SOC; the image is (Xsiz-XOsiz) x (Ysiz-YOsiz)."""
    xsiz, ysiz, xo, yo = struct.unpack(">IIII", _at(f, 8, 16))
    (components,) = struct.unpack(">H", _at(f, 40, 2))
    ssiz = _at(f, 42, 1)[0]
    if xo > xsiz or yo > ysiz:
        raise _Bad("the JPEG 2000 codestream header (SIZ) is malformed")
    return ImageHeader(xsiz - xo, ysiz - yo, components, (ssiz & 0x7F) + 1, "j2k")


def _tiff(f: BinaryIO) -> ImageHeader:
    """Read ImageWidth (256), ImageLength (257), BitsPerSample (258) and SamplesPerPixel (277) from
    the first IFD."""
    order = "<" if _at(f, 0, 2) == b"II" else ">"
    (ifd,) = struct.unpack(order + "I", _at(f, 4, 4))
    (count,) = struct.unpack(order + "H", _at(f, ifd, 2))
    tags: dict[int, int] = {}
    for i in range(count):
        tag, kind, n, raw = struct.unpack(order + "HHI4s", _at(f, ifd + 2 + 12 * i, 12))
        if tag in (256, 257, 258, 277):
            if kind == 3 and n <= 2:  # SHORT, stored inline
                tags[tag] = struct.unpack(order + "H", raw[:2])[0]
            elif kind == 3:  # SHORTs stored elsewhere; the first one is enough
                tags[tag] = struct.unpack(order + "H", _at(f, struct.unpack(order + "I", raw)[0], 2))[0]
            elif kind == 4:  # LONG
                tags[tag] = struct.unpack(order + "I", raw)[0]
    if 256 not in tags or 257 not in tags:
        raise _Bad("the TIFF header has no image width or length")
    return ImageHeader(tags[256], tags[257], tags.get(277, 1), tags.get(258, 1), "tiff")


def _bmp(f: BinaryIO) -> ImageHeader:
    """BITMAPCOREHEADER (12 bytes) or BITMAPINFOHEADER and later; samples are always 8-bit once decoded."""
    (size,) = struct.unpack("<I", _at(f, 14, 4))
    fmt = "<HHHH" if size == 12 else "<iiHH"
    width, height, _planes, bpp = struct.unpack(fmt, _at(f, 18, struct.calcsize(fmt)))
    channels = {32: 4, 24: 3, 16: 3}.get(bpp)  # <= 8 bits: a palette, grey or colour
    return ImageHeader(abs(width), abs(height), channels, 8, "bmp")


def _not_fetched(source: ImageBytes) -> ImageError:
    if source.size is not None:
        return ImageError(f"the image file is {source.size} bytes, more than the {source.limit} a scorer fetches",
                          path=source.name)
    return MissingImageError("the image does not exist", path=source.name)


def _open(source: ImageSource) -> BinaryIO:
    if isinstance(source, ImageBytes):
        if source.data is None:
            raise _not_fetched(source)
        return io.BytesIO(source.data)
    return open(source, "rb")


def image_header(source: ImageSource) -> ImageHeader:
    """Parse only the header of a PNG, JPEG, JPEG 2000 (JP2 or raw codestream), TIFF or BMP file."""
    path = source_name(source)
    try:
        with _open(source) as f:
            magic = f.read(12)
            if magic.startswith(_PNG_SIGNATURE):
                header = _png(f)
            elif magic.startswith(b"\xff\xd8"):
                header = _jpeg(f)
            elif magic == _JP2_SIGNATURE:
                header = _jp2(f)
            elif magic.startswith(_J2K_SIGNATURE):
                header = _j2k(f)
            elif magic[:4] in (b"II*\x00", b"MM\x00*"):
                header = _tiff(f)
            elif magic.startswith(b"BM"):
                header = _bmp(f)
            else:
                raise _Bad("not a PNG, JPEG, JPEG 2000, TIFF or BMP image" if magic else "the image file is empty")
    except _Bad as exc:
        raise ImageError(str(exc), path=path) from None
    except struct.error:
        raise ImageError("the image header is truncated", path=path) from None
    except FileNotFoundError:
        raise MissingImageError("the image does not exist", path=path) from None
    except OSError as exc:
        raise ImageError(f"the image cannot be read ({exc.strerror or exc})", path=path) from None
    if header.width <= 0 or header.height <= 0:
        raise ImageError(f"the image header declares an empty image ({header.width}x{header.height})", path=path)
    return header


def image_size(path: ImageSource) -> tuple[int, int, int | None]:
    """(width, height, channels) from the header alone; channels is None when the header does not say."""
    header = image_header(path)
    return header.width, header.height, header.channels


def checked_header(source: ImageSource, max_pixels: int) -> ImageHeader:
    """The header of a regular file within the pixel limit and of 8-bit samples: what the readers
    check before decoding (a FIFO or a directory is never opened)."""
    path = source_name(source)
    if isinstance(source, ImageBytes):
        if source.data is None:
            raise _not_fetched(source)
    elif not os.path.isfile(path):
        if not os.path.exists(path):
            raise MissingImageError("the image does not exist", path=path)
        raise ImageError("not a regular file", path=path)
    header = image_header(source)
    w, h = header.width, header.height
    if w * h > max_pixels:
        raise ImageError(f"the image declares {w}x{h} = {w * h} pixels, more than the limit of {max_pixels}",
                         path=path)
    if header.bit_depth is not None and header.bit_depth > 8:
        raise ImageError(f"the image has {header.bit_depth}-bit samples; masks must be 8-bit", path=path)
    return header


def _decode(source: ImageSource, max_pixels: int) -> tuple[np.ndarray, ImageHeader]:
    """Check the header against the limits, then decode with OpenCV (IMREAD_UNCHANGED: no EXIF rotation)."""
    header = checked_header(source, max_pixels)
    path = source_name(source)
    w, h = header.width, header.height
    import cv2
    import numpy as np

    try:
        raw = np.frombuffer(source.data, np.uint8) if isinstance(source, ImageBytes) else np.fromfile(path, np.uint8)
        image = cv2.imdecode(raw, cv2.IMREAD_UNCHANGED)
    except cv2.error:
        image = None
    except OSError as exc:
        raise ImageError(f"the image cannot be read ({exc.strerror or exc})", path=path) from None
    if image is None:
        raise ImageError("the image could not be decoded (truncated or corrupt)", path=path)
    if image.dtype != np.uint8:
        raise ImageError(f"the image has {image.dtype.itemsize * 8}-bit samples; masks must be 8-bit", path=path)
    if image.shape[:2] != (h, w):
        raise ImageError(f"the decoded image is {image.shape[1]}x{image.shape[0]} but its header says {w}x{h}",
                         path=path)
    return image, header


def read_grey(source: ImageSource, *, max_pixels: int = DEFAULT_MAX_PIXELS,
              require_single_channel: bool = True) -> np.ndarray:
    """A system mask as uint8 HxW.

    With ``require_single_channel`` a colour image is accepted only if its colour channels are
    identical (a grey image saved as RGB); alpha is ignored, as an OpenCV greyscale read ignores it.
    Without it colour is converted with ``cv2.cvtColor`` (what an OpenCV greyscale read does).
    """
    import numpy as np

    image, _ = _decode(source, max_pixels)
    path = source_name(source)
    if image.ndim == 2:
        return image
    colour = image[:, :, :3]
    if require_single_channel:
        if not (np.array_equal(colour[:, :, 0], colour[:, :, 1]) and np.array_equal(colour[:, :, 0], colour[:, :, 2])):
            raise ImageError(f"the image has {image.shape[2]} channels that differ; "
                             "a system mask must be single-channel greyscale", path=path)
        return np.ascontiguousarray(colour[:, :, 0])
    import cv2

    return cv2.cvtColor(np.ascontiguousarray(colour), cv2.COLOR_BGR2GRAY)


def read_colour(source: ImageSource, *, max_pixels: int = DEFAULT_MAX_PIXELS, keep_grey: bool = False) -> np.ndarray:
    """A colour reference mask (NC2016/NC2017) as uint8 HxWx3 BGR; grey gives 3 equal channels, alpha is dropped.

    With ``keep_grey`` a grey image stays HxW, a third of the memory (``colour_selection`` reads both).
    """
    import numpy as np

    image, _ = _decode(source, max_pixels)
    if image.ndim == 2:
        import cv2

        return image if keep_grey else cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    return np.ascontiguousarray(image[:, :, :3])


def read_layers(source: ImageSource, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """A bit-plane reference mask as uint8 HxWxL, layers in the file's component order (as glymur gives them).

    OpenCV returns colour as BGR(A); the channels are put back in file order, in place (a copy
    would double the memory).  OpenCV's JPEG 2000 decoder handles only 1, 3 or 4 components (at
    most 32 bit-planes), so a file declaring 2 or more than 4 components is refused with an
    ImageError before decoding.
    """
    import numpy as np

    path = source_name(source)
    header = image_header(source)
    if header.format in ("jp2", "j2k") and header.channels not in (1, 3, 4):
        raise ImageError(f"the JPEG 2000 image has {header.channels} components; "
                         "only 1, 3 or 4 can be decoded", path=path)
    image, header = _decode(source, max_pixels)
    if image.ndim == 2:
        return image[:, :, np.newaxis]
    if image.shape[2] == 4 and header.channels == 2:  # grey + alpha, expanded by OpenCV to BGRA
        return np.ascontiguousarray(image[:, :, ::3])
    if header.channels is not None and image.shape[2] != header.channels:
        raise ImageError(f"the image decodes to {image.shape[2]} channels but its header says {header.channels}",
                         path=path)
    blue = image[:, :, 0].copy()
    image[:, :, 0] = image[:, :, 2]
    image[:, :, 2] = blue
    return image
