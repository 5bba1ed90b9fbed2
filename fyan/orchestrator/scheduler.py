"""Which ready unit goes next: highest remaining critical path first.

The priority of a unit is the length of the longest chain of unfinished work that waits on
it — its own remaining stages plus, recursively, the longest chain among its unfinished
dependents — in seconds, from recorded stage durations when known (``Ledger.stage_cost``:
the unit's own last attempt of a stage, else the stage's median, else 1 s). Ties go to
document order. Dispatching the head of the longest chain first is what keeps the makespan
near max(critical path, total work / slots) (list scheduling with critical-path priorities).

``fifo`` (ready units in the order they became ready) exists for comparison
(``scripts/bench_makespan.py``).

Dispatch cost does not grow with the project: ``pick`` keeps the ready units in a heap keyed
by the cached priorities and pops only the few it hands out, instead of sorting every ready
unit at each dispatch (which made a transition cost O(ready · log ready): 2.57 ms at 2,000
units against 1.54 ms at 500). The heap is rebuilt when the priorities are refreshed
(amortised O(1) per status change); units that became ready in between are pushed as the ledger
reports them (``Ledger.became_ready``).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
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
        self._heap: list[tuple] = []

    def _key(self, uid: str) -> tuple:
        order = self.ledger.units[uid].order
        if self.policy == "fifo":
            if uid not in self._since:
                self._since[uid] = self._seq
                self._seq += 1
            return (self._since[uid], order, uid)
        assert self._prio is not None
        return (-self._prio[uid], order, uid)

    def _sync(self) -> None:
        """Refresh the priorities when due (then rebuild the heap from every ready unit), else
        push the units that became ready since the last pick."""
        ledger = self.ledger
        now = time.monotonic()
        if self.policy == "critical-path":
            changes = ledger.changes
            due = (self._prio is None or changes - self._prio_changes >= self._batch
                   or now - self._prio_at >= REFRESH_S)
            if due:
                self._prio, self._prio_changes = priorities(ledger), changes
        else:
            due = now - self._prio_at >= REFRESH_S
        if due:
            self._prio_at = now
            ledger.became_ready.clear()
            ready = ledger.ready
            if self.policy == "fifo":  # units first seen together: document order
                ready = sorted(ready, key=lambda u: ledger.units[u].order)
            self._heap = [self._key(u) for u in ready]
            heapq.heapify(self._heap)
            return
        fresh = ledger.became_ready
        if fresh:
            ready = ledger.ready
            for uid in fresh:
                if uid in ready:
                    heapq.heappush(self._heap, self._key(uid))
            fresh.clear()

    def pick(self, n: int, accept: Callable[[str], bool | None]) -> list[str]:
        """Up to ``n`` ready units, in dispatch order, that ``accept`` takes.

        ``accept(unit)`` returns True (dispatch it), False (not now: it stays queued, e.g. no
        executor slot for its stage) or None (skip it until the next refresh of the queue, at
        most ``REFRESH_S`` seconds: already running, held, or not in this run's scope). Cost:
        O(k log R) for k units looked at, R ready units; not O(R log R).
        """
        self._sync()
        heap = self._heap
        ready = self.ledger.ready
        taken: list[str] = []
        back: list[tuple] = []
        seen: set[str] = set()
        while heap and len(taken) < n:
            key = heapq.heappop(heap)
            uid = key[-1]
            if uid in seen or uid not in ready:
                continue  # a duplicate entry, or a unit no longer ready
            seen.add(uid)
            verdict = accept(uid)
            if verdict:
                taken.append(uid)
                self._since.pop(uid, None)
            elif verdict is False:
                back.append(key)
        for key in back:
            heapq.heappush(heap, key)
        return taken

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
