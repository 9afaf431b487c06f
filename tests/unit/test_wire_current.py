"""The committed wire code (services/wire, installed as mfscore.services.wire) is what the protos generate."""

from __future__ import annotations

from mfscore.services import generate_wire


def test_committed_wire_code_matches_the_protos(tmp_path):
    fresh = {p.name: p.read_bytes() for p in generate_wire.generate(tmp_path / "wire")}
    committed = {p.name: p.read_bytes() for p in generate_wire.WIRE.iterdir() if p.is_file() and p.name in fresh}
    assert sorted(committed) == sorted(fresh)
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"regenerate with 'python -m mfscore.services.generate_wire': {stale} differ from the protos"
