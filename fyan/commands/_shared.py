"""What several commands share: the words for a command stopped by a signal, and the refusal
of unknown unit ids (exit 2, before anything else runs)."""

from __future__ import annotations

import signal
from collections.abc import Iterable

from fyan.errors import UsageError
from fyan.terminal import quoted


#: commands whose interruption leaves a run to resume
RESUMABLE = ("run", "resume", "daemon")


def interrupt_text(signum: int, command: str, folder: str | None) -> tuple[str, str]:
    """(message, hint) for a command stopped by ``signum``: the same words wherever the signal
    arrived (starting up, ingesting, during attempts)."""
    message = f"stopped by {signal.Signals(signum).name}"
    if command in RESUMABLE and folder:
        return message, (f"what was done is kept (attempts in progress are recorded as interrupted); "
                         f"`fyan resume {quoted(folder)}` continues")
    return message, "run the same command again"


def refuse_unknown_units(folder: str, wanted: Iterable[str], known: set[str]) -> None:
    """Raise ``UsageError`` (exit 2) naming the first of ``wanted`` that is not in ``known``."""
    unknown = sorted(set(wanted) - known)
    if unknown:
        raise UsageError(f"{folder}: no unit {unknown[0]!r}", hint=f"list units with `fyan status {quoted(folder)}`")
