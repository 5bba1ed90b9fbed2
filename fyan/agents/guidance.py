"""The guidance channel: advice from people (``guidance/<unit>.md``) and from critics.

Advice is context, never instructions that code executes: it reaches a unit's
next attempt only as a quoted comment block inside the model's prompt (``advice_block``), and
no code copies it into a Lean file, a frozen statement or any other artifact.

* A person writes or edits ``guidance/<unit>.md`` (by hand, or with the dashboard's form). The
  daemon's watcher (or the scan when a run starts) records a ``guidance`` event through the
  gateway with the file's sha256 and ``after_run`` (the unit's last run id): failures up to
  that run no longer count against the unit's attempt budget, so advice can revive a unit
  blocked over its budget (``fyan.state.lifecycle``). Deleting the file records
  ``guidance_removed``.
* A critic review (``fyan.orchestrator.stagnation``) records a ``guidance`` event with
  ``source = "critic"`` and the advice text; it does not reset the budget.

The next attempt's prompt carries the person's current file and the latest critic advice.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from fyan.project import Project
from fyan.state.gateway import Gateway
from fyan.state.store import Store

NONE = "(none)"
MAX_CHARS = 20_000  # longer advice is cut (and the prompt says so)


def guidance_path(project: Project, unit: str) -> Path:
    return project.paths.guidance / f"{unit}.md"


def write_human(project: Project, unit: str, text: str) -> Path:
    """Replace ``guidance/<unit>.md`` with ``text`` atomically (the dashboard's form, the MCP
    server's ``guidance`` tool); the caller checked that the unit exists. Returns the path. The
    daemon's watcher records the change through the gateway."""
    folder = project.paths.guidance
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{unit}.", suffix=".tmp", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text.replace("\r\n", "\n").rstrip() + "\n")
    path = folder / f"{unit}.md"
    os.replace(tmp, path)
    return path


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in text.splitlines())


def latest_human(store: Store, unit: str) -> dict | None:
    """Data of the last ``guidance``/``guidance_removed`` event a person caused for ``unit``."""
    last = None
    for e in store.events(unit, limit=100_000):
        if e.kind == "guidance_removed" or (e.kind == "guidance" and e.data.get("source") == "human"):
            last = {"kind": e.kind, **e.data}
    return last


def latest_critic(store: Store, unit: str) -> str | None:
    text = None
    for e in store.events(unit, limit=100_000):
        if e.kind == "guidance" and e.data.get("source") == "critic":
            text = e.data.get("text")
    return text


def record_human(gateway: Gateway, unit: str, after_run: int) -> str | None:
    """Record the current state of ``guidance/<unit>.md`` if it changed since the last record.

    Returns ``"guidance"``, ``"guidance_removed"`` or None (nothing new)."""
    path = guidance_path(gateway.project, unit)
    last = latest_human(gateway.store, unit)
    if not path.is_file():
        if last is not None and last["kind"] == "guidance":
            gateway.event("guidance_removed", unit, {"source": "human", "path": f"guidance/{unit}.md"})
            return "guidance_removed"
        return None
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if last is not None and last["kind"] == "guidance" and last.get("sha256") == digest:
        return None
    if not data.strip():
        return None
    gateway.event("guidance", unit, {
        "source": "human", "path": f"guidance/{unit}.md", "sha256": digest, "after_run": after_run,
        "chars": len(data.decode("utf-8", errors="replace")),
    })
    return "guidance"


def advice_block(project: Project, store: Store, unit: str) -> str:
    """The advice for ``unit``'s next attempt, as quoted (non-executable) context for a prompt;
    ``(none)`` when there is none."""
    parts = []
    path = guidance_path(project, unit)
    if path.is_file():
        text = path.read_text(encoding="utf-8", errors="replace").strip()
        if text:
            cut = len(text) > MAX_CHARS
            parts.append(_quote(text[:MAX_CHARS]) + ("\n> [advice cut at 20000 characters]" if cut else ""))
    if store.exists:
        critic = latest_critic(store, unit)
        if critic and critic.strip():
            parts.append("A critic reviewed the previous attempts (a model's advice; frozen statements stay as "
                         "they are):\n" + _quote(critic.strip()[:MAX_CHARS]))
    return "\n\n".join(parts) if parts else NONE
