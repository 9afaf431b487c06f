"""The requirement that defines the distributed mode: ``mfscore submit <task> ARGS`` on a cluster (real
nats-server, real S3 server, every service a process) leaves the same files, byte for byte, and prints
the same lines as ``mfscore <task> ARGS``."""

from __future__ import annotations

import shutil

import pytest

from mfscore.cli.main import main
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.masks import generate_mask_dataset
from integration.equivalence import assert_same_outputs, run_both, tree

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def detection_data(tmp_path_factory):
    data = generate_detection_dataset(tmp_path_factory.mktemp("detection"), 600)
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "--sysDir", str(data.directory), "-s", data.system]


@pytest.fixture(scope="module")
def mask_data(tmp_path_factory):
    """A manipulation dataset with bit-plane references; one system mask is corrupt and one is missing."""
    data = generate_mask_dataset(tmp_path_factory.mktemp("masks"), 16, bitplanes=True, jpeg2000=True)
    masks = sorted((data.directory / "system" / "mask").glob("*.png"))
    masks[0].write_bytes(b"\x89PNG\r\n\x1a\n not really")
    masks[1].unlink()
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "--sysDir", str(data.directory), "-s", data.system]


DETECTION_VARIANTS = {
    "plain": [],
    "ci-semafor-optout": ["--ci", "--semafor", "--optOut", "--outMeta", "--dump"],
    "query-manipulation": ["-qm", "Purpose==['add']", "Purpose==['remove','clone']", "--multiFigs"],
    "query-partition": ["-qp", "Purpose==['add','remove']", "--plotType", "det"],
    "query": ["-q", "ProbeWidth > 1000", "IsTarget=='N' or Purpose=='add'"],
}


@pytest.mark.parametrize("variant", sorted(DETECTION_VARIANTS))
def test_detection_reports_are_identical(variant, detection_data, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    a, b = tmp_path / "embedded", tmp_path / "cluster"
    runs = run_both(capsys, cluster_file, "detection", detection_data + DETECTION_VARIANTS[variant], "-o",
                    str(a / "x"), str(b / "x"))
    files = assert_same_outputs(a, b, *runs)
    assert any(name.endswith("_report.csv") for name in files)


MASK_VARIANTS = {
    "plain": ["--sbin", "128", "--extras-pixels", "scored"],
    "selective-queries": ["-qm", "Purpose==['add']", "Purpose==['clone','splice']", "--sbin", "100"],
    "bitplanes": ["--jpeg2000", "--eks", "5", "--dks", "9", "--precision", "6", "-qm", "Purpose==['add','remove']"],
    "partitions-and-opt-out": ["-qp", "Purpose==['add','clone']", "--optOut", "--nspx", "0", "--mediscore-compat"],
}


@pytest.mark.parametrize("variant", sorted(MASK_VARIANTS))
def test_mask_reports_are_identical(variant, mask_data, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    a, b = tmp_path / "embedded", tmp_path / "cluster"
    runs = run_both(capsys, cluster_file, "mask", mask_data + MASK_VARIANTS[variant], "-oR",
                    str(a / "x"), str(b / "x"))
    compat = "--mediscore-compat" in MASK_VARIANTS[variant]  # MaskScorer's rule: two unusable masks exit 1
    files = assert_same_outputs(a, b, *runs, status=1 if compat else 0)
    assert any(name.endswith("_mask_scores_perimage.csv") for name in files)
    stderr = runs[1][2]
    assert "is unreadable" in stderr and f"file {mask_data[1]}/system/mask/" in stderr  # the local path, not the key


def test_bad_input_fails_the_same_way_before_anything_is_uploaded(detection_data, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    bad = tmp_path / "bad.csv"
    bad.write_text("ProbeFileID|ConfidenceScore\nabc|not-a-number\n")
    arguments = detection_data[:-2] + ["--sysDir", str(tmp_path), "-s", "bad.csv", "-o", str(tmp_path / "out" / "x")]
    assert main(["detection", *arguments]) == 1
    embedded = capsys.readouterr().err
    assert main(["submit", "--cluster", str(cluster_file), "detection", *arguments]) == 1
    assert capsys.readouterr().err == embedded
    assert not (tmp_path / "out").exists()


def test_a_submission_the_validator_rejects_is_not_scored(mask_data, local_cluster, tmp_path, capsys):
    """The cluster validates first (docs/architecture.md "The distributed flow", step 2): a system row for a probe
    missing from the index is an error for the validator, though the embedded scorer would ignore the row."""
    cluster_file, _ = local_cluster
    lines = open(mask_data[1] + "/" + mask_data[-1]).read().splitlines()
    (tmp_path / "sys.csv").write_text("\n".join(lines + ["ffffffff|0.5|mask/ffffffff.png|Processed|"]) + "\n")
    shutil.copytree(f"{mask_data[1]}/system/mask", tmp_path / "mask")
    arguments = mask_data[:-4] + ["--sysDir", str(tmp_path), "-s", "sys.csv"]
    assert main(["mask", *arguments, "-oR", str(tmp_path / "embedded" / "x")]) == 0
    capsys.readouterr()
    assert main(["submit", "--cluster", str(cluster_file), "mask", *arguments, "-oR", str(tmp_path / "out" / "x")]) == 1
    err = capsys.readouterr().err
    assert "rejected" in err and "ffffffff" in err and "ERROR:" in err
    assert not (tmp_path / "out").exists()
    assert main(["submit", "--cluster", str(cluster_file), "--skip-validation", "mask", *arguments,
                 "-oR", str(tmp_path / "out" / "x")]) == 0
    assert tree(tmp_path / "out") == tree(tmp_path / "embedded")
