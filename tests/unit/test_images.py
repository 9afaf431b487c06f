"""Tests for mfscore.formats.images: header parsing, pixel limits, decoding checks and path confinement."""

from __future__ import annotations

import os
import struct
import zlib

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mfscore.errors import ImageError, InputFileError
from mfscore.formats import images
from mfscore.formats.images import (
    DEFAULT_MAX_PIXELS,
    ImageHeader,
    confined_path,
    image_header,
    image_size,
    read_colour,
    read_grey,
    read_layers,
)

LOSSLESS_JP2 = [cv2.IMWRITE_JPEG2000_COMPRESSION_X1000, 1000]


def encode(ext: str, array: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(ext, array, LOSSLESS_JP2 if ext == ".jp2" else [])
    assert ok, ext
    return buf.tobytes()


def write(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, colour: int, depth: int, rows: list[bytes], extra: bytes = b"") -> bytes:
    """A hand-made PNG (filter type 0 on every row) with correct CRCs."""
    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0))
    idat = chunk(b"IDAT", zlib.compress(b"".join(b"\x00" + row for row in rows)))
    return b"\x89PNG\r\n\x1a\n" + ihdr + extra + idat + chunk(b"IEND", b"")


def j2k(width: int, height: int, components: int) -> bytes:
    """A hand-made raw JPEG 2000 codestream: one tile, no wavelet levels, every sample 128 (all-zero
    coefficients after the DC shift, so each packet is a single empty byte)."""
    def segment(marker: int, data: bytes) -> bytes:
        return struct.pack(">HH", marker, len(data) + 2) + data
    siz = struct.pack(">HIIIIIIIIH", 0, width, height, 0, 0, width, height, 0, 0, components) + b"\x07\x01\x01" * components
    cod = struct.pack(">BBHBBBBBB", 0, 0, 1, 0, 0, 4, 4, 0, 1)
    body = b"\x00" * components
    sot = segment(0xFF90, struct.pack(">HIBB", 0, 14 + len(body), 0, 1))
    return (b"\xff\x4f" + segment(0xFF51, siz) + segment(0xFF52, cod) + segment(0xFF5C, b"\x40\x48")
            + sot + b"\xff\x93" + body + b"\xff\xd9")


def codestream_of(jp2: bytes) -> bytes:
    """The contiguous codestream box (jp2c) of a JP2 file."""
    pos = 0
    while True:
        length, kind = struct.unpack(">I4s", jp2[pos:pos + 8])
        if kind == b"jp2c":
            return jp2[pos + 8:pos + length] if length else jp2[pos + 8:]
        pos += length


def no_decoding(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("cv2.imdecode must not be called")
    monkeypatch.setattr(images.cv2, "imdecode", refuse)


RNG = np.random.default_rng(7)
GREY = RNG.integers(0, 256, (40, 50), dtype=np.uint8)
BGR = RNG.integers(0, 256, (40, 50, 3), dtype=np.uint8)
BGRA = RNG.integers(0, 256, (40, 50, 4), dtype=np.uint8)


def test_image_error_is_an_input_file_error():
    assert issubclass(ImageError, InputFileError)


# --- headers agree with what was written -------------------------------------------------------

@pytest.mark.parametrize("ext, fmt", [(".png", "png"), (".jpg", "jpeg"), (".tif", "tiff"), (".bmp", "bmp"),
                                      (".jp2", "jp2")])
@pytest.mark.parametrize("array", [GREY, BGR, BGRA], ids=["grey", "rgb", "rgba"])
def test_header_matches_written_image(tmp_path, ext, fmt, array):
    path = write(tmp_path, "m" + ext, encode(ext, array))
    header = image_header(path)
    channels = 1 if array.ndim == 2 else array.shape[2]
    expected = {".jpg": min(channels, 3), ".bmp": None if channels == 1 else channels}.get(ext, channels)
    assert header == ImageHeader(50, 40, expected, 8, fmt)
    assert image_size(path) == (50, 40, expected)
    assert read_colour(path).shape == (40, 50, 3)


def test_raw_jpeg2000_codestream(tmp_path):
    path = write(tmp_path, "m.j2k", codestream_of(encode(".jp2", BGR)))
    assert image_header(path) == ImageHeader(50, 40, 3, 8, "j2k")
    np.testing.assert_array_equal(read_colour(path), BGR)


def test_sixteen_bit_images_are_refused_before_decoding(tmp_path, monkeypatch):
    deep = RNG.integers(0, 65536, (40, 50), dtype=np.uint16)
    paths = [write(tmp_path, "m" + ext, encode(ext, deep)) for ext in (".png", ".tif", ".jp2")]
    assert [image_header(p).bit_depth for p in paths] == [16, 16, 16]
    no_decoding(monkeypatch)
    for path in paths:
        with pytest.raises(ImageError, match="16-bit samples; masks must be 8-bit"):
            read_grey(path)


def test_sixteen_bit_found_only_after_decoding_is_refused(tmp_path, monkeypatch):
    path = write(tmp_path, "m.png", encode(".png", GREY))
    monkeypatch.setattr(images.cv2, "imdecode", lambda *a: np.zeros((40, 50), np.uint16))
    with pytest.raises(ImageError, match="16-bit"):
        read_grey(path)


def test_palette_png(tmp_path):
    palette = chunk(b"PLTE", bytes([255, 0, 0, 0, 0, 255]))  # 0 = red, 1 = blue
    path = write(tmp_path, "p.png", png(3, 2, 3, 8, [b"\x00\x01\x00", b"\x01\x01\x00"], palette))
    assert image_size(path) == (3, 2, 3)
    colour = read_colour(path)
    assert colour[0, 0].tolist() == [0, 0, 255] and colour[0, 1].tolist() == [255, 0, 0]
    with pytest.raises(ImageError, match="must be single-channel greyscale"):
        read_grey(path)
    grey_palette = chunk(b"PLTE", bytes([0, 0, 0, 200, 200, 200]))
    path = write(tmp_path, "g.png", png(3, 2, 3, 8, [b"\x00\x01\x00", b"\x01\x01\x00"], grey_palette))
    assert read_grey(path).tolist() == [[0, 200, 0], [200, 200, 0]]


def test_grey_alpha_png(tmp_path):
    path = write(tmp_path, "ga.png", png(3, 1, 4, 8, [bytes([5, 255, 6, 255, 7, 0])]))
    assert image_header(path) == ImageHeader(3, 1, 2, 8, "png")
    assert read_grey(path).tolist() == [[5, 6, 7]]  # alpha ignored, like an OpenCV greyscale read
    assert read_layers(path)[0].tolist() == [[5, 255], [6, 255], [7, 0]]


def test_one_bit_png_expands_to_0_and_255(tmp_path):
    path = write(tmp_path, "b.png", png(3, 2, 0, 1, [bytes([0b10100000]), bytes([0b01000000])]))
    assert image_header(path) == ImageHeader(3, 2, 1, 1, "png")
    assert read_grey(path).tolist() == [[255, 0, 255], [0, 255, 0]]


def test_big_endian_tiff_and_out_of_line_bits_per_sample(tmp_path):
    entries = [(256, 3, 1, struct.pack(">HH", 70, 0)), (257, 4, 1, struct.pack(">I", 30)),
               (258, 3, 3, struct.pack(">I", 8 + 2 + 12 * 4 + 4)), (277, 3, 1, struct.pack(">HH", 3, 0))]
    ifd = struct.pack(">H", len(entries)) + b"".join(struct.pack(">HHI4s", *e) for e in entries) + b"\0\0\0\0"
    path = write(tmp_path, "mm.tif", b"MM\x00*" + struct.pack(">I", 8) + ifd + struct.pack(">HHH", 8, 8, 8))
    assert image_header(path) == ImageHeader(70, 30, 3, 8, "tiff")


def test_bmp_core_header_and_top_down_rows(tmp_path):
    core = b"BM" + bytes(12) + struct.pack("<IHHHH", 12, 9, 4, 1, 24)
    assert image_size(write(tmp_path, "core.bmp", core)) == (9, 4, 3)
    top_down = b"BM" + bytes(12) + struct.pack("<IiiHH", 40, 9, -4, 1, 8) + bytes(24)
    assert image_size(write(tmp_path, "td.bmp", top_down)) == (9, 4, None)
    real = write(tmp_path, "real.bmp", encode(".bmp", GREY))
    np.testing.assert_array_equal(read_grey(real), GREY)


def test_jpeg_after_other_segments(tmp_path):
    data = encode(".jpg", BGR)
    comment = b"\xff\xfe" + struct.pack(">H", 2 + 300) + b"x" * 300
    path = write(tmp_path, "c.jpg", data[:2] + b"\xff" + comment + data[2:])  # a fill byte, then a comment
    assert image_size(path) == (50, 40, 3)


# --- hostile input ------------------------------------------------------------------------------

def test_huge_declared_png_is_refused_without_decoding(tmp_path, monkeypatch):
    path = write(tmp_path, "huge.png", png(100_000, 100_000, 0, 8, [b"\x00" * 10]))
    assert image_size(path) == (100_000, 100_000, 1)
    no_decoding(monkeypatch)
    monkeypatch.setattr(np, "fromfile", lambda *a: pytest.fail("the file must not be read"))
    for read in (read_grey, read_colour, read_layers):
        with pytest.raises(ImageError, match=f"100000x100000 .*limit of {DEFAULT_MAX_PIXELS}") as info:
            read(path)
        assert info.value.path == path and path in str(info.value)


def test_pixel_limit_is_a_parameter(tmp_path):
    path = write(tmp_path, "m.png", encode(".png", GREY))
    with pytest.raises(ImageError, match="limit of 1999"):
        read_grey(path, max_pixels=1999)
    assert read_grey(path, max_pixels=2000).shape == (40, 50)


@pytest.mark.parametrize("cut, message", [(20, "header is truncated"), (40, "could not be decoded"),
                                          (-1, "could not be decoded")])
def test_truncated_png(tmp_path, cut, message):
    data = encode(".png", BGR)
    cut = len(data) // 2 if cut == -1 else cut
    with pytest.raises(ImageError, match=message):
        read_grey(write(tmp_path, "t.png", data[:cut]), require_single_channel=False)


@pytest.mark.parametrize("ext", [".jpg", ".tif", ".bmp", ".jp2"])
def test_truncated_other_formats(tmp_path, ext):
    data = encode(ext, BGR)
    with pytest.raises(ImageError, match="header is truncated"):
        image_size(write(tmp_path, "h" + ext, data[:16]))
    with pytest.raises(ImageError, match="could not be decoded|header is truncated"):  # libtiff puts the IFD last
        read_colour(write(tmp_path, "t" + ext, data[:len(data) // 2]))


def test_random_bytes_and_empty_file(tmp_path):
    with pytest.raises(ImageError, match="not a PNG, JPEG, JPEG 2000, TIFF or BMP"):
        read_grey(write(tmp_path, "r.png", bytes(RNG.integers(0, 256, 1000, dtype=np.uint8))))
    with pytest.raises(ImageError, match="empty"):
        read_grey(write(tmp_path, "e.png", b""))
    with pytest.raises(ImageError, match="could not be decoded"):  # a good header before garbage
        read_grey(write(tmp_path, "g.png", encode(".png", GREY)[:33] + b"\x01" * 500))


def test_zero_size_header(tmp_path):
    with pytest.raises(ImageError, match="empty image"):
        image_size(write(tmp_path, "z.png", png(0, 5, 0, 8, [])))


def test_malformed_headers(tmp_path):
    bad_png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 5, 5, 8, 5, 0, 0, 0))  # colour type 5
    bad_jp2 = b"\x00\x00\x00\x0cjP  \r\n\x87\n" + struct.pack(">I4s", 3, b"ftyp")
    bad_jpeg = b"\xff\xd8\xff\xda\x00\x02"
    bad_tiff = b"II*\x00" + struct.pack("<IH", 8, 0)
    fill_flood = b"\xff\xd8" + b"\xff" * 100_010
    for name, data, message in [("c.png", bad_png, "IHDR"), ("b.jp2", bad_jp2, "invalid length"),
                                ("s.jpg", bad_jpeg, "no frame header"), ("w.tif", bad_tiff, "no image width"),
                                ("f.jpg", fill_flood, "no frame header in its first")]:
        with pytest.raises(ImageError, match=message):
            image_size(write(tmp_path, name, data))


def test_missing_file_and_directory(tmp_path):
    for read in (image_size, read_grey, read_colour, read_layers):
        with pytest.raises(ImageError, match="does not exist"):
            read(str(tmp_path / "nope.png"))
    with pytest.raises(ImageError):
        read_grey(str(tmp_path))


def test_opencv_errors_and_shape_mismatch_are_wrapped(tmp_path, monkeypatch):
    path = write(tmp_path, "m.png", encode(".png", GREY))

    def broken(*args):
        raise cv2.error("boom")
    monkeypatch.setattr(images.cv2, "imdecode", broken)
    with pytest.raises(ImageError, match="could not be decoded"):
        read_grey(path)
    monkeypatch.setattr(images.cv2, "imdecode", lambda *a: np.zeros((41, 50), np.uint8))
    with pytest.raises(ImageError, match="decoded image is 50x41 but its header says 50x40"):
        read_grey(path)


# --- channels -----------------------------------------------------------------------------------

def test_differing_channels_are_refused_for_system_masks(tmp_path):
    path = write(tmp_path, "c.png", encode(".png", BGR))
    with pytest.raises(ImageError, match="3 channels that differ; a system mask must be single-channel"):
        read_grey(path)
    np.testing.assert_array_equal(read_grey(path, require_single_channel=False),
                                  cv2.cvtColor(BGR, cv2.COLOR_BGR2GRAY))


@pytest.mark.parametrize("ext", [".png", ".tif", ".bmp"])
def test_identical_channels_are_accepted(tmp_path, ext):
    path = write(tmp_path, "g" + ext, encode(ext, np.dstack([GREY, GREY, GREY])))
    got = read_grey(path)
    assert got.dtype == np.uint8 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, GREY)


def test_read_colour_grey_and_alpha(tmp_path):
    grey = read_colour(write(tmp_path, "g.png", encode(".png", GREY)))
    np.testing.assert_array_equal(grey, np.dstack([GREY, GREY, GREY]))
    np.testing.assert_array_equal(read_colour(write(tmp_path, "a.png", encode(".png", BGRA))), BGRA[:, :, :3])


# --- JPEG 2000 layers ---------------------------------------------------------------------------

@pytest.mark.parametrize("array", [GREY, BGR, BGRA], ids=["1", "3", "4"])
def test_read_layers_in_file_component_order(tmp_path, array):
    path = write(tmp_path, "l.jp2", encode(".jp2", array))
    layers = read_layers(path)
    if array.ndim == 2:
        np.testing.assert_array_equal(layers, array[:, :, np.newaxis])
    else:  # OpenCV writes BGR(A) as components R, G, B(, A); the layers come back in that file order
        np.testing.assert_array_equal(layers, array[:, :, [2, 1, 0, 3][:array.shape[2]]])


def test_read_layers_png(tmp_path):
    np.testing.assert_array_equal(read_layers(write(tmp_path, "l.png", encode(".png", GREY))),
                                  GREY[:, :, np.newaxis])


def test_hand_made_codestream_decodes(tmp_path):
    path = write(tmp_path, "h.j2k", j2k(6, 4, 3))
    assert image_header(path) == ImageHeader(6, 4, 3, 8, "j2k")
    np.testing.assert_array_equal(read_layers(path), np.full((4, 6, 3), 128, np.uint8))


@pytest.mark.parametrize("components", [2, 5, 9])
def test_component_counts_opencv_cannot_decode_are_refused(tmp_path, monkeypatch, components):
    path = write(tmp_path, "many.j2k", j2k(6, 4, components))
    assert image_size(path) == (6, 4, components)
    no_decoding(monkeypatch)
    with pytest.raises(ImageError, match=f"has {components} components; only 1, 3 or 4 can be decoded"):
        read_layers(path)


# --- path confinement ---------------------------------------------------------------------------

def test_confined_path(tmp_path):
    root = tmp_path / "sub"
    (root / "masks" / "deep").mkdir(parents=True)
    (root / "masks" / "deep" / "m.png").write_bytes(b"")
    (tmp_path / "outside.png").write_bytes(b"")
    os.symlink(tmp_path / "outside.png", root / "escape.png")
    os.symlink(root / "masks" / "deep" / "m.png", root / "inside.png")
    os.symlink(tmp_path, root / "masks" / "up")
    r = str(root)
    assert confined_path(r, "masks/deep/m.png", what="system mask") == os.path.join(r, "masks/deep/m.png")
    assert confined_path(r, "inside.png", what="system mask") == os.path.join(r, "inside.png")
    assert confined_path(r, "masks/../masks/deep/m.png", what="system mask").endswith("masks/../masks/deep/m.png")
    assert confined_path(r, "not/yet/there.png", what="system mask") == os.path.join(r, "not/yet/there.png")
    for bad, message in [("../x.png", "leaves"), ("masks/../../x.png", "leaves"), ("/etc/passwd", "absolute"),
                         ("escape.png", "symbolic link"), ("masks/up/outside.png", "symbolic link"),
                         ("", "empty"), ("a\0b", "NUL")]:
        with pytest.raises(ImageError, match=message) as info:
            confined_path(r, bad, what="system mask")
        assert "system mask" in str(info.value)
        assert info.value.path in (bad, repr(bad))


# --- property: the header agrees with the decoder -------------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ext=st.sampled_from([".png", ".jpg", ".tif", ".bmp", ".jp2"]), channels=st.sampled_from([1, 3, 4]),
       width=st.integers(1, 70), height=st.integers(1, 70), data=st.data())
def test_header_agrees_with_decoded_shape(tmp_path, ext, channels, width, height, data):
    if ext == ".jp2":  # OpenCV's JPEG 2000 encoder needs at least 32 pixels a side
        width, height = max(width, 32), max(height, 32)
    seed = data.draw(st.integers(0, 2**32 - 1))
    shape = (height, width) if channels == 1 else (height, width, channels)
    array = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
    path = write(tmp_path, "p" + ext, encode(ext, array))
    w, h, c = image_size(path)
    decoded = cv2.imdecode(np.fromfile(path, np.uint8), cv2.IMREAD_UNCHANGED)
    assert (h, w) == decoded.shape[:2] == (height, width)
    assert c in (None, 1 if decoded.ndim == 2 else decoded.shape[2])
    assert read_colour(path).shape == (height, width, 3)


def _outcome(read, source):
    """What a reader gives for ``source``: the array, or the ImageError's path and message."""
    try:
        return read(source, max_pixels=10_000)
    except ImageError as error:
        return (error.path, error.message)


@pytest.mark.parametrize("read", [images.read_grey, images.read_colour, images.read_layers])
def test_a_file_in_memory_reads_as_the_file_on_disk(tmp_path, read):
    # A cluster scorer decodes a job's masks from the object's bytes: every array and every message (named by
    # the file's name) must be what reading the same bytes from a file gives.
    rng = np.random.default_rng(5)
    grey = rng.integers(0, 256, (20, 30), dtype=np.uint8)
    files = {
        "grey.png": encode(".png", grey),
        "colour.png": encode(".png", np.dstack([grey, grey, grey])),
        "mixed.png": encode(".png", rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)),
        "alpha.png": encode(".png", rng.integers(0, 256, (20, 30, 4), dtype=np.uint8)),
        "truncated.png": encode(".png", grey)[:60],
        "big.png": encode(".png", np.zeros((200, 60), np.uint8)),  # over max_pixels
        "text.png": b"not an image at all",
        "empty.png": b"",
    }
    for name, data in files.items():
        path = write(tmp_path, name, data)
        on_disk, in_memory = _outcome(read, path), _outcome(read, images.ImageBytes(path, data))
        if isinstance(on_disk, tuple):
            assert in_memory == on_disk, name
        else:
            np.testing.assert_array_equal(in_memory, on_disk)
            assert in_memory.dtype == on_disk.dtype and in_memory.shape == on_disk.shape
    missing = str(tmp_path / "missing.png")
    assert _outcome(read, images.ImageBytes(missing, None)) == _outcome(read, missing) == (
        missing, "the image does not exist")
    assert _outcome(read, images.ImageBytes("sys/x.png", None, 5000, 4096)) == (
        "sys/x.png", "the image file is 5000 bytes, more than the 4096 a scorer fetches")
    assert images.file_size(images.ImageBytes("a", b"12345")) == 5 == os.path.getsize(write(tmp_path, "f", b"12345"))
