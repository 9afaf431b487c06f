"""Hostile IDs and file names in every table column that becomes a path, for every registered task, embedded.

Each example copies a small dataset into a sandbox of its own, puts one hostile value (``..``, ``../../x``, an
absolute path, NUL, backslashes, unicode, 300 characters) in place of one ID or file name, in every table that
has that column, and runs the command. Beside the data lies ``bait/``: a copy of the file the cell named, where
the escaping names point (``../../bait/<file>``, its absolute path), its access time set to 1970 so that any read
of it shows (the file system updates an access time older than the file's change). Whatever the value, the run
ends with status 0 or 1 and no traceback; nothing outside its output directory is created or changed, no bait is
read; a refused run leaves its output directory empty. (``|``, quotes and line breaks are left out of the values:
they break the table's lines, not its paths.)
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from output_files import everything_under

from mfscore import tasks
from mfscore.cli.main import main
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.sample_data.provenance import generate_provenance_dataset
from mfscore.sample_data.video import sample_temporal_dataset, sample_video_dataset


@dataclass(frozen=True)
class Case:
    """A task's small dataset (``make(data) -> arguments``, outputs under ``-o``/``-oR`` added by the test) and
    its columns that become paths: an ID naming an output, or a file name read."""

    make: Callable[[Path], list[str]]
    output: str                       # "-o" (a directory) or "-oR" (DIR/run)
    ids: tuple[str, ...]
    files: tuple[str, ...] = ()


def _detection(data: Path) -> list[str]:
    d = generate_detection_dataset(data, 24)
    return ["detection", "--refDir", str(d.directory), "-r", d.reference, "-x", d.index,
            "--sysDir", str(d.directory), "-s", d.system]


def _mask(data: Path) -> list[str]:
    d = generate_mask_dataset(data, 3, width=32, height=24)
    return ["mask", "--refDir", str(d.directory), "-r", d.reference, "-x", d.index, "-s", str(d.directory / d.system),
            "--sbin", "128", "--visuals", "1"]


def _video_spatial(data: Path) -> list[str]:
    return ["video-spatial", *sample_video_dataset(data).cli_args(), "--eks", "3", "--dks", "3"]


def _video_temporal(data: Path) -> list[str]:
    return ["video-temporal", *sample_temporal_dataset(data).cli_args(), "-T", "-R"]


def _provenance(task: str, *extra: str) -> Callable[[Path], list[str]]:
    return lambda data: [task, *generate_provenance_dataset(data, 4).options("system.csv"), *extra]


PROVENANCE_PATHS = ("JournalFileName", "ProvenanceOutputFileName")
CASES = {
    "detection": Case(_detection, "-o", ("ProbeFileID",)),
    "mask": Case(_mask, "-oR", ("ProbeFileID",), ("ProbeMaskFileName", "OutputProbeMaskFileName")),
    "video-spatial": Case(_video_spatial, "-oR", ("ProbeFileID",), ("HDF5MaskFileName", "OutputProbeMaskFileName")),
    "video-temporal": Case(_video_temporal, "-o", ("ProbeFileID",)),
    "provenance-filtering": Case(_provenance("provenance-filtering"), "-o", ("ProvenanceProbeFileID",),
                                 PROVENANCE_PATHS),
    "provenance-graph": Case(_provenance("provenance-graph", "-p", "-H"), "-o", ("ProvenanceProbeFileID",),
                             PROVENANCE_PATHS),
}
ESCAPES = ("..", ".", "../../x", "/", "\\", "..\\..\\x", "a/../../x", "./../x", ".hidden", "...", "%2E%2E%2Fx",
           "x\0y", "\0", "/etc/passwd", "/proc/self/environ", "C:\\x", "ü/../..", "é" * 300, "a" * 300, "漢字/..")


def test_every_registered_task_is_tried():
    assert sorted(CASES) == sorted(tasks.names())


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, tuple[Path, list[str]]]:
    """Each task's dataset, made once: (its directory, its arguments naming it)."""
    made = {}
    for name, case in CASES.items():
        data = tmp_path_factory.mktemp(name.replace("-", "_")) / "data"
        made[name] = data, case.make(data)
    return made


def hostile(data: st.DataObject, sandbox: Path, original: str) -> str:
    """A value aimed outside the data: at the bait beside it, at fixed escapes, or drawn from path characters."""
    bait = f"bait/{os.path.basename(original)}"
    aimed = [*("../" * up + bait for up in range(1, 8)), str(sandbox / bait), f"sub/../../../../{bait}"]
    drawn = st.text(st.sampled_from(list("./\\\0aZ%~é漢- _")), min_size=1, max_size=24)
    return data.draw(st.one_of(st.sampled_from(aimed), st.sampled_from(ESCAPES), drawn,
                               st.text(st.characters(codec="utf-8", exclude_characters="|\"\r\n"),  # a table is UTF-8
                                       min_size=1, max_size=40)))


def _rewrite(data: Path, column: str, value_of: Callable[[str], str]) -> tuple[str, str]:
    """Put ``value_of(original)`` in place of the first value of ``column`` in every table that has the column:
    (the original, the value)."""
    tables = {path: path.read_text().split("\n") for path in sorted(data.rglob("*.csv"))}
    original = next(lines[1].split("|")[lines[0].split("|").index(column)] for lines in tables.values()
                    if column in lines[0].split("|") and len(lines) > 1)
    assert original, column
    value = value_of(original)
    for path, lines in tables.items():
        header = lines[0].split("|")
        if column not in header:
            continue
        at = header.index(column)
        for k, line in enumerate(lines[1:], start=1):
            cells = line.split("|")
            if len(cells) == len(header) and cells[at] == original:
                cells[at] = value
                lines[k] = "|".join(cells)
        path.write_text("\n".join(lines))
    return original, value


def _snapshot(root: Path, *, leaving_out: Path) -> dict[str, tuple]:
    """Every entry under ``root`` but ``leaving_out``: its kind, size and modification time (no content read)."""
    found = {}
    for directory, dirs, files in os.walk(root):
        if Path(directory) == leaving_out:
            dirs[:] = []
            continue
        for name in dirs + files:
            path = Path(directory) / name
            if path == leaving_out:
                continue
            info = path.lstat()
            found[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


def _prepare(template: Path, sandbox: Path, column: str, value_of: Callable[[str], str]) -> tuple[str, Path]:
    """The sandbox's data (with the value in ``column``), its bait (atime 1970) and its empty output directory."""
    shutil.copytree(template, sandbox / "data")
    original, value = _rewrite(sandbox / "data", column, value_of)
    bait = sandbox / "bait" / os.path.basename(original)
    bait.parent.mkdir()
    source = next((p for p in template.rglob(os.path.basename(original)) if p.is_file()), None)
    bait.write_bytes(source.read_bytes() if source else b"bait")
    os.utime(bait, (0, bait.stat().st_mtime))
    (sandbox / "out").mkdir()
    return value, bait


@dataclass
class Ran:
    status: int
    err: str
    sandbox: Path
    bait: Path
    changed: list[str]  # entries outside the output directory created, removed or modified

    @property
    def out(self) -> Path:
        return self.sandbox / "out"

    @property
    def last_line(self) -> str:
        return self.err.rstrip("\n").split("\n")[-1]  # not splitlines: a value may hold \x1e


def run(templates, task: str, place: Path, column: str, value_of: Callable[[Path, str], str], capsys,
        *extra: str) -> Ran:
    """``task`` on its dataset copied into a sandbox under ``place``, ``value_of(sandbox, original)`` in ``column``."""
    template, arguments = templates[task]
    sandbox = Path(tempfile.mkdtemp(dir=place))
    _, bait = _prepare(template, sandbox, column, lambda original: value_of(sandbox, original))
    out = sandbox / "out"
    before = _snapshot(place, leaving_out=out)
    moved = [re.sub(f"^{re.escape(str(template))}", str(sandbox / "data"), argument) for argument in arguments]
    capsys.readouterr()
    status = main([*moved, *extra, CASES[task].output, str(out / "run") if CASES[task].output == "-oR" else f"{out}/"])
    after = _snapshot(place, leaving_out=out)
    changed = sorted(name for name in after.keys() | before.keys() if after.get(name) != before.get(name))
    return Ran(status, capsys.readouterr().err, sandbox, bait, changed)


@pytest.mark.parametrize("task", sorted(CASES))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(data=st.data())
def test_no_hostile_value_reaches_outside_the_run(task, templates, tmp_path, capsys, data):
    case = CASES[task]
    column = data.draw(st.sampled_from(case.ids + case.files), label="column")
    ran = run(templates, task, tmp_path, column, lambda sandbox, original: hostile(data, sandbox, original), capsys)
    assert "Traceback" not in ran.err and "internal error" not in ran.err, ran.err
    assert ran.status in (0, 1), ran.err
    assert ran.changed == [], column
    assert ran.bait.stat().st_atime == 0, f"the bait was read through {column}"
    if ran.status == 1:
        assert ran.last_line.startswith("mfscore: error: "), ran.err
        assert everything_under(ran.out) == []
    real = os.path.realpath(ran.out)
    for name in everything_under(ran.out):
        assert os.path.commonpath([real, os.path.realpath(ran.out / name)]) == real
    shutil.rmtree(ran.sandbox)


def test_a_probe_id_names_its_threshold_table_inside_the_run(templates, tmp_path, capsys):
    ran = run(templates, "video-spatial", tmp_path, "ProbeFileID", lambda *_: "../../../escaped/written", capsys)
    assert (ran.status, ran.changed) == (0, []), ran.err
    assert (ran.out / "run_thresholds" / "%2E.%2F..%2F..%2Fescaped%2Fwritten.csv").is_file()
    assert "../../../escaped/written" in (ran.out / "run_pervideo.csv").read_text()  # the table keeps the ID


def test_a_probe_id_names_its_timeline_and_its_link_inside_the_run(templates, tmp_path, capsys):
    ran = run(templates, "video-temporal", tmp_path, "ProbeFileID", lambda *_: "../../x y", capsys)
    assert (ran.status, ran.changed) == (0, []), ran.err
    assert (ran.out / "plots" / "timeline_%2E.%2F..%2Fx y_0.png").is_file()
    assert 'href="plots/timeline_%252E.%252F..%252Fx%20y_0.png"' in (ran.out / "scores_probes.html").read_text()


def test_a_probe_id_names_its_graph_figure_inside_the_run(templates, tmp_path, capsys):
    ran = run(templates, "provenance-graph", tmp_path, "ProvenanceProbeFileID",
              lambda sandbox, _: f"{sandbox}/figure", capsys)
    assert (ran.status, ran.changed) == (0, []), ran.err
    assert (ran.out / "figures" / f"{str(ran.sandbox).replace('/', '%2F')}%2Ffigure.png").is_file()


@pytest.mark.parametrize("task, column", [("provenance-filtering", "JournalFileName"),
                                          ("provenance-graph", "JournalFileName"),
                                          ("mask", "ProbeMaskFileName"),
                                          ("video-spatial", "HDF5MaskFileName")])
def test_a_reference_file_outside_the_reference_is_refused_alike_whatever_is_there(templates, tmp_path, capsys,
                                                                                   task, column):
    """An existing file, a missing one, a directory, absolute or through '..': refused by a sentence that names the
    file as the table does, says nothing of what is there, and reads nothing."""
    aims = [lambda sandbox, original: f"{sandbox}/bait/{os.path.basename(original)}",
            lambda sandbox, _: f"{sandbox}/bait/missing", lambda sandbox, _: f"{sandbox}/bait", lambda *_: "/etc/passwd",
            lambda _, original: f"../../../../../bait/{os.path.basename(original)}",
            lambda *_: "../../../../../bait/missing", lambda *_: "../../../../../bait"]
    said = set()
    for aim in aims:
        ran = run(templates, task, tmp_path, column, aim, capsys)
        assert (ran.status, ran.changed, everything_under(ran.out)) == (1, [], []), ran.err
        assert ran.bait.stat().st_atime == 0
        assert ran.last_line.startswith("mfscore: error: ") and str(ran.sandbox / "data") not in ran.last_line
        sentence = ran.last_line.rsplit(": ", 1)[-1]
        assert not re.search(r"exist|regular|JSON|HDF5|image|directory\b(?! through)(?!$)", sentence), ran.last_line
        said.add(sentence)
    assert len(said) == 2, said  # one sentence for every absolute name, one for every '..' name
    assert all(s.endswith(("is absolute; it must be relative to its directory", "leaves its directory through '..'"))
               for s in said), said
