"""The size limits on untrusted input, checked before any work (docs/architecture.md "Untrusted input").

Plain constants in a module of their own, so the command line can show them without importing the
readers that enforce them. A limit a run may set (``--max-pixels``, ``--eks``, ...) has a default
(``DEFAULT_MAX_*``) and a hard maximum (``HARD_MAX_*``) its options type refuses to exceed wherever the
options are made; a server's own maxima (``MFSCORE_MAX_*``, docs/reliability.md) default to the defaults
and lie between 1 and the hard maxima.
"""

DEFAULT_MAX_PIXELS = 100_000_000          # pixels an image mask may declare (formats/images.py)
DEFAULT_MAX_JOB_BYTES = 1_000_000_000     # bytes an image mask job may need, from its headers (masks/mask_scoring.py)
DECODED_MASK_BYTES = 64_000_000           # decoded masks a process keeps for other jobs (masks/decoded_masks.py)
JOB_MAP_BYTES = 6                         # one-byte maps per pixel a mask job holds at once, at most
DECODE_SAMPLE_BYTES = 2                   # bytes per decoded sample while OpenCV decodes a PNG, JPEG, TIFF or BMP
JPEG2000_SAMPLE_BYTES = 6                 # the same for JPEG 2000 (OpenJPEG's 32-bit planes and the result)
DEFAULT_MAX_VIDEO_ELEMENTS = 1 << 36      # pixels x frames an HDF5 video mask may declare (formats/video_masks.py)
DEFAULT_MAX_JSON_BYTES = 64 << 20         # bytes of a provenance JSON (formats/provenance_json.py)
MAX_JSON_CONTAINERS = 1_000_000           # arrays and objects in one provenance JSON (~200 MB once parsed)
MAX_SCHEMA_PROBLEMS = 20                  # schema violations worded for one JSON; the check stops there
MAX_TABLE_COLUMNS = 10_000                # columns in a table's header (formats/tables.py)
MAX_HEADER_BYTES = 1 << 20                # bytes of a table's header line
MAX_QUERY_CHARS = 100_000                 # characters of one -q/-qp/-qm query (query.py)
MAX_QUERY_COMPARISONS = 500               # comparisons in one query: each is a pass over the table
DEFAULT_MAX_TABLE_BYTES = 1 << 30         # bytes of a submitted table (validation/submission_table.py)
DEFAULT_MAX_KERNEL_SIZE = 201             # a no-score zone's kernel size (--eks, --dks, --ntdks)
DEFAULT_MAX_FINDINGS = 1000               # findings a validation lists; the others are only counted
MAX_DESCRIPTION_BYTES = 1 << 20           # bytes of a package's system description (validation/system_description.py)

HARD_MAX_PIXELS = 1 << 30                 # OpenCV's own decoding limit (OPENCV_IO_MAX_IMAGE_PIXELS' default)
HARD_MAX_JOB_BYTES = HARD_MAX_PIXELS * (3 + 4 * JPEG2000_SAMPLE_BYTES)  # what a job on the largest mask can need
HARD_MAX_JSON_BYTES = 1 << 30             # a provenance JSON is parsed whole: ~10 bytes of objects per byte
HARD_MAX_VIDEO_ELEMENTS = 1 << 40         # video masks are streamed: this is hours of 4K video, 1 TiB
HARD_MAX_KERNEL_SIZE = DEFAULT_MAX_KERNEL_SIZE  # a disc costs ~k^2 per pixel: 201 takes ~1 s on 4 Mpixels
HARD_MAX_FINDINGS = 1_000_000             # ~1 GB of findings held at once
