"""A client in another language drives the cluster from the .proto files alone (issue 25, "Another language drives
it"; docs/distributed.md "Another language"): ``tests/node/client.mjs``, Node.js with @grpc/grpc-js and
@grpc/proto-loader from the committed package-lock.json, which imports nothing of mfscore.

Python's part is what is not the wire protocol: it generates the data, runs the embedded command to compare with,
and says which files the run reads (the task's planning, ``run_inputs``). The options are written here by hand as
the JSON object the task's published schema describes (``mfscore/formats/schemas/options-<task>.json``), the
fields the command line sets and nothing else, never from mfscore's options types; the Node client checks them
against the schema and sends them. What it fetched must be the embedded run's: every report file byte for byte
(the provenance, whose times differ, left out), the typed results equal to the embedded ``<prefix>_results.json``,
and the run listed by ``ListRuns`` page after page as Python's client lists it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from google.protobuf import json_format

from mfscore import tasks
from mfscore.cli.main import build_parser, main
from mfscore.codec import encode
from mfscore.results import Results
from mfscore.run.local import RESULTS_FILE
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.commands.report import list_runs
from mfscore.services.commands.submit import run_inputs
from mfscore.services.common.results_wire import results_from_message
from mfscore.services.wire import results_pb2, runs_pb2, services_pb2_grpc
from mfscore.tasks.base import relocated
from output_files import tree

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "tests" / "node" / "client.mjs"
PAGE_SIZE = 2  # small, so that the Node client's listing takes several pages
QUERIES = ["Purpose==['add']", "Purpose==['remove','clone','heal']"]


def node() -> str:
    """The node executable; a clear failure (never a skip) when it or the npm packages are missing."""
    found = shutil.which("node")
    assert found, ("node is not on PATH: this test drives the cluster from Node.js (tests/node/client.mjs); install "
                   "Node.js 18 or later, then 'make test' installs its packages with npm ci")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    assert int(re.match(r"v(\d+)", version).group(1)) >= 18, f"tests/node/client.mjs needs Node.js 18 or later, not {version}"
    for package in ("@grpc/grpc-js", "@grpc/proto-loader"):
        assert (ROOT / "node_modules" / package / "package.json").is_file(), \
            f"{package} is not installed in node_modules/: run 'npm ci' ('make test' does)"
    return found


@pytest.fixture(scope="module")
def caller(local_cluster, tmp_path_factory):
    """A client of its own on the shared local cluster, its cluster file as 'mfscore local-cluster token --out'
    writes it, with three runs it created before, so that its listing spans pages."""
    _, config = local_cluster
    path = tmp_path_factory.mktemp("node-caller") / "cluster.json"
    commands.add_caller(config, "nora-node", "client", out=path)
    time.sleep(1.5)  # the services read the tokens file again within a second
    mine = ClusterConfig.read(path)
    with mine.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        earlier = [stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=10).run_id for _ in range(3)]
    yield path, mine
    with mine.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        for run_id in earlier:
            stub.CancelRun(runs_pb2.CancelRunRequest(run_id=run_id), timeout=10)
            stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=run_id), timeout=30)


def detection_run(directory: Path) -> tuple[list[str], dict]:
    """4,000 trials (the reference table is over 256 KiB: several upload chunks), CIs, SemaFor metrics, two -qm
    queries; the command line, and its options as a client writes them from the published schema."""
    data = generate_detection_dataset(directory, 4000)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir",
                 str(data.directory), "-s", data.system, "--ci", "--semafor", "-qm", *QUERIES]
    options = {"ref_dir": "ref", "reference": data.reference, "index": data.index, "kind": "manipulation",
               "system": "sys/" + Path(data.system).name,
               "scoring": {"ci": True, "semafor": True, "query_mode": "qm", "queries": QUERIES}}
    return arguments, options


def mask_run(directory: Path) -> tuple[list[str], dict]:
    """8 probes whose masks the cluster's mask scorer pool scores, two -qm queries."""
    data = generate_mask_dataset(directory, 8, width=96, height=72)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "-s",
                 str(data.directory / data.system), "--sbin", "128", "-qm", *QUERIES]
    options = {"ref_dir": "ref", "reference": data.reference, "index": data.index,
               "system": "sys/" + Path(data.system).name, "scoring": {"sbin": 128}, "manipulation_queries": QUERIES}
    return arguments, options


RUNS = {"detection": (detection_run, "-o"), "mask": (mask_run, "-oR")}


def drive(cluster_file: Path, task: str, tmp_path: Path, dataset: dict | None = None) -> tuple[dict, Path, list]:
    """The run scored embedded, then by the cluster as the Node client drives it (against ``dataset``, which it
    registers first, when given); (its summary, the directory of the embedded reports, the (path, key) of every
    file the run reads)."""
    executable = node()
    make, flag = RUNS[task]
    arguments, written = make(tmp_path / "data")
    embedded = tmp_path / "embedded"
    assert main([task, *arguments, flag, str(embedded / "run"), "--quiet"]) == 0

    # The planning (which files the run reads, under which keys) is the task's, done here as 'submit' does it.
    parsed = build_parser().parse_args([task, *arguments, flag, str(tmp_path / "unused" / "run")])
    options = parsed.task_options(parsed).options
    files, tables = run_inputs(tasks.get(task), options)
    inputs = tasks.get(task).inputs(options)
    expected = relocated(options, inputs, {name: name for name in inputs.roots})
    # the hand-written options are this run's: the ones 'mfscore submit' would send, defaults left out
    assert tasks.decode_options(tasks.get(task), json.dumps(written).encode()) == expected

    run = tmp_path / "run.json"
    run.write_text(json.dumps({"task": task, "options": written, "tables": tables, "output_name": "run",
                               "files": [{"path": path, "key": key} for path, key in files],
                               **({"dataset": dataset} if dataset else {})}))
    out, summary = tmp_path / "node-out", tmp_path / "summary.json"
    started = time.monotonic()
    done = subprocess.run([executable, str(CLIENT), "--cluster", str(cluster_file), "--run", str(run), "--out",
                           str(out), "--summary", str(summary), "--page-size", str(PAGE_SIZE)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - started
    assert done.returncode == 0, f"the Node client exited {done.returncode}:\n{done.stderr}{done.stdout}"
    said = json.loads(summary.read_text())
    declared = [{"name": key, "size": Path(path).stat().st_size, "sha256": hashlib.sha256(Path(path).read_bytes())
                 .hexdigest()} for path, key in files]
    # against a dataset, only the system output travels: every file under the dataset's root is the dataset's
    assert said["uploaded"] == [f for f in declared if not dataset or not f["name"].startswith(dataset["root"] + "/")]
    assert tasks.decode_options(tasks.get(task), said["options_sent"].encode()) == expected
    assert tree(out) == tree(embedded)  # byte-identical, and nothing left of its staging
    print(f"\nNode client, {task}: {len(files)} file(s) uploaded in {said['upload_chunks']} chunk(s), "
          f"{len(said['report']['files'])} report file(s), states {' > '.join(said['states'])}; "
          f"{seconds:.1f} s (node's own clock {said['seconds']:.1f} s)\n{done.stderr}")
    return said, embedded, files


@pytest.mark.parametrize("task", sorted(RUNS))
def test_a_node_client_drives_a_run_from_the_protos_alone(task, caller, tmp_path):
    cluster_file, config = caller
    said, embedded, _ = drive(cluster_file, task, tmp_path)
    run_id = said["run_id"]
    assert said["states"][-1] == "RUN_STATE_DONE" and said["final"]["trials_received"] == \
        said["final"]["trials_planned"] > 0
    assert said["report"]["exit_status"] == 0 and said["report"]["largest_chunk"] <= 512 << 10

    # typed results: the proto3 JSON the Node client decoded, read back into the model, is the embedded file's
    (results_file,) = embedded.glob(f"*{RESULTS_FILE}")
    message = json_format.ParseDict(said["results"], results_pb2.Results())
    assert results_from_message(message) == Results.from_json(results_file.read_bytes())
    assert message.task == task and message.primary and message.rows

    # ListRuns: every page the Node client read is the caller's runs as Python's client lists them
    with config.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        listed = [run.run_id for run in list_runs(stub)]
        assert message == stub.GetResults(results_pb2.GetResultsRequest(run_id=run_id), timeout=30).results
    assert [run["run_id"] for run in said["listed"]["runs"]] == listed and run_id in listed
    assert said["listed"]["pages"] == -(-len(listed) // PAGE_SIZE) >= 2


def test_a_node_client_speaks_tls_to_a_tls_cluster(tls_cluster, tmp_path):
    """'local-cluster up --tls': the cluster file's tls_ca is the CA the Node client checks the aggregator against
    (a client without it is refused); the operator's token, the cluster file as 'up' wrote it."""
    path, config = tls_cluster
    assert config.tls_ca
    said, _, _ = drive(path, "mask", tmp_path)
    assert said["states"][-1] == "RUN_STATE_DONE"

    plain = tmp_path / "plaintext.json"  # the same file without its CA: the client speaks plaintext, refused
    plain.write_text(json.dumps({**json.loads(path.read_text()), "tls_ca": ""}))
    run = tmp_path / "run.json"
    done = subprocess.run([node(), str(CLIENT), "--cluster", str(plain), "--run", str(run), "--out",
                           str(tmp_path / "refused")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "CreateRun failed: UNAVAILABLE" in done.stderr, done.stderr
    assert not (tmp_path / "refused").exists()


def test_a_node_client_registers_a_dataset_and_scores_against_it(local_cluster, tmp_path):
    """docs/datasets.md from Node.js: the mask run's reference tree (ref/) registered as a dataset, the first time
    every file uploaded, again nothing; the run names it and uploads only the system output; the reports are
    still the embedded run's, byte for byte. A caller of its own: objects are content-addressed per owner, so no
    other test's uploads count as its."""
    _, config = local_cluster
    path = tmp_path / "caller.json"
    commands.add_caller(config, "nora-datasets", "client", out=path)
    time.sleep(1.5)  # the services read the tokens file again within a second
    dataset = {"name": "nora-datasets/masks", "version": "1", "root": "ref"}
    said, _, files = drive(path, "mask", tmp_path, dataset)
    reference = sorted(key.removeprefix("ref/") for _, key in files if key.startswith("ref/"))
    registered = said["dataset"]
    assert registered["ref"] == "nora-datasets/masks@1" and registered["files"] == len(reference) > 0
    assert sorted(registered["uploaded"]) == reference  # the first registration: every file
    assert registered["created"] is True and registered["created_again"] is False  # again: nothing uploaded
    assert registered["got"]["owner"] == "nora-datasets" and not registered["got"].get("shared")
    assert registered["got"]["manifest_sha256"] == registered["manifest_sha256"]
    assert said["declared_inputs"] == [key for _, key in files]
    assert said["uploaded"] and all(f["name"].startswith("sys/") for f in said["uploaded"])
    assert said["states"][-1] == "RUN_STATE_DONE"
    board = said["leaderboard"]  # the dataset's board, from Node: this run, ranked by the task's primary metric
    assert board["dataset"] == "nora-datasets/masks@1" and board["task"] == "mask"
    (line,) = board["rankings"][0]["lines"]
    assert line["run_id"] == said["run_id"] and line["owner"] == "nora-datasets" and line["rank"] == 1
    assert line["value"] == pytest.approx(said["results"]["rows"][0]["values"][board["metric"]]["value"], abs=1e-12)
