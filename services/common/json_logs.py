"""One JSON object a line for ``MFSCORE_LOG_FORMAT=json``: what a log collector indexes without a parser.

Each line has ``time`` (UTC, ISO 8601), ``level``, ``logger`` and ``message``, then the fields ``FIELDS`` when the
call passed them (``log.info(..., extra={"run_id": ...})``), and ``exception`` with the traceback of
``log.exception``.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone

FIELDS = ("run_id", "job_key")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
                "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        line.update({name: getattr(record, name) for name in FIELDS if hasattr(record, name)})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(log_format: str, level: int) -> None:
    """Log to stderr at ``level``, as text (``text``) or one JSON object a line (``json``)."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
