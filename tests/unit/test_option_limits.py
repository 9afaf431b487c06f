"""The resource options (pixels, bytes, kernel sizes, JSON size) have maxima a client cannot raise (issue 41, 5).

Two maxima bound each one: the hard maximum in ``mfscore.limits``, which the options types check wherever the
options are made (the command line, a Python caller, a run's options decoded from the wire), and the server's
maximum, set by the operator (``MFSCORE_MAX_*``, defaults the default limits), which the services check on a
submitted run's options (``mfscore.options.check_limits``). A client may lower a limit, never raise it.
"""

from __future__ import annotations

import json

import pytest

from mfscore import limits, options_schema, tasks
from mfscore.cli.main import build_parser
from mfscore.codec import encode
from mfscore.errors import OptionError
from mfscore.options import check_limits
from mfscore.services.common.settings import Settings

REFERENCE_LAYOUT = {"ref_dir": "ref", "reference": "reference/r.csv", "index": "indexes/x.csv", "system": "sys/s.csv"}
PROVENANCE = {"index_file": "ref/x.csv", "reference_file": "ref/r.csv", "node_file": "ref/n.csv",
              "world_file": "ref/w.csv", "reference_dir": "ref", "system_output_file": "sys/s.csv",
              "system_dir": "sys"}
BASE = {"mask": REFERENCE_LAYOUT, "video-spatial": REFERENCE_LAYOUT, "provenance-graph": PROVENANCE,
        "provenance-filtering": PROVENANCE}

# (task, the option's path in the options JSON, its flag, the server limit it counts against, its hard maximum)
RESOURCE_OPTIONS = [
    ("mask", ("scoring", "max_pixels"), "--max-pixels", "max_pixels", limits.HARD_MAX_PIXELS),
    ("mask", ("scoring", "max_job_bytes"), "--max-job-bytes", "max_job_bytes", limits.HARD_MAX_JOB_BYTES),
    ("mask", ("scoring", "zones", "erode_size"), "--eks", "max_kernel_size", limits.HARD_MAX_KERNEL_SIZE),
    ("mask", ("scoring", "zones", "dilate_size"), "--dks", "max_kernel_size", limits.HARD_MAX_KERNEL_SIZE),
    ("mask", ("scoring", "zones", "distraction_size"), "--ntdks", "max_kernel_size", limits.HARD_MAX_KERNEL_SIZE),
    ("video-spatial", ("scoring", "max_elements"), "--max-elements", "max_video_elements",
     limits.HARD_MAX_VIDEO_ELEMENTS),
    ("video-spatial", ("scoring", "rules", "zones", "erode_size"), "--eks", "max_kernel_size",
     limits.HARD_MAX_KERNEL_SIZE),
    ("provenance-graph", ("max_json_bytes",), "--max-json-bytes", "max_json_bytes", limits.HARD_MAX_JSON_BYTES),
    ("provenance-filtering", ("max_json_bytes",), "--max-json-bytes", "max_json_bytes", limits.HARD_MAX_JSON_BYTES),
]
IDS = [f"{task}:{'.'.join(path)}" for task, path, *_ in RESOURCE_OPTIONS]


def _options_json(task: str, path: tuple[str, ...], value) -> bytes:
    """A run's options as a client sends them, with the option at ``path`` set to ``value``."""
    data = json.loads(encode(tasks.get(task).options_type(**BASE[task])))
    node = data
    for name in path[:-1]:
        node = node[name]
    node[path[-1]] = value
    return json.dumps(data).encode()


def _above(value: int) -> int:
    """The next value above ``value`` the option's other checks accept (kernel sizes are odd)."""
    return value + 2 if value % 2 else value + 1


@pytest.mark.parametrize(("task", "path", "flag", "limit", "hard"), RESOURCE_OPTIONS, ids=IDS)
def test_a_value_above_the_hard_maximum_is_refused_wherever_the_options_are_made(task, path, flag, limit, hard):
    tasks.decode_options(tasks.get(task), _options_json(task, path, hard))
    with pytest.raises(OptionError) as refused:
        tasks.decode_options(tasks.get(task), _options_json(task, path, _above(hard)))
    assert refused.value.option == path[-1] and flag in refused.value.sentence()
    assert f"{hard}" in refused.value.sentence()


@pytest.mark.parametrize(("task", "path", "flag", "limit", "hard"), RESOURCE_OPTIONS, ids=IDS)
def test_a_server_refuses_a_value_above_its_maximum_and_accepts_one_below(task, path, flag, limit, hard):
    server = Settings().option_limits
    most = server[limit]
    assert most <= hard
    lowered = tasks.decode_options(tasks.get(task), _options_json(task, path, 1))
    check_limits(lowered, server)
    at_most = tasks.decode_options(tasks.get(task), _options_json(task, path, most))
    check_limits(at_most, server)
    with pytest.raises(OptionError) as refused:
        check_limits(at_most, {**server, limit: most - 1})
    sentence = refused.value.sentence()
    assert refused.value.option == path[-1], sentence
    assert flag in sentence and f"at most {most - 1} " in sentence and "\n" not in sentence, sentence


@pytest.mark.parametrize(("name", "default"), [
    ("max_pixels", limits.DEFAULT_MAX_PIXELS), ("max_job_bytes", limits.DEFAULT_MAX_JOB_BYTES),
    ("max_json_bytes", limits.DEFAULT_MAX_JSON_BYTES), ("max_video_elements", limits.DEFAULT_MAX_VIDEO_ELEMENTS),
    ("max_kernel_size", limits.DEFAULT_MAX_KERNEL_SIZE)])
def test_the_server_maxima_default_to_the_default_limits(name, default):
    assert Settings().option_limits[name] == default


def test_the_operator_sets_a_maximum_and_cannot_set_one_above_the_hard_maximum():
    assert Settings.from_env({"MFSCORE_MAX_KERNEL_SIZE": "31"}).option_limits["max_kernel_size"] == 31
    assert Settings.from_env({"MFSCORE_MAX_FINDINGS": "50"}).max_findings == 50
    with pytest.raises(OptionError, match="MFSCORE_MAX_KERNEL_SIZE"):
        Settings.from_env({"MFSCORE_MAX_KERNEL_SIZE": str(limits.HARD_MAX_KERNEL_SIZE + 2)})
    with pytest.raises(OptionError, match="MFSCORE_MAX_PIXELS"):
        Settings.from_env({"MFSCORE_MAX_PIXELS": "0"})


def test_the_kernel_of_the_attack_is_a_usage_error(capsys):
    arguments = ["mask", "--refDir", "ref", "-r", "r.csv", "-x", "x.csv", "-s", "s.csv", "-oR", "out/run"]
    with pytest.raises(SystemExit) as usage:
        build_parser().parse_args([*arguments, "--eks", "99999"])
    assert usage.value.code == 2
    assert f"{limits.HARD_MAX_KERNEL_SIZE}" in capsys.readouterr().err


@pytest.mark.parametrize(("task", "path", "flag", "limit", "hard"), RESOURCE_OPTIONS, ids=IDS)
def test_the_published_schema_states_the_hard_maximum(task, path, flag, limit, hard):
    node = json.loads(options_schema.path(task).read_text())
    for name in path:
        node = node["properties"][name]
    assert hard in [part.get("maximum") for part in [node, *node.get("anyOf", ()), *node.get("allOf", ())]], node
