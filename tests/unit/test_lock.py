"""The one lock: ``requirements.lock`` pins, with hashes, everything ``pyproject.toml`` asks for, and every
environment of ours (``make setup``, so ``make demo``, ``make test`` and ``.ci/run``) installs exactly it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from test_deploy_manifests import MARKER_ENVIRONMENT, lock_pins  # CPython 3.11 on Linux x86_64

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"


def requirements() -> list[tuple[str, Requirement]]:
    """Every requirement of pyproject.toml: the build backend's, the base ones and those of each extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = [("build-system", r) for r in project["build-system"]["requires"]]
    listed += [("dependencies", r) for r in project["project"]["dependencies"]]
    for extra, names in project["project"]["optional-dependencies"].items():
        listed += [(f"extra {extra}", r) for r in names]
    return [(where, Requirement(text)) for where, text in listed]


def test_every_requirement_of_every_extra_is_pinned_with_hashes_at_a_version_it_allows():
    locked = lock_pins(LOCK)  # every line a pin with its hashes, or a comment
    for where, requirement in requirements():
        if requirement.marker and not requirement.marker.evaluate({**MARKER_ENVIRONMENT, "extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{where}: {requirement} is not in requirements.lock: run 'make lock'"
        version = locked[name].version
        assert requirement.specifier.contains(Version(version), prereleases=True), \
            f"{where}: requirements.lock pins {name}=={version}, outside {requirement}: run 'make lock'"
    assert all(pin.hashes for pin in locked.values()), "every pin carries its sha256 hashes"


def test_the_lock_holds_no_local_or_unpinned_source():
    text = LOCK.read_text()
    for line in text.splitlines():
        assert not re.match(r"^\s*(-e|--editable|--index-url|--extra-index-url|--find-links|-f)\b", line), line
        assert "file://" not in line and " @ " not in line, line


def test_make_setup_installs_exactly_the_lock_and_nothing_else_resolves_versions():
    makefile = (ROOT / "Makefile").read_text()
    stamp = makefile[makefile.index("$(STAMP): "):]
    recipe = stamp[:stamp.index("\n\n")]
    assert recipe.splitlines()[0].split(":", 1)[1].split() == ["requirements.lock", "pyproject.toml"]
    installs = [line.strip() for line in recipe.splitlines() if "pip install" in line]
    assert installs == ["$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements.lock",
                        "$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e ."]
    assert "pip check" in recipe
    # every other pip install of the Makefile is make lock's bootstrap from the lock, or test-latest's, not in CI
    others = [line.strip() for line in makefile.splitlines() if "pip install" in line and line.strip() not in installs]
    assert all("--require-hashes" in line or "$(LATEST)" in line for line in others), others
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install" not in ci and "test-latest" not in ci and "make test\n" in ci


def test_the_lock_is_written_by_one_command_for_the_platform_it_names():
    script = (ROOT / "deploy" / "lock.sh").read_text()
    for flag in ("--generate-hashes", "--python-version 3.11", "--python-platform x86_64-manylinux_2_28",
                 "--exclude-newer", "--all-extras", "-o requirements.lock", "-c requirements.lock",
                 "-o deploy/image.lock"):
        assert flag in script, flag
    assert "make lock" in LOCK.read_text().splitlines()[1]
    assert re.search(r"^lock:\n(\t.*\n)*\tsh deploy/lock.sh$", (ROOT / "Makefile").read_text(), re.MULTILINE)
