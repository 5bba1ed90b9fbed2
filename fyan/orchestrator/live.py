"""What a run is doing right now, as the daemon hands it to the progress display (the heartbeat
of ``fyan run``) and to the dashboard: no store read, no second source of truth — the store
stays the record; this is the running process's own view (jobs in flight, providers down).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fyan.agents.providers.breaker import Outage


@dataclass
class LiveState:
    """A snapshot of one run (times are POSIX seconds).

    ``running``: (unit, stage or task, started) of each job in flight; ``counts``: units by
    status; ``outages``: providers that are unavailable now; ``waiting``: ready units held back
    until their provider answers; ``stopping``: why the run is stopping, if it is; ``phase``:
    ``starting`` | ``ingesting`` | ``running``; ``pid`` and ``started``: the process and when
    it began; ``lean``: Lean processes running and waiting for memory."""

    running: list[tuple[str, str, float]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    outages: list[Outage] = field(default_factory=list)
    waiting: int = 0
    stopping: str | None = None
    phase: str = "running"
    pid: int | None = None
    started: float | None = None
    #: Lean processes and memory (``fyan.sandbox.admission``): ``budget_mb``, ``used_mb``,
    #: ``running`` and ``waiting`` (each ``{"kind", "unit", "cost_mb", "since"}``)
    lean: dict[str, Any] = field(default_factory=dict)

    @property
    def lean_waiting(self) -> list[dict[str, Any]]:
        return list(self.lean.get("waiting", []))

    def as_dict(self, now: float) -> dict[str, Any]:
        """JSON-ready, with each outage described for ``now`` ("… next try in 40 s")."""
        return {
            "phase": self.phase, "pid": self.pid, "started": self.started, "stopping": self.stopping,
            "counts": self.counts, "waiting_for_provider": self.waiting,
            "running": [{"unit": u, "stage": s, "since": t, "elapsed_s": round(now - t, 1)} for u, s, t in self.running],
            "outages": [{**o.as_dict(), "text": o.describe(now)} for o in self.outages],
            "lean_memory": self.lean,
        }


def lean_waiting_text(lean: dict) -> str:
    """``2 Lean process(es) wait for memory (build u1, inspector u2; 12288 of 16384 MiB in use)``
    for a ``LiveState.lean`` snapshot."""
    waiting = lean.get("waiting", [])
    who = ", ".join(" ".join(x for x in (w["kind"], w.get("unit") or "") if x) for w in waiting[:3])
    more = ", ..." if len(waiting) > 3 else ""
    return (f"{len(waiting)} Lean process(es) wait for memory ({who}{more}; "
            f"{lean.get('used_mb', 0)} of {lean.get('budget_mb', 0)} MiB in use)")
