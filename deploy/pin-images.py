#!/usr/bin/env python3
"""Pin the third-party images of the build and the manifests to digests: ``name:tag`` -> ``name:tag@sha256:...``.

The base image on deploy/Dockerfile's ``FROM`` lines and every third-party ``image:`` under deploy/k8s/ (NATS,
``nats:...``; the dev overlay's SeaweedFS, ``chrislusf/seaweedfs:...``; any other but mfscore's own) are looked up on
their registry with whichever tool is installed (``docker buildx imagetools``, ``crane`` or ``skopeo``) and rewritten
in place, so a rebuild or a rollout pulls the same bytes even when the tag moves. An image already pinned gets its
tag's current digest. Nothing is written unless every image resolved: a digest is only ever what a registry
answered. mfscore's own image (``mfscore:...``) is not here: the release pushes it and sets it by digest with
``kustomize edit set image`` (docs/deploy.md, "Reproducible images and the release").

    python deploy/pin-images.py             # rewrite the files
    python deploy/pin-images.py --dry-run   # print what would change, write nothing
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# name[:tag][@digest]; the tag is what gets resolved, the old digest is replaced
REFERENCE = re.compile(r"(?P<name>[a-z0-9][a-z0-9._/-]*(?::\d+/[a-z0-9._/-]+)?)(?::(?P<tag>[\w][\w.-]{0,127}))?"
                       r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?")
FROM_LINE = re.compile(r"^(?P<lead>FROM\s+(?:--platform=\S+\s+)?)(?P<ref>\S+)(?P<rest>.*)$", re.MULTILINE | re.I)
IMAGE_LINE = re.compile(r"^(?P<lead>\s*-?\s*image:\s*)(?P<quote>[\"']?)(?P<ref>[^\s\"'#]+)(?P=quote)(?P<rest>.*)$",
                        re.MULTILINE)

DigestOf = Callable[[str], str]


class PinError(Exception):
    """An image could not be pinned; the message is one sentence for the person running the release."""


def pinned(reference: str, digest_of: DigestOf) -> str:
    """``reference`` as ``name:tag@digest``, the digest being what ``digest_of(name:tag)`` answers."""
    m = REFERENCE.fullmatch(reference)
    if not m or not m["tag"]:
        raise PinError(f"{reference} names no tag to pin: write it as name:tag.")
    tagged = f"{m['name']}:{m['tag']}"
    digest = digest_of(tagged)
    if not DIGEST.fullmatch(digest):
        raise PinError(f"The registry's answer for {tagged} is not a sha256 digest: {digest!r}.")
    return f"{tagged}@{digest}"


def pin_dockerfile(text: str, digest_of: DigestOf) -> str:
    """The Dockerfile with every ``FROM`` image pinned (a ``FROM`` naming an earlier stage is left alone)."""
    stages = {m.group(1).lower() for m in re.finditer(r"^FROM\s+.*?\s+AS\s+(\S+)\s*$", text, re.MULTILINE | re.I)}

    def one(m: re.Match) -> str:
        if m["ref"].lower() in stages or m["ref"] == "scratch":
            return m[0]
        return f"{m['lead']}{pinned(m['ref'], digest_of)}{m['rest']}"

    return FROM_LINE.sub(one, text)


# mfscore's own image, by its last path component: the release pins it (``kustomize edit set image``), not this
OWN_IMAGE = "mfscore"


def is_third_party(reference: str) -> bool:
    """Whether an ``image:`` reference names someone else's image (NATS, SeaweedFS, ...), which this pins."""
    m = REFERENCE.fullmatch(reference)
    return bool(m) and m["name"].rsplit("/", 1)[-1] != OWN_IMAGE


def pin_manifest(text: str, digest_of: DigestOf) -> str:
    """The YAML text with every third-party ``image:`` pinned; mfscore's own image unchanged."""
    def one(m: re.Match) -> str:
        if not is_third_party(m["ref"]):
            return m[0]
        return f"{m['lead']}{m['quote']}{pinned(m['ref'], digest_of)}{m['quote']}{m['rest']}"

    return IMAGE_LINE.sub(one, text)


def pin_files(root: Path, digest_of: DigestOf) -> dict[Path, str]:
    """The new text of each file under ``root`` whose images change; every lookup is made before anything is
    returned, so a failure leaves every file as it was."""
    lookups: dict[str, str] = {}

    def cached(reference: str) -> str:
        if reference not in lookups:
            lookups[reference] = digest_of(reference)
        return lookups[reference]

    changed = {}
    targets = [(root / "deploy" / "Dockerfile", pin_dockerfile)]
    targets += [(p, pin_manifest) for p in sorted((root / "deploy" / "k8s").rglob("*.yaml"))]
    for path, pin in targets:
        text = path.read_text()
        new = pin(text, cached)
        if new != text:
            changed[path] = new
    return changed


# ----------------------------------------------------------------------------- the registry, through a tool

def _run(command: list[str]) -> bytes:
    try:
        result = subprocess.run(command, capture_output=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        raise PinError(f"Could not read {command[-1]} from its registry ({command[0]}: no answer in 120 s).") from None
    if result.returncode != 0:
        lines = result.stderr.decode(errors="replace").strip().splitlines() or ["no message"]
        raise PinError(f"Could not read {command[-1]} from its registry ({command[0]}: {lines[-1].strip()}).")
    return result.stdout


def _docker_buildx(reference: str) -> str:
    out = _run(["docker", "buildx", "imagetools", "inspect", "--format", "{{json .Manifest}}", reference])
    return json.loads(out)["digest"]


def _crane(reference: str) -> str:
    return _run(["crane", "digest", reference]).decode().strip()


def _skopeo(reference: str) -> str:
    # the digest of a manifest (or index) is the SHA-256 of its bytes as the registry serves them
    return "sha256:" + hashlib.sha256(_run(["skopeo", "inspect", "--raw", f"docker://{reference}"])).hexdigest()


def _has_buildx() -> bool:
    return bool(shutil.which("docker")) and subprocess.run(
        ["docker", "buildx", "version"], capture_output=True, timeout=30, check=False).returncode == 0


def registry_lookup() -> DigestOf:
    """The digest lookup of the first registry tool installed."""
    if _has_buildx():
        return _docker_buildx
    if shutil.which("crane"):
        return _crane
    if shutil.which("skopeo"):
        return _skopeo
    raise PinError("No tool to read image digests from a registry is installed: "
                   "install docker buildx, crane or skopeo and run this again.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    try:
        changed = pin_files(args.root, registry_lookup())
    except PinError as error:
        print(f"pin-images: {error} Nothing was changed.", file=sys.stderr)
        return 1
    for path, text in changed.items():
        if not args.dry_run:
            path.write_text(text)
        print(f"{'would pin' if args.dry_run else 'pinned'} {path.relative_to(args.root)}")
    if not changed:
        print("every image is pinned to its tag's current digest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
