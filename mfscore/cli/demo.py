"""``make demo``: generate an MFC-style dataset and score it the way an evaluation would.

Runs embedded (no servers): the same ``mfscore`` commands a user types, printed before they run,
then the report tables and where the plots are; then one mask run again on a local cluster, whose
files must be byte-identical to the embedded run's, and what another caller of that cluster sees. The
cluster is taken down before the last lines, which say where the reports are.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import shutil
import sys
import time
from pathlib import Path

import cv2
import numpy as np

from mfscore.cli.main import main as mfscore_main
from mfscore.documentation import doc_path
from mfscore.run.local import is_provenance
from mfscore.run.staged_outputs import files_under
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.sample_data.provenance import generate_provenance_dataset
from mfscore.sample_data.video import sample_temporal_dataset, sample_video_dataset


def _run(argv: list[str], *, expect: int = 0) -> None:
    print(f"\n$ mfscore {shlex.join(argv)}", flush=True)
    status = mfscore_main(argv)
    if status != expect:
        sys.exit(status or 1)


def _broken_copy(system: Path) -> Path:
    """The generated submission with a wrong-size mask, a bad status and an escaping path, to show the validator."""
    broken = system.with_name("broken-system.csv")
    lines = system.read_text().splitlines()
    lines[1] = lines[1].replace("Processed", "Procesed")
    lines[2] = lines[2].replace("mask/", "../../")
    lines[3] = lines[3].split("|")[0] + "|0.5|mask/small.png|Processed|"
    broken.write_text("\n".join(lines) + "\n")
    cv2.imwrite(str(system.parent / "mask" / "small.png"), np.zeros((10, 10), np.uint8))
    return broken


def _show(paths: list[Path]) -> None:
    for path in paths:
        print(f"\n--- {path}")
        print(path.read_text().rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate sample data and score it with mfscore.")
    parser.add_argument("--out", default="demo-output", help="directory for the data and the reports")
    parser.add_argument("--trials", type=int, default=4000, help="number of probes to generate")
    parser.add_argument("--masks", type=int, default=60, help="number of probes with masks to generate")
    parser.add_argument("--provenance", type=int, default=200, help="number of provenance probes (a multiple of 4)")
    parser.add_argument("--no-cluster", action="store_true", help="skip the local-cluster part (embedded mode only)")
    args = parser.parse_args(argv)

    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    data = generate_detection_dataset(out / "data", args.trials)
    print(f"Generated an MFC-style manipulation dataset of {args.trials} probes in {data.directory}/")
    io = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
          "--sysDir", str(data.directory), "-s", data.system]

    reports = out / "reports"
    _run(["detection", *io, "-o", str(reports / "all" / "demo"), "--ci", "--semafor", "--optOut", "--html"])
    _run(["detection", *io, "-o", str(reports / "by_purpose" / "demo"), "--ci",
          "-qm", "Purpose==['add']", "Purpose==['remove']", "Purpose==['clone']", "Purpose==['heal']"])
    _run(["detection", *io, "-o", str(reports / "partitions" / "demo"), "--plotType", "det",
          "-qp", "Collection==['Nimble-SCI','Nimble-WEB','MFC-Eval'] & 1000 <= ProbeWidth"])

    masks = generate_mask_dataset(out / "mask-data", args.masks, bitplanes=True, jpeg2000=True)
    print(f"\nGenerated {args.masks} probes with colour and JPEG 2000 bit-plane reference masks and grey "
          f"system masks in {masks.directory}/")
    index, system = str(masks.directory / masks.index), masks.directory / masks.system
    _run(["validate", "-vt", "SSD", "--plan", "mfc2019", "-s", str(system), "-x", index])
    _run(["validate", "-vt", "SSD", "-s", str(_broken_copy(system)), "-x", index,
          "--output_revised_system", "revised-system.csv"], expect=1)
    mask_io = ["--refDir", str(masks.directory), "-r", masks.reference, "-x", masks.index,
               "-s", str(masks.directory / masks.system)]
    _run(["mask", *mask_io, "-oR", str(reports / "masks" / "demo"), "--sbin", "128", "--precision", "6", "--html"])
    _run(["mask", *mask_io, "-oR", str(reports / "masks_by_purpose" / "demo"), "--jpeg2000", "--precision", "6",
          "-qm", "Purpose==['add']", "Purpose==['remove']", "Purpose==['clone','heal']"])

    provenance = generate_provenance_dataset(out / "provenance-data", args.provenance)
    print(f"\nGenerated {args.provenance} provenance probes (journals, world index, system JSON graphs of 300 nodes) "
          f"in {provenance.root}/")
    _run(["validate-provenance", "-t", "provenancefiltering", "-x", str(provenance.root / "index.csv"),
          "-s", str(provenance.root / "system" / "system.csv")])
    _run(["provenance-filtering", *provenance.options("system.csv"), "--nodetype", "all",
          "-o", str(reports / "provenance_filtering"), "--html"])
    _run(["provenance-graph", *provenance.options("system.csv"), "-o", str(reports / "provenance_graph")])

    temporal = sample_temporal_dataset(out / "video-temporal-data")
    print(f"\nGenerated frame-interval (temporal) system output for a few videos in {out / 'video-temporal-data'}/")
    temporal_io = [*temporal.cli_args(), "-c", "5", "-T"]
    _run(["video-temporal", *temporal_io, "-o", str(reports / "video_temporal"),
          "--query", "*", "Operation == 'PasteSampled'"])
    video = sample_video_dataset(out / "video-data", compression="gzip")
    print(f"\nGenerated HDF5 reference and system video masks in {video.root}/; probe vid0003nomask has no "
          f"system mask and is scored as an empty one")
    _run(["video-spatial", *video.cli_args(), "-oR", str(reports / "video_spatial" / "demo"), "--eks", "3",
          "--dks", "3", "-c", "2", "--video_opt_out", "--optOut", "--sbin", "128", "--precision", "6", "--html"])

    shown = sorted(p for p in reports.rglob("*.csv") if "perimage" not in p.name and "journal" not in p.name
                   and "mcc_by_size" not in p.name and "mapping" not in p.name and p.name != "trial_scores.csv"
                   and not p.name.endswith("_mask_extra.csv") and not p.parent.name.endswith("_thresholds"))
    _show(shown)
    print("\nPlots:")
    for plot in sorted(reports.rglob("*.png")):
        pdf = plot.with_suffix(".pdf")
        print(f"  {plot}" + (f"  (and {pdf.name})" if pdf.exists() else ""))
    cluster_reports, board = (None, None) if args.no_cluster else _cluster_demo(out, mask_io, temporal_io, reports,
                                                                                 masks)
    if cluster_reports is not None:
        print(f"\nThe cluster's reports are under {cluster_reports}/")
    _headlines(reports)
    print(f"\nAll reports are under {reports}/; each run's results are in its *results.json, its provenance in "
          "its *run.json")
    if board is not None:
        print(f"\nAnd the campaign's public board ({board.with_suffix('.html')}):\n{board.read_text()}", end="")
    return 0


def _headlines(reports: Path) -> None:
    """Every run's summary table again, read from its results file, and its HTML page where it has one
    (docs/results.md)."""
    from mfscore.reports.html_report import report_path
    from mfscore.reports.summary_table import summary_lines
    from mfscore.results import Results

    print("\nHeadline results of the embedded runs:")
    for path in sorted(reports.rglob("*results.json")):
        print(f"\n{path}")
        print("\n".join(summary_lines(Results.from_json(path.read_bytes()))))
        if report_path(path).is_file():
            print(f"  HTML report: {report_path(path)}")


def _cluster_demo(out: Path, mask_io: list[str], temporal_io: list[str], reports: Path, masks) -> tuple[Path, Path]:
    """The selective mask run and the video temporal run again, through a local cluster: every service a
    process, the same files; an evaluation and a campaign; the cluster is down when it returns where the reports
    are and the campaign's board, as text."""
    cluster = out / "cluster" / "cluster.json"
    print("\nThe distributed mode: the same runs on a local cluster (NATS JetStream, an S3 server, every service "
          "a process)")
    _run(["local-cluster", "up", "--mask-scorers", "2", "--cluster", str(cluster)])
    try:
        _run(["local-cluster", "status", "--cluster", str(cluster)])
        distributed = out / "cluster-reports"
        submit = ["submit", "--cluster", str(cluster)]
        _run([*submit, "mask", *mask_io, "-oR", str(distributed / "masks_by_purpose" / "demo"), "--jpeg2000",
              "--precision", "6", "-qm", "Purpose==['add']", "Purpose==['remove']", "Purpose==['clone','heal']"])
        _run([*submit, "video-temporal", *temporal_io, "-o", str(distributed / "video_temporal"),
              "--query", "*", "Operation == 'PasteSampled'"])
        for name in ("masks_by_purpose", "video_temporal"):  # the provenance (its times differ) left out
            files = {path: data for path, data in files_under(distributed / name).items() if not is_provenance(path)}
            same = files == {path: data for path, data in files_under(reports / name).items() if not is_provenance(path)}
            print(f"\n{len(files)} report files from the cluster in {distributed / name}/: "
                  + ("byte-identical to the embedded run's" if same else "DIFFERENT from the embedded run's"))
            if not same:
                sys.exit(1)
        _another_caller(cluster)
        _sealed_package(cluster, masks)
        board = _campaign(cluster, masks)
    finally:
        _run(["local-cluster", "down", "--cluster", str(cluster)])
    return distributed, board


def _another_caller(cluster: Path) -> None:
    """Every call to a cluster carries a token; a caller sees and fetches its own runs only (the one who started the
    cluster, an operator, sees every run), and no caller holds an object-store key."""
    print(f"\nEvery call carries a bearer token ({doc_path('distributed.md')}, 'Credentials'). The cluster file's "
          "is its operator's, who sees every run; a new caller, alice, gets a cluster file of her own (her token, no "
          "S3 key: files go through the aggregator) and sees only her runs:")
    _run(["report", "--list", "--cluster", str(cluster)])
    alice = cluster.with_name("alice.json")
    _run(["local-cluster", "token", "--name", "alice", "--out", str(alice), "--cluster", str(cluster)])
    time.sleep(1.2)  # the services read the tokens file again within a second
    _run(["report", "--list", "--cluster", str(alice)])
    with contextlib.redirect_stdout(io.StringIO()) as listed:
        mfscore_main(["report", "--list", "--cluster", str(cluster)])
    operators = listed.getvalue().splitlines()[1].split()[0]
    print("\nThe operator's run is unknown to alice, and nothing is written:", end="")
    _run(["report", operators, "--cluster", str(alice), "-o", str(cluster.parent / "alice-reports")], expect=1)
    files = cluster.parent / "alice-dataset"
    files.mkdir(exist_ok=True)
    (files / "README.txt").write_text("a dataset of one file\n")
    print(f"\nA client names its datasets after itself ({doc_path('datasets.md')}, 'Names'): alice/... is hers, a "
          "name without an owner part is the operator's, refused before anything is uploaded:", end="")
    _run(["dataset", "register", "eval@1", str(files), "--cluster", str(alice)], expect=1)


DESCRIPTION = """1. Submission Identifier(s)
p-alice_1

2. System Description
A demo system: the generated grey masks.

3. OptOut Criteria
None.

4. System Hardware Description and Runtime Computation
A laptop, a second.

5. Training Data and Knowledge Sources
None.

6. References
None.
"""


def _sealed_package(cluster: Path, masks) -> None:
    """An evaluation's way (docs/release.md): the operator registers the reference, sealed; alice holds only the
    index and her package, submits it, and receives the aggregates; once the operator releases the dataset, her whole
    report."""
    alice, root = cluster.with_name("alice.json"), cluster.parent / "evaluation"
    reference, package = root / "reference-set", root / "alice" / "p-alice_1"
    for part in ("reference", "indexes"):
        shutil.copytree(masks.directory / part, reference / part)
    shutil.copytree((masks.directory / masks.system).parent / "mask", package / "mask")
    shutil.copy(masks.directory / masks.system, package / "p-alice_1.csv")
    (package / "p-alice_1.txt").write_text(DESCRIPTION)
    print(f"\nAn evaluation ({doc_path('release.md')}): the operator registers the reference once, shared and sealed "
          "(release 'aggregate', the default):", end="")
    _run(["dataset", "register", "eval-masks@1", str(reference), "--shared", "--cluster", str(cluster)])
    print(f"\nAlice holds her package {package}/ ({', '.join(sorted(p.name for p in package.iterdir()))}) and no "
          "reference; she checks it and submits it, naming the reference's tables by their names in the dataset:",
          end="")
    _run(["validate", "-vt", "SSD", "--package", str(package), "-x", str(masks.directory / masks.index),
          "--plan", "mfc2019"])
    sealed = root / "alice-reports" / "sealed"
    _run(["submit", "--cluster", str(alice), "--dataset", "eval-masks@1", "--package", str(package), "mask",
          "--refDir", ".", "-r", masks.reference, "-x", masks.index, "-oR", str(sealed / "p-alice_1")])
    print(f"\nWhat alice received in {sealed}/: "
          + ", ".join(sorted(p.name for p in sealed.iterdir())) + " (aggregates; the per-probe rows stay sealed)")
    with contextlib.redirect_stdout(io.StringIO()) as listed:
        mfscore_main(["report", "--list", "--cluster", str(alice)])
    run_id = listed.getvalue().splitlines()[-2].split()[0]
    print("\nThe evaluation ends: the operator releases the dataset, and alice fetches her whole report with its "
          "system description:", end="")
    _run(["dataset", "release", "eval-masks@1", "--cluster", str(cluster)])
    released = root / "alice-reports" / "released"
    _run(["report", run_id, "-o", str(released), "--cluster", str(alice)])
    print(f"\n{len(list(released.iterdir()))} files in {released}/, the per-image table among them")


def _campaign(cluster: Path, masks) -> Path:
    """A two-team campaign (docs/campaigns.md): a phase open now, its probes split into public and private; alice
    (team red) and bob (team blue) submit packages; the public board (where its text is written)."""
    import datetime
    import json

    root = cluster.parent / "evaluation"
    bob = cluster.with_name("bob.json")
    _run(["local-cluster", "token", "--name", "bob", "--out", str(bob), "--cluster", str(cluster)])
    time.sleep(1.2)  # the services read the tokens file again within a second
    package = root / "bob" / "p-bob_1"
    shutil.copytree(root / "alice" / "p-alice_1", package)
    (package / "p-alice_1.csv").unlink()
    (package / "p-alice_1.txt").rename(package / "p-bob_1.txt")
    lines = (masks.directory / masks.system).read_text().splitlines()
    score = lines[0].split("|").index("ConfidenceScore")
    rows = [line.split("|") for line in lines[1:]]
    for row in rows:  # bob's system is sure where alice's hesitates
        row[score] = f"{round(float(row[score])) * 0.9 + 0.05:.4f}"
    (package / "p-bob_1.csv").write_text("\n".join([lines[0], *("|".join(row) for row in rows)]) + "\n")
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    when = lambda hours: (now + datetime.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    file = root / "campaign.json"
    file.write_text(json.dumps({
        "name": "demo", "teams": [{"name": "red", "members": ["alice"]}, {"name": "blue", "members": ["bob"]}],
        "competitions": [{"name": "det", "task": "detection", "dataset": "eval-campaign@1",
                          "options": {"ref_dir": ".", "reference": masks.reference, "index": masks.index,
                                      "kind": "manipulation", "scoring": {"ci": True}},
                          "goal": {"metric": "AUC", "threshold": 0.8, "better": "higher"}}],
        "phases": [{"name": "dev", "start": when(-1), "end": when(1), "quota_per_day": 3, "late": "mark",
                    "board": "public", "split": {"by": "hash", "fraction": 0.5, "salt": "demo"},
                    "release": "aggregate"}]}, indent=1))
    print(f"\nA campaign ({doc_path('campaigns.md')}): the operator registers the reference once more, sealed, and "
          f"creates a two-team campaign from {file}; its probes are split, public and private:", end="")
    _run(["dataset", "register", "eval-campaign@1", str(root / "reference-set"), "--shared", "--cluster",
          str(cluster)])
    _run(["campaign", "create", str(file), "--cluster", str(cluster)])
    for who, name in (("alice", "p-alice_1"), ("bob", "p-bob_1")):
        _run(["submit", "--cluster", str(cluster.with_name(f"{who}.json")), "--campaign", "demo", "--competition",
              "det", "--package", str(root / who / name), "--out", str(root / "campaign" / who / name)])
    board = root / "campaign" / "board.txt"
    print("\nThe phase's public board, as bob sees it (the private split's stays sealed until the phase ends):",
          end="")
    with contextlib.redirect_stdout(io.StringIO()) as shown:
        _run(["leaderboard", "--campaign", "demo", "--competition", "det", "--html", str(board.with_suffix(".html")),
              "--cluster", str(bob)])
    board.write_text(shown.getvalue())
    print(shown.getvalue(), end="")
    return board


if __name__ == "__main__":
    sys.exit(main())
