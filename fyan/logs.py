"""Structured logs (structlog, JSON lines) in ``.fyan/logs/fyan.jsonl`` of each project.

Logs are for diagnosis (tracebacks, timings); the state of record is the store and its event
log. API keys never reach a log: providers never log request headers.
"""

from __future__ import annotations

import logging
from pathlib import Path

import structlog


def configure(log_dir: Path) -> structlog.stdlib.BoundLogger:
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_dir / "fyan.jsonl", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("fyan")
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    structlog.configure(
        processors=[
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.add_log_level,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    return structlog.get_logger("fyan")


def get() -> structlog.stdlib.BoundLogger:
    return structlog.get_logger("fyan")
