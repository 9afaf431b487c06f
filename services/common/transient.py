"""Which failures waiting fixes: NATS out of reach or its JetStream not ready, S3 still failing after the object
store's own attempts, the validator unavailable. How they are waited out is services/common/retry.py's.

Apart from retry.py because the object store retries with retry.py's schedule, and ``ObjectStoreUnavailable`` is
the object store's.
"""

from __future__ import annotations

import grpc
import nats.errors
from nats.js.errors import NoStreamResponseError, ServiceUnavailableError

from mfscore.services.common.object_store import ObjectStoreUnavailable

NATS_UNAVAILABLE = (
    TimeoutError, nats.errors.NoRespondersError, nats.errors.ConnectionReconnectingError,
    nats.errors.OutboundBufferLimitError, nats.errors.StaleConnectionError, NoStreamResponseError,
    ServiceUnavailableError,
)
# A job's failures that say nothing about the job: the infrastructure's, retried for a time budget.
INFRASTRUCTURE_ERRORS = (
    ObjectStoreUnavailable, ConnectionError, nats.errors.ConnectionClosedError, *NATS_UNAVAILABLE,
)


def nats_unavailable(error: BaseException) -> bool:
    """Whether a NATS call failed because the server is out of reach or its JetStream not ready: waiting fixes it."""
    return isinstance(error, NATS_UNAVAILABLE)


def s3_or_validator_unavailable(error: BaseException) -> bool:
    """Whether S3 stayed unavailable through the object store's own retries, or the validator answered UNAVAILABLE."""
    return isinstance(error, ObjectStoreUnavailable) or (
        isinstance(error, grpc.aio.AioRpcError) and error.code() == grpc.StatusCode.UNAVAILABLE)
