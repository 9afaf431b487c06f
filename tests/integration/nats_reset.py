"""Deleting streams and a bucket between tests, patiently.

A delete on a loaded machine can outlast the client's request timeout (seen once in CI, on the 3-node cluster);
the delete is asked again until NATS says the stream is gone. Production code never deletes streams.
"""

from __future__ import annotations

import asyncio
import time

import nats.errors
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

PATIENCE_SECONDS = 60.0


async def _until_gone(delete, what: str, deadline: float) -> None:
    while True:
        try:
            await delete()
            return
        except NotFoundError:  # a bucket's too (BucketNotFoundError is one)
            return
        except nats.errors.TimeoutError:
            assert time.monotonic() < deadline, f"NATS did not delete {what} within {PATIENCE_SECONDS:g} s"
            await asyncio.sleep(0.2)


async def delete_streams(js: JetStreamContext, streams, bucket: str | None = None) -> None:
    """Delete ``streams`` and the key-value ``bucket`` if they exist, asking again after a timeout."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    for stream in streams:
        await _until_gone(lambda: js.delete_stream(stream), f"the stream {stream}", deadline)
    if bucket is not None:
        await _until_gone(lambda: js.delete_key_value(bucket), f"the bucket {bucket}", deadline)
