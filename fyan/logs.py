"""Structured logs (structlog, JSON lines) in ``.fyan/logs/fyan.jsonl`` of each project.

Logs are for diagnosis (tracebacks, timings); the state of record is the store and its event
log. API keys never reach a log: providers never log request headers.

Nothing is ever logged to the terminal: until ``configure`` names a project's log folder,
records go to a handler that drops them (structlog's own default would print them, with
rich tracebacks that show local variables — document text included — on stdout).

``crash_report`` writes the details of an unexpected error (the traceback, without local
variables) to a file and returns its path: the CLI prints one line and that path, never the
traceback itself.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
import traceback
from pathlib import Path

import structlog

_PROCESSORS = [
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.add_log_level,
    structlog.processors.format_exc_info,
    structlog.processors.JSONRenderer(),
]


def _structlog(processors: list) -> None:
    structlog.configure(
        processors=processors,
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


def _silent() -> None:
    logger = logging.getLogger("fyan")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    _structlog(_PROCESSORS)


_silent()


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
    _structlog(_PROCESSORS)
    return structlog.get_logger("fyan")


def get() -> structlog.stdlib.BoundLogger:
    return structlog.get_logger("fyan")


def crash_folder(project_dir: Path | None) -> Path:
    """Where crash reports go: the project's ``.fyan/logs/`` when ``project_dir`` is a Fyan
    project, else ``$XDG_STATE_HOME/fyan`` (default ``~/.local/state/fyan``), else the
    system's temporary folder."""
    if project_dir is not None and (project_dir / "fyan.toml").is_file():
        return project_dir / ".fyan" / "logs"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fyan"


def crash_report(error: BaseException, command: str, project_dir: Path | None = None) -> Path:
    """Write ``error``'s traceback (no local variables) with the command that raised it to a
    new file ``crash-<time>-<pid>.log``; returns its path. Never raises: when no folder is
    writable the report goes to the system's temporary folder."""
    text = (f"fyan {command}: internal error at {time.strftime('%Y-%m-%d %H:%M:%S')}\n\n"
            + "".join(traceback.format_exception(type(error), error, error.__traceback__)))
    name = f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    for folder in (crash_folder(project_dir), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            get().error("internal_error", command=command, error_type=type(error).__name__, report=str(path))
            return path
        except OSError:
            continue
    return Path(os.devnull)
