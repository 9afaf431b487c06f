"""A PUT of an object key exactly as written, signed (SigV4) with a key of the store, for keys the SDK refuses to
send ('..' parts): what another S3 client could try."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from urllib.parse import quote, urlsplit

from minio import time as minio_time
from minio.credentials import Credentials
from minio.signer import sign_v4_s3

DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def signed(endpoint: str, access_key: str, secret_key: str, method: str, url: str, body: bytes = b"") -> dict[str, str]:
    """The headers of ``method url`` signed as the ObjectStore's SDK signs its requests."""
    date = minio_time.utcnow()
    digest = hashlib.sha256(body).hexdigest()
    headers = {"Host": urlsplit(endpoint).netloc, "x-amz-content-sha256": digest,
               "x-amz-date": minio_time.to_amz_date(date), "Content-Length": str(len(body))}
    return sign_v4_s3(method=method, url=urlsplit(url), region="us-east-1", headers=headers,
                      credentials=Credentials(access_key, secret_key), content_sha256=digest, date=date)


def put_raw(settings, key: str, content: bytes) -> tuple[int, bytes]:
    """PUT ``key`` (its '/' kept, everything else percent-encoded, so '..' parts reach the server as they are) into
    ``settings``' bucket: the status and body of the answer."""
    url = f"{settings.s3_endpoint}/{settings.bucket}/{quote(key, safe='/')}"
    headers = signed(settings.s3_endpoint, settings.s3_access_key, settings.s3_secret_key, "PUT", url, content)
    request = urllib.request.Request(url, data=content, method="PUT", headers=headers)
    try:
        with DIRECT.open(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
