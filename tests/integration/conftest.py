"""A real nats-server (JetStream) and a real S3 server (SeaweedFS) on loopback, shared by the session."""

from __future__ import annotations

import contextlib
import secrets
import time
import uuid

import pytest

from integration.clusters import cluster_up
from integration.nats_reset import delete_streams
from mfscore.services.common.nats_auth import ROLES
from mfscore.services.common.nats_connection import connect
from mfscore.services.common.settings import Settings
from mfscore.services.common.streams import ensure_streams
from mfscore.services.common.subjects import DEAD_STREAM, JOBS_STREAM, RESULTS_STREAM
from mfscore.services.local.servers import start_nats_server, start_s3_server


@pytest.fixture(scope="session")
def nats_users() -> dict[str, str]:
    """A password per NATS role (services/common/nats_auth.py); ``admin`` for fixtures that reset the streams."""
    return {role: secrets.token_urlsafe(24) for role in ROLES}


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory, nats_users):
    server = start_nats_server(tmp_path_factory.mktemp("nats"), users=nats_users)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """SeaweedFS refusing unsigned and made-up requests; its one key, ``service``, covers the ``test-*`` buckets."""
    server = start_s3_server(bucket="test-*", data_dir=tmp_path_factory.mktemp("s3"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def cluster_settings(nats_server, nats_users, s3_server, tmp_path) -> Settings:
    """Settings for the loopback servers, with a bucket of its own; NATS as ``admin`` (the tests play every role)."""
    return Settings(
        nats_url=nats_server.url,
        nats_user="admin",
        nats_password=nats_users["admin"],
        s3_endpoint=s3_server.url,
        s3_access_key=s3_server.service.access_key,
        s3_secret_key=s3_server.service.secret_key,
        bucket=f"test-{uuid.uuid4().hex[:16]}",
        work_dir=str(tmp_path / "work"),
    )


@pytest.fixture
def jetstream(cluster_settings):
    """``async with jetstream() as (nc, js)``: a connection to freshly recreated mfscore streams."""

    @contextlib.asynccontextmanager
    async def session():
        nc, js = await connect(cluster_settings, name="mfscore-tests")
        try:
            await delete_streams(js, (JOBS_STREAM, RESULTS_STREAM, DEAD_STREAM))
            await ensure_streams(js, cluster_settings)
            yield nc, js
        finally:
            await nc.close()

    return session


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory):
    """``mfscore local-cluster up``'s cluster (every service a process), shared by the session; always stopped."""
    # ListRuns' paging test makes 106 runs in a few seconds; the quotas are tested on clusters of their own
    with cluster_up(tmp_path_factory.mktemp("cluster"), mask_scorers=1, environment={
            "MFSCORE_QUOTA_CREATED_RUNS": "1000", "MFSCORE_QUOTA_CREATE_RUN_PER_MINUTE": "1000"}) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def tls_cluster(tmp_path_factory):
    """``mfscore local-cluster up --tls``'s cluster (every server speaks TLS with a certificate of the cluster's own
    CA), shared by the session's TLS tests: ``(path, config)``; always stopped."""
    with cluster_up(tmp_path_factory.mktemp("tls-cluster"), tls=True) as cluster:
        yield cluster


@pytest.fixture
def cluster(tmp_path):
    """A local cluster of a test's own (for tests that kill and restart its processes); always stopped."""
    with cluster_up(tmp_path / "cluster") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def teams(tmp_path_factory):
    """A local cluster of the module's own, its file, and the cluster files of its operator and of two clients,
    alice and bob: ``(path, config, files)``; always stopped."""
    from mfscore.services.commands import local_cluster as commands

    path = tmp_path_factory.mktemp("teams-cluster") / "cluster.json"
    config = commands.up(path)
    try:
        files = {"operator": path}
        for name in ("alice", "bob"):
            files[name] = tmp_path_factory.mktemp(name) / "cluster.json"
            commands.add_caller(config, name, "client", out=files[name])
        time.sleep(1.5)  # the services read the tokens file again within a second
        yield path, config, files
    finally:
        commands.down(path)
