#!/bin/sh
# Writes the two lock files every environment installs, with uv (`make lock` runs this):
#   requirements.lock    every dependency of every extra (the venv of `make setup`, `make test`, .ci/run)
#   deploy/image.lock    the subset the service image installs (the `cluster` extra), at the same versions
# for CPython 3.11 on Linux x86_64, each distribution with the sha256 of every file PyPI has of it, so
# `pip install --require-hashes --no-deps -r <lock>` installs the same bytes on any machine. The build
# backend (pyproject.toml's build-system.requires) is locked too: the checkout is installed without build
# isolation, so nothing is resolved at install time.
#
# Releases uploaded after EXCLUDE_NEWER are not considered, so running this again gives the same lock;
# upgrading is moving that date (and `make test-latest` shows what the newest releases would do).
set -eu
cd "$(dirname "$0")/.."
EXCLUDE_NEWER=${EXCLUDE_NEWER:-2026-11-27T14:00:00Z}
uv=${UV:-.venv/bin/uv}
build=$(mktemp)
trap 'rm -f "$build"' EXIT
.venv/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' > "$build"
compile() {
  UV_CUSTOM_COMPILE_COMMAND="make lock" "$uv" pip compile --quiet --generate-hashes --python-version 3.11 \
    --python-platform x86_64-manylinux_2_28 --exclude-newer "$EXCLUDE_NEWER" --no-config --index-url https://pypi.org/simple "$@"
}
compile --all-extras pyproject.toml "$build" -o requirements.lock
compile --extra cluster -c requirements.lock pyproject.toml "$build" -o deploy/image.lock
echo "wrote requirements.lock ($(grep -c '^[a-z]' requirements.lock) distributions) and deploy/image.lock ($(grep -c '^[a-z]' deploy/image.lock))"
