"""What several commands share: the words for a command stopped by a signal, and the refusal
of unknown unit ids (exit 2, before anything else runs)."""

from __future__ import annotations

import signal
from collections.abc import Iterable
from typing import TYPE_CHECKING

from fyan.errors import UsageError
from fyan.terminal import quoted

if TYPE_CHECKING:  # types only: `fyan --help` imports this module and never opens a store
    from fyan.state.models import UnitRecord
    from fyan.state.store import Store


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


def require_unit(folder: str, store: Store, unit_id: str) -> UnitRecord:
    """The unit ``unit_id`` of ``store``; when the store has no such unit (or no store exists)
    the store is closed and ``UsageError`` (exit 2) is raised, before anything else runs."""
    unit = store.unit(unit_id) if store.exists else None
    if unit is None:
        store.close()
        refuse_unknown_units(folder, [unit_id], set())
    assert unit is not None  # refuse_unknown_units raised otherwise
    return unit


def refuse_unknown_units(folder: str, wanted: Iterable[str], known: set[str]) -> None:
    """Raise ``UsageError`` (exit 2) naming the first of ``wanted`` that is not in ``known``."""
    unknown = sorted(set(wanted) - known)
    if unknown:
        raise UsageError(f"{folder}: no unit {unknown[0]!r}", hint=f"list units with `fyan status {quoted(folder)}`")
