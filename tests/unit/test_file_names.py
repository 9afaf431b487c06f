"""``mfscore.formats.file_names``: an ID becomes one file name in its directory, ordinary IDs unchanged; a table's
file name is confined to its directory, and a refusal names neither that directory nor what lies outside it."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mfscore.errors import ImageError, InputFileError
from mfscore.formats.file_names import MAX_NAME_BYTES, confined_path, identifier_of, output_name

ORDINARY = st.text(st.characters(categories=("Lu", "Ll", "Nd", "Lo"), include_characters="_-. +()~#"),
                   min_size=1, max_size=60).filter(lambda text: not text.startswith("."))


@given(ORDINARY)
def test_an_ordinary_id_is_its_own_file_name(identifier):
    assert output_name(identifier) == identifier


@pytest.mark.parametrize("identifier, name", [
    ("../x", "%2E.%2Fx"), ("..", "%2E."), (".", "%2E"), (".hidden", "%2Ehidden"), ("a/b", "a%2Fb"),
    ("a\\b", "a%5Cb"), ("a\0b", "a%00b"), ("/etc/passwd", "%2Fetc%2Fpasswd"), ("100%", "100%25"),
    ("line\nbreak", "line%0Abreak"), ("vid0001processed", "vid0001processed"), ("a..b", "a..b"),
])
def test_a_name_that_would_leave_its_directory_is_encoded(identifier, name):
    assert output_name(identifier) == name
    assert identifier_of(name) == identifier


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=400))
@example("../" * 80 + "x")
@example("é" * 150)
@example("%" * 100)
def test_any_id_becomes_one_file_inside_its_directory(tmp_path, identifier):
    name = output_name(identifier)
    assert name not in (".", "..") and not name.startswith(".")
    assert not {"/", "\\", "\0"} & set(name)
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES  # strict UTF-8: the file system takes it
    path = tmp_path / "dir" / f"{name}.csv"
    path.parent.mkdir(exist_ok=True)
    path.write_text("x")
    assert [p.name for p in path.parent.iterdir()] == [f"{name}.csv"]
    path.unlink()
    if len(name.encode("utf-8")) < MAX_NAME_BYTES - 17:
        assert identifier_of(name) == identifier


@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
@example("a" * 300 + "x", "a" * 300 + "y")
@example("a/b", "a%2Fb")
def test_two_ids_never_share_a_file_name(first, second):
    if first != second:
        assert output_name(first) != output_name(second)


def test_an_empty_id_is_refused():
    with pytest.raises(InputFileError, match="empty ID"):
        output_name("")


def test_a_table_file_name_outside_its_directory_is_refused_without_naming_the_directory(tmp_path):
    root = tmp_path / "work" / "inputs" / "ref"
    root.mkdir(parents=True)
    (tmp_path / "work" / "secret.json").write_text("{}")
    os.symlink(tmp_path / "work", root / "up")
    for name, message in [("/etc/passwd", "absolute"), ("/nonexistent/x", "absolute"), ("../secret.json", "leaves"),
                          ("../missing.json", "leaves"), ("a/../../../x", "leaves"), ("up/secret.json", "symbolic"),
                          ("up/missing.json", "symbolic"), ("", "empty"), ("a\0b", "NUL"), ("\\x", "absolute")]:
        with pytest.raises(InputFileError, match=message) as info:
            confined_path(root, name, what="journal")
        assert type(info.value) is InputFileError and "journal" in info.value.message
        assert str(tmp_path) not in info.value.sentence()
    with pytest.raises(ImageError):
        confined_path(root, "../x", what="mask", error=ImageError)
    assert confined_path(root, "sub/../m.json", what="journal") == os.path.join(root, "sub/../m.json")


def test_a_refusal_says_the_same_of_an_existing_and_a_missing_file(tmp_path):
    root = tmp_path / "ref"
    root.mkdir()
    (tmp_path / "there.json").write_text("{}")
    os.symlink(tmp_path, root / "up")
    said = {}
    for name in ("../there.json", "../gone.json", str(tmp_path / "there.json"), str(tmp_path / "gone.json"),
                 "up/there.json", "up/gone.json"):
        with pytest.raises(InputFileError) as info:
            confined_path(root, name, what="journal")
        said[name] = info.value.message
    assert said["../there.json"] == said["../gone.json"]
    assert said[str(tmp_path / "there.json")] == said[str(tmp_path / "gone.json")]
    assert said["up/there.json"] == said["up/gone.json"]
