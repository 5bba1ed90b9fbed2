"""Hand edits to a unit's proof (``units/<unit>/Basic.lean``) enter the state through the gateway.

``units/`` is written by the gateway only, and the completion gate refuses a ``Basic.lean``
whose hash differs from the recorded artifact. A person who fixes a proof by hand therefore
does not bypass anything: the daemon notices the edit (watcher, or the scan when a run
starts), and hands the file to ``Gateway.record_manual_attempt``, which treats it as an
attempt of the ``prove`` stage made by a person — the prove stage's deterministic check runs
on it (Fyan's imports and namespace around the model part, the source lints, every frozen
declaration present with its frozen signature). If the check passes, the file becomes the
recorded artifact and the unit goes (back) to the gate, which re-runs; if it refuses, only a
``manual_edit_refused`` event is recorded, the unit keeps its state, and the gate keeps
refusing the unrecorded file until it is restored or fixed.

A file equal to any version the gateway ever recorded for that unit is not an edit (that is
the gateway's own publishing). A unit with an attempt running is looked at again later.
"""

from __future__ import annotations

from dataclasses import dataclass

from fyan import logs
from fyan.sandbox import safefile
from fyan.errors import TransitionError
from fyan.project import Project
from fyan.state.store import Store
from fyan.state.gateway import Gateway, sha256_bytes

PROOF_FILE = "Basic.lean"


@dataclass
class EditOutcome:
    unit: str
    taken: bool
    reason: str
    deferred: bool = False


def recorded_hashes(store: Store, unit: str | None = None) -> dict[str, set[str]]:
    """Unit -> every sha256 the gateway ever recorded for its proof (one query)."""
    out: dict[str, set[str]] = {}
    for a in store.artifacts(unit, current=False, kind=PROOF_FILE):
        out.setdefault(a.unit, set()).add(a.sha256)
    return out


def edited(project: Project, store: Store, unit: str, recorded: set[str] | None = None) -> bytes | None:
    """The content of ``units/<unit>/Basic.lean`` when it is a hand edit, else None
    (``recorded``: the unit's recorded proof hashes, when the caller has them)."""
    path = project.paths.unit(unit) / PROOF_FILE
    if recorded is None:
        recorded = recorded_hashes(store, unit).get(unit, set())
    if not recorded or not safefile.is_regular(path):
        return None  # no proof recorded yet (or no regular file there): nothing a person could have edited
    try:
        data = safefile.read_bytes(path)
    except safefile.UnsafeFile as e:  # over [lean] max_file_mb: not taken in, said in the log
        logs.get().warning("hand_edit_refused", unit=unit, reason=str(e))
        return None
    return None if sha256_bytes(data) in recorded else data


def take(gateway: Gateway, unit: str, attempts_per_stage: int, running: bool,
         recorded: set[str] | None = None) -> EditOutcome | None:
    """Take a hand edit of ``unit``'s proof into the state, if there is one (module docstring)."""
    data = edited(gateway.project, gateway.store, unit, recorded)
    if data is None:
        return None
    if running:
        return EditOutcome(unit, False, "an attempt is running; looked at again when it ends", deferred=True)
    last = gateway.store.events(unit, limit=100_000)
    digest = sha256_bytes(data)
    for e in reversed(last):
        if e.kind == "manual_edit_refused":
            if e.data.get("sha256", {}).get(PROOF_FILE) == digest:
                return None  # this exact file was refused already; wait for another edit
            break
        if e.kind == "manual_attempt":
            break
    try:
        run, reason = gateway.record_manual_attempt(unit, {PROOF_FILE: data}, attempts_per_stage)
    except TransitionError as e:
        return EditOutcome(unit, False, e.message)
    if run is None:
        return EditOutcome(unit, False, f"hand edit refused by the prove check: {reason}")
    ok = run.status.value == "succeeded"
    return EditOutcome(unit, ok, ("hand edit taken; the gate re-runs" if ok else f"hand edit failed: {reason}"))
