"""What every command returns, below the command line (every command returns a
result object): an exit code, a JSON payload and the human text.

``fyan.cli`` prints the payload (``--json``) or the text and exits with the code; command
modules elsewhere (``fyan.commands._shadow``) return the same object without importing the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from fyan.errors import ExitCode


@dataclass
class CommandResult:
    """One command's outcome: ``code`` (the process exit code, ``ExitCode``), ``payload`` (what
    ``--json`` prints; JSON-serialisable) and ``text`` (what a person reads)."""

    code: int = ExitCode.OK  # an ``ExitCode``, or 128 + the signal number after an interrupt
    payload: dict[str, Any] = field(default_factory=dict)
    text: str = ""


class ErrorPayload(BaseModel):
    """What ``--json`` prints when a command fails (``fyan.cli``): the message, the hint, the exit
    code; ``log`` is the crash report of an internal error, ``signal`` the signal that stopped it."""

    model_config = ConfigDict(extra="allow")
    error: str
    hint: str | None
    exit_code: int
    log: str | None = None
    signal: str | None = None
