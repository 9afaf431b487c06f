"""The distributed mode: gRPC services and NATS JetStream workers around the scoring core (DESIGN.md).

Each service is a thin adapter: decode a job, call ``mfscore``, encode the record. The wire
contract is ``proto/mfscore/v1``; its Python code is generated into ``services/wire`` by
``python -m services.generate_wire`` (``make setup`` runs it) and never edited.
"""
