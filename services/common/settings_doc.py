"""Write docs/settings-reference.md from the settings' declarations (``services/common/settings.py``), so the page lists
exactly the variables the services read, their defaults, checks and flags:
``python -m mfscore.services.common.settings_doc [PATH]``."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from mfscore.services.common.settings import Settings, fields, value_type

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "settings-reference.md"
BINARY_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))
GROUPED_FROM = 100_000  # digits grouped by thousands from here on (a port number is not)

HEADER = """\
# Settings reference

Generated from `services/common/settings.py` by `python -m mfscore.services.common.settings_doc`; a unit test
checks that this page is what the command writes. Every service reads its settings from these environment variables
when it starts (Kubernetes sets them from the manifests' ConfigMap and Secrets, `mfscore local-cluster` for each
process it starts); an `mfscore serve` flag overrides its variable. A value out of its range, or not an integer where
one is read, stops the service with a sentence naming the variable. A secret is logged as `***`.

| variable | default | accepted | `mfscore serve` flag | meaning |
|---|---|---|---|---|
"""


def default_text(setting: dataclasses.Field) -> str:
    """The setting's default as the page shows it: with its unit, bytes in binary units, large numbers grouped."""
    if setting.metadata["shown_default"]:
        return f"`{setting.metadata['shown_default']}`"
    value = getattr(Settings(), setting.name)
    if isinstance(value, str):
        return f"`{value}`" if value else ""
    unit = setting.metadata["unit"]
    if unit == "bytes":
        for size, name in BINARY_UNITS:
            if value > 0 and value % size == 0:
                return f"{value // size:,} {name}"
    digits = f"{value:,}" if value >= GROUPED_FROM else str(value)
    return digits + (f" {unit}" if unit and value > 0 else "")


def accepted_text(setting: dataclasses.Field) -> str:
    check = setting.metadata["check"]
    if check is not None:
        return check.text
    return "an integer" if value_type(setting) is int else ""


def render() -> str:
    rows = []
    for setting in fields():
        meta = setting.metadata
        flag = f"`{meta['flag']}`" if meta["flag"] else ""
        meaning = ("**secret**: " if meta["secret"] else "") + meta["help"]
        rows.append(f"| `{meta['env']}` | {default_text(setting)} | {accepted_text(setting)} | {flag} | "
                    f"{meaning.replace('|', '/')} |")
    return HEADER + "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    path.write_text(render())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
