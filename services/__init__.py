"""The distributed mode: gRPC services and NATS JetStream workers around the scoring core (docs/architecture.md).

Each service is a thin adapter: decode a job, call ``mfscore``, encode the record. The wire
contract is ``proto/mfscore/v1``; its Python code is generated into ``services/wire`` (``mfscore.services.wire``) by
``python -m mfscore.services.generate_wire`` and committed, never edited by hand.
"""
