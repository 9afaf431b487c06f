"""Results on a cluster (real nats-server and S3 server): ``submit --json`` and ``report --json`` print the same
results document as the embedded command, with the cluster's provenance; ``report`` ends with the summary table
and ``--quiet`` drops it (docs/results.md)."""

from __future__ import annotations

import json
import re

import pytest

from mfscore.cli.main import main
from mfscore.sample_data.examples import example_arguments
from mfscore.services.commands.cluster_config import resolve
from mfscore.services.commands.report import Reconnecting, calling, list_runs

pytestmark = pytest.mark.integration


def test_submit_and_report_print_the_results(local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    arguments = example_arguments("detection", tmp_path / "data", tmp_path / "out")
    capsys.readouterr()
    assert main(["detection", *arguments, "--json"]) == 0
    embedded = json.loads(capsys.readouterr().out)

    assert main(["submit", "--cluster", str(cluster_file), "detection", *arguments, "--json"]) == 0
    said = capsys.readouterr()
    submitted = json.loads(said.out)  # the JSON alone on stdout
    assert "reports in" in said.err
    embedded_run, cluster_run = embedded.pop("run"), submitted.pop("run")
    assert submitted == embedded
    assert (embedded_run["runner"], cluster_run["runner"]) == ("embedded", "cluster")
    assert cluster_run["tables"] == embedded_run["tables"] and cluster_run["options"] == embedded_run["options"]

    run_id = re.match(r"mfscore: run ([0-9a-f]{32}) created\n", said.err).group(1)  # in full, first
    config = resolve(str(cluster_file))
    assert run_id == calling(config, lambda stub: list(list_runs(stub)),
                             Reconnecting(config.aggregator_address, "(listing)"))[-1].run_id
    assert main(["report", run_id, "--cluster", str(cluster_file), "-o", str(tmp_path / "again"), "--json"]) == 0
    fetched = json.loads(capsys.readouterr().out)
    assert fetched == {**submitted, "run": cluster_run}

    assert main(["report", run_id, "--cluster", str(cluster_file), "-o", str(tmp_path / "again")]) == 0
    table = capsys.readouterr().out.splitlines()
    assert f"detection: primary metric {submitted['primary']} (higher is better)" in table
    assert len(table) == table.index(f"detection: primary metric {submitted['primary']} (higher is better)") + 2 + \
        len(submitted["rows"])
    assert main(["report", run_id, "--cluster", str(cluster_file), "-o", str(tmp_path / "again"), "--quiet"]) == 0
    quiet = capsys.readouterr().out.splitlines()
    assert quiet and all("primary metric" not in line for line in quiet)
