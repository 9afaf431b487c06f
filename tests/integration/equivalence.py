"""Run one command embedded and through ``mfscore submit`` on a cluster, and compare what each left behind."""

from __future__ import annotations

import re
from pathlib import Path

from mfscore.cli.main import main
from output_files import tree


CREATED = re.compile(r"mfscore: run [0-9a-f]{32} created\n")


def without_created(err: str) -> str:
    """``mfscore submit``'s stderr without its first line, which names the run it created in full."""
    found = CREATED.match(err)
    assert found, f"submit did not start by naming the run: {err[:300]!r}"
    return err[found.end():]


def run_both(capsys, cluster_file: Path, task: str, arguments: list[str], out_option: str, embedded_out: str,
             cluster_out: str) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(status, stdout, stderr) of ``mfscore <task> ARGS OUT`` and of ``mfscore submit <task> ARGS OUT``, the
    latter's stderr without the line first naming the run it created (when it created one: bad input fails before)."""
    capsys.readouterr()
    embedded = main([task, *arguments, out_option, embedded_out])
    first = capsys.readouterr()
    cluster = main(["submit", "--cluster", str(cluster_file), task, *arguments, out_option, cluster_out])
    second = capsys.readouterr()
    err = without_created(second.err) if CREATED.match(second.err) else second.err
    return (embedded, first.out, first.err), (cluster, second.out, err)


def assert_same_outputs(embedded_dir: Path, cluster_dir: Path, embedded_run, cluster_run, *,
                        status: int = 0) -> dict[str, bytes]:
    """Exit ``status`` both, same files byte for byte, same stdout but for the directory name, same stderr."""
    (status_a, out_a, err_a), (status_b, out_b, err_b) = embedded_run, cluster_run
    assert status_b == status_a == status, err_b
    a, b = tree(embedded_dir), tree(cluster_dir)
    assert sorted(a) == sorted(b)
    different = [name for name in a if a[name] != b[name]]
    assert not different, f"files differ: {different}"
    assert out_b.replace(str(cluster_dir), str(embedded_dir)) == out_a
    assert err_b == err_a
    return a
