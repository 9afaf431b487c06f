"""Where a cluster is: the JSON file ``mfscore local-cluster up`` writes, or the environment.

Resolution order: ``--cluster FILE``, then ``$MFSCORE_CLUSTER``, then the environment's
``MFSCORE_AGGREGATOR_ADDRESS`` (with the other MFSCORE_* variables), then the local cluster's
default file.

``MFSCORE_AGGREGATOR_ADDRESS`` (and a cluster file's ``aggregator_address``) may list several addresses separated
by commas, two aggregators say: the client's channel goes to the one whose health is SERVING, the leader, and tries a
call answered UNAVAILABLE again on another (``services/common/auth.py``, ``target``).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mfscore.errors import OptionError
from mfscore.services.common.settings import Settings


def default_cluster_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "mfscore" / "local-cluster.json"


@dataclass
class ClusterConfig:
    aggregator_address: str
    validator_address: str
    nats_url: str
    s3_endpoint: str       # where the services' object store is (a client needs no key: it uploads through the
    bucket: str            # aggregator); tests and benchmarks add the services' key to settings() themselves
    token: str = ""        # the bearer token sent to the aggregator (a local cluster's: its operator's)
    tls_ca: str = ""       # the CA the services' certificates are checked against, when they use TLS
    state_dir: str = ""
    processes: list[dict] = field(default_factory=list)  # name, pid, grpc_port, metrics_port, log

    def settings(self, **overrides) -> Settings:
        values = dict(nats_url=self.nats_url, s3_endpoint=self.s3_endpoint, bucket=self.bucket,
                      aggregator_address=self.aggregator_address, validator_address=self.validator_address,
                      token=self.token, tls_ca=self.tls_ca)
        return Settings.from_env({}, **{**values, **overrides})

    def channel(self, address: str | None = None):
        """A gRPC channel to ``address`` (default the aggregator) carrying this cluster's token."""
        from mfscore.services.common.auth import client_channel
        from mfscore.services.common.grpc_server import MESSAGE_OPTIONS

        return client_channel(address or self.aggregator_address, token=self.token, tls_ca=self.tls_ca,
                              options=MESSAGE_OPTIONS)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds credentials
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(self), f, indent=2)
        os.replace(temporary, path)

    @classmethod
    def read(cls, path: Path) -> ClusterConfig:
        try:
            return cls(**json.loads(Path(path).read_text()))
        except FileNotFoundError:
            raise OptionError(f"no cluster is described at {path}; start one with 'mfscore local-cluster up' "
                              "or name one with --cluster") from None
        except (ValueError, TypeError) as exc:
            raise OptionError(f"the cluster file {path} is not one 'mfscore local-cluster up' wrote ({exc})") from None


def resolve(cluster: str | None) -> ClusterConfig:
    """The cluster to talk to; ``$MFSCORE_TOKEN`` overrides a cluster file's token (another caller's)."""
    if cluster:
        config = ClusterConfig.read(Path(cluster))
    elif os.environ.get("MFSCORE_CLUSTER"):
        config = ClusterConfig.read(Path(os.environ["MFSCORE_CLUSTER"]))
    elif os.environ.get("MFSCORE_AGGREGATOR_ADDRESS"):
        s = Settings.from_env()
        return ClusterConfig(s.aggregator_address, s.validator_address, s.nats_url, s.s3_endpoint,
                             s.bucket, token=s.token, tls_ca=s.tls_ca)
    else:
        config = ClusterConfig.read(default_cluster_file())
    if os.environ.get("MFSCORE_TOKEN"):
        config.token = os.environ["MFSCORE_TOKEN"]
    return config
