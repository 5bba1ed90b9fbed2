"""Pure rules: a unit's status and next stage, computed from its stage history.

Status is never stored (DESIGN.md §8: computed from the store, never stored twice). The rules:

* stages run in the order of ``Stage``; a succeeded run of the expected stage advances;
* a failed run counts against its stage's attempt budget (``attempts_per_stage``); it may
  rewind to an earlier stage (audit → plan for a repair, gate → prove) — the budget of the
  failed stage still counts, so a plan/audit loop cannot run forever;
* a failure of kind ``environment`` (no Lean toolchain, a replay miss) blocks at once, for the
  current session only: retrying cannot help now, but the next ``fyan run`` (a new session,
  perhaps after installing Lean) tries again; such failures never use up the budget;
* an interrupted run (the process died) does not count: it is simply run again;
* a unit is complete when a gate run succeeded and nothing ran after it;
* a unit whose dependency is blocked is blocked too, with the dependency's reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import networkx as nx

from fyan.state.models import (
    DependencyRecord,
    FailureKind,
    RunStatus,
    Stage,
    StageRun,
    UnitRecord,
    UnitStatus,
    UnitView,
)


@dataclass
class Progress:
    """Where one unit stands, from its own runs only (dependencies not considered)."""

    next_stage: Stage | None = Stage.REASON
    complete: bool = False
    running: StageRun | None = None
    blocked_reason: str | None = None
    last_failure: StageRun | None = None
    attempts: Counter = field(default_factory=Counter)


def progress(runs: list[StageRun], attempts_per_stage: int, session_start: float = 0.0) -> Progress:
    """Replay ``runs`` (one unit's, in id order) through the rules of the module docstring.

    ``session_start`` (POSIX seconds) is when the current run session began.
    """
    p = Progress()
    failures: Counter = Counter()
    for r in runs:
        p.attempts[r.stage.value] += 1
        if r.status is RunStatus.RUNNING:
            p.running = r
            continue
        if r.status is RunStatus.INTERRUPTED:
            continue
        if r.status is RunStatus.SUCCEEDED:
            if r.stage is p.next_stage:
                p.next_stage = r.stage.next
                p.complete = r.stage is Stage.GATE
            continue
        # failed
        p.complete = False
        p.last_failure = r
        if r.failure_kind is FailureKind.ENVIRONMENT and (r.finished_at or 0.0) < session_start:
            p.next_stage = r.rewind_to or r.stage
            p.blocked_reason = None
            continue  # an earlier session's environment problem: try again
        if r.failure_kind is not FailureKind.ENVIRONMENT:
            failures[r.stage] += 1
        if r.rewind_to is not None:
            p.next_stage = r.rewind_to
        else:
            p.next_stage = r.stage
        if r.failure_kind is FailureKind.ENVIRONMENT:
            p.blocked_reason = r.reason or f"{r.stage.value} failed"
        elif failures[r.stage] >= attempts_per_stage:
            p.blocked_reason = (
                f"{r.stage.value} failed {failures[r.stage]} time(s) (budget {attempts_per_stage}); "
                f"last: {r.reason}"
            )
        else:
            p.blocked_reason = None
    if p.complete:
        p.next_stage = None
        p.blocked_reason = None
    return p


def unit_views(
    units: list[UnitRecord],
    deps: list[DependencyRecord],
    runs: list[StageRun],
    attempts_per_stage: int,
    session_start: float = 0.0,
) -> dict[str, UnitView]:
    """Status of every unit, dependencies included (module docstring), keyed by unit id."""
    by_unit: dict[str, list[StageRun]] = {u.id: [] for u in units}
    for r in sorted(runs, key=lambda r: r.id):
        by_unit.setdefault(r.unit, []).append(r)
    depends: dict[str, list[str]] = {u.id: [] for u in units}
    for d in deps:
        if d.depends_on not in depends[d.unit]:
            depends[d.unit].append(d.depends_on)
    g = nx.DiGraph()
    g.add_nodes_from(depends)
    g.add_edges_from((u, d) for u, ds in depends.items() for d in ds)
    views: dict[str, UnitView] = {}
    record = {u.id: u for u in units}
    for uid in reversed(list(nx.topological_sort(g))):
        p = progress(by_unit[uid], attempts_per_stage, session_start)
        attempts = dict(p.attempts)
        base = dict(unit=record[uid], next_stage=p.next_stage, depends_on=depends[uid], attempts=attempts)
        if p.running is not None:
            views[uid] = UnitView(status=UnitStatus.RUNNING, reason=f"{p.running.stage.value} running", **base)
        elif p.complete:
            views[uid] = UnitView(status=UnitStatus.COMPLETE, **base)
        elif p.blocked_reason is not None:
            views[uid] = UnitView(status=UnitStatus.BLOCKED, reason=p.blocked_reason, **base)
        else:
            blocked = [d for d in depends[uid] if views[d].status is UnitStatus.BLOCKED]
            pending = [d for d in depends[uid] if views[d].status is not UnitStatus.COMPLETE]
            if blocked:
                reason = views[blocked[0]].reason or ""
                if not reason.startswith("dependency "):
                    reason = f"dependency {blocked[0]} is blocked: {reason}"
                views[uid] = UnitView(status=UnitStatus.BLOCKED, reason=reason, **base)
            elif pending:
                views[uid] = UnitView(
                    status=UnitStatus.WAITING, reason="waiting for " + ", ".join(pending), **base
                )
            else:
                reason = None
                if p.last_failure is not None:
                    reason = f"retrying {p.next_stage.value if p.next_stage else ''}: {p.last_failure.reason}"
                views[uid] = UnitView(status=UnitStatus.READY, reason=reason, **base)
    return {u.id: views[u.id] for u in units}
