"""Which ready unit goes next: highest remaining critical path first.

The priority of a unit is the length of the longest chain of unfinished work that waits on
it — its own remaining stages plus, recursively, the longest chain among its unfinished
dependents — in seconds, from recorded stage durations when known (``Ledger.stage_cost``:
the unit's own last attempt of a stage, else the stage's median, else 1 s). Ties go to
document order. Dispatching the head of the longest chain first is what keeps the makespan
near max(critical path, total work / slots) (list scheduling with critical-path priorities).

``fifo`` (ready units in the order they became ready) exists for comparison
(``scripts/bench_makespan.py``).
"""

from __future__ import annotations

import time
from typing import Literal

from fyan.orchestrator.ledger import Ledger

Policy = Literal["critical-path", "fifo"]

#: priorities are recomputed after ``units / 50`` status changes or this many seconds,
#: whichever comes first (between, a unit's priority may be a few stages out of date)
REFRESH_S = 1.0


def priorities(ledger: Ledger) -> dict[str, float]:
    """Remaining critical path (seconds) through each unit, following its dependents."""
    prio: dict[str, float] = {}
    dependents = ledger.dependents
    remaining = ledger.remaining_costs()
    for uid in reversed(ledger.topo):
        own = remaining[uid]
        best = 0.0
        for c in dependents[uid]:
            v = prio[c]
            if v > best:
                best = v
        prio[uid] = own + best
    return prio


class Scheduler:
    """Orders the ready units for dispatch under a policy."""

    def __init__(self, ledger: Ledger, policy: Policy = "critical-path") -> None:
        if policy not in ("critical-path", "fifo"):
            raise ValueError(f"unknown scheduling policy {policy!r}")
        self.ledger = ledger
        self.policy = policy
        self._seq = 0
        self._since: dict[str, int] = {}
        self._prio: dict[str, float] | None = None
        self._prio_changes = 0
        self._prio_at = 0.0
        self._batch = max(1, len(ledger.units) // 50)

    def order(self, ready: list[str]) -> list[str]:
        """``ready`` in dispatch order."""
        if self.policy == "fifo":
            for u in ready:
                if u not in self._since:
                    self._since[u] = self._seq
                    self._seq += 1
            for u in [u for u in self._since if u not in self.ledger.ready]:
                del self._since[u]
            return sorted(ready, key=lambda u: (self._since[u], self.ledger.units[u].order))
        now = time.monotonic()
        changes = self.ledger.changes
        if (self._prio is None or changes - self._prio_changes >= self._batch
                or now - self._prio_at >= REFRESH_S):
            self._prio, self._prio_changes, self._prio_at = priorities(self.ledger), changes, now
        prio = self._prio
        return sorted(ready, key=lambda u: (-prio[u], self.ledger.units[u].order))
