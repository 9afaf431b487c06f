"""``mfscore validate``: MediScore validator.py's command line (docs/validation.md §1)."""

from __future__ import annotations

import csv
import os
import tempfile

from mfscore.cli.arguments import add_max_findings_argument, checked, integer
from mfscore.errors import OptionError
from mfscore.limits import DEFAULT_MAX_PIXELS, HARD_MAX_PIXELS
from mfscore.validation.options import PLANS, VALIDATION_TYPES, ValidatorOptions


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "validate", help="validate a detection/localization submission (validator.py-compatible)",
        description="Check a system output CSV, its masks and intervals against the index before scoring. "
                    "Exit status 0: valid; 1: invalid. Accepts MediScore validator.py's options.")
    p.add_argument("-x", "--inIndex", required=True, help="index CSV")
    system = p.add_mutually_exclusive_group(required=True)
    system.add_argument("-s", "--inSys", help="system output CSV; mask paths are relative to its directory")
    system.add_argument("--package", metavar="DIR",
                        help="instead of -s, a whole submission package <SubID>/: its name, <SubID>.csv (checked "
                             "as with -s), its system description <SubID>.txt (six sections) and mask/")
    p.add_argument("-vt", "--valtype", required=True, choices=VALIDATION_TYPES,
                   help="SSD (manipulation image), SSD-video, SSD-event, SSD-camera or DSD (splice)")
    p.add_argument("-r", "--inRef", help="reference CSV: check masks and statuses of target trials only")
    p.add_argument("-nc", "--nameCheck", action="store_true", help="check the submission's file and directory name")
    p.add_argument("--ncid", default="NC17", help="NCID the name check expects (default NC17)")
    p.add_argument("--plan", choices=PLANS, default="nc2017",
                   help="evaluation rules: nc2017 (MediScore's, default), mfc2019 (SubID names, scores in [0, 1]) "
                        "or semafor (SubID names, any real score)")
    p.add_argument("--semafor", dest="plan", action="store_const", const="semafor", help="same as --plan semafor")
    p.add_argument("-xF", "--indexFilter", action="store_true", help="do not report system rows missing from the index")
    p.add_argument("-nm", "--neglectMask", action="store_true", help="skip the mask file checks")
    p.add_argument("-np", "--neglectPixel", action="store_true",
                   help="skip the opt-out column, status and pixel-value checks")
    p.add_argument("--ignore_eof", action="store_true", help="video: out-of-range intervals are warnings")
    p.add_argument("--ignore_overlap", action="store_true", help="video: intersecting intervals are warnings")
    p.add_argument("--hdf5-frame-base", type=int, choices=(0, 1), default=0,
                   help="video: what HDF5 mask block names count from: 0, the MFC2019 plan's 0-indexed start frames "
                        "(default), or 1, MediScore's (its ReadMe and mask generator)")
    p.add_argument("--output_revised_system", metavar="NAME",
                   help="write NAME next to the system CSV, with wrong-size-mask rows set to FailedValidation")
    p.add_argument("--max-pixels", type=checked(integer, "mfscore.masks.options:MaskOptions.max_pixels"),
                   default=DEFAULT_MAX_PIXELS,
                   help=f"largest mask (width x height) accepted (default {DEFAULT_MAX_PIXELS}, at most "
                        f"{HARD_MAX_PIXELS})")
    add_max_findings_argument(p)
    p.add_argument("--mediscore-compat", action="store_true",
                   help="accept NaN/inf scores and treat an unknown video frame count as 0, as MediScore does")
    p.add_argument("--json", action="store_true", help="print the report as JSON (codes, files, lines)")
    p.add_argument("-v", "--verbose", type=int, choices=(0, 1), default=1, help="1 prints every finding, 0 nothing")
    p.add_argument("-id", "--identify", action="store_true",
                   help="accepted for compatibility: mask headers are always read directly, without ImageMagick")
    p.add_argument("-p", "--processors", type=int, default=1, help="accepted for compatibility; header reads are fast")
    p.add_argument("--optOut", action="store_true", help="accepted for compatibility; deprecated in MediScore")
    p.set_defaults(run=run)


def _revised_path(system_path: str, name: str) -> str:
    if not name or os.path.basename(name) != name or name in (".", ".."):
        raise OptionError(f"--output_revised_system takes a file name, not a path: {name!r}")
    return os.path.join(os.path.dirname(system_path) or ".", name)


def _write_revised(validation, path: str) -> None:
    """Written beside the system CSV through a temporary file, so it is whole or absent."""
    directory = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(prefix=".revised-", dir=directory)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            writer = csv.writer(f, delimiter="|", lineterminator="\n")
            writer.writerow(validation.table.header)
            writer.writerows(validation.revised.itertuples(index=False))
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def run(args) -> int:
    from mfscore.cli.validation_output import print_report
    from mfscore.validation.package import package_system_path, validate_package
    from mfscore.validation.submission import validate_submission

    system_path = args.inSys if args.package is None else package_system_path(args.package)
    revised_path = _revised_path(system_path, args.output_revised_system) if args.output_revised_system else None
    options = ValidatorOptions(
        kind=args.valtype, name_check=args.nameCheck, ncid=args.ncid, plan=args.plan, reference=args.inRef,
        index_filter=args.indexFilter, neglect_mask=args.neglectMask, neglect_pixel=args.neglectPixel,
        ignore_eof=args.ignore_eof, ignore_overlap=args.ignore_overlap, revised_name=args.output_revised_system,
        mediscore_compat=args.mediscore_compat, max_pixels=args.max_pixels, hdf5_frame_base=args.hdf5_frame_base,
        max_findings=args.max_findings)
    if args.package is None:
        validation = validate_submission(args.inSys, args.inIndex, options)
    else:
        validation = validate_package(args.package, args.inIndex, options)
    if validation.revised is not None and revised_path is not None:
        _write_revised(validation, revised_path)
        validation.report.notice("revised.written", f"The revised system output is written to {revised_path}.")
    return print_report(validation.report, verbose=args.verbose, as_json=args.json)
