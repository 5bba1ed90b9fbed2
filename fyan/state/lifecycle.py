"""Pure rules: a unit's status and next stage, computed from its stage history.

Status is never stored (computed from the store, never stored twice: a second copy could drift). The rules:

* stages run in the order of ``Stage``; a succeeded run of the expected stage advances;
* a failed run counts against its stage's attempt budget (``attempts_per_stage``); it may
  rewind to an earlier stage (audit → plan for a repair, gate → prove) — the budget of the
  failed stage still counts, so a plan/audit loop cannot run forever;
* a failure of kind ``environment`` (no Lean toolchain, a replay miss) blocks at once, for the
  current session only: retrying cannot help now, but the next ``fyan run`` (a new session,
  perhaps after installing Lean) tries again; such failures never use up the budget. A run
  restricted to some units (``fyan run --unit``) starts a new session for those units only
  (``scoped``): the others keep their block until a run covers them;
* a failure of kind ``refuted`` (an executed small-instance check refuted a frozen statement:
  ``fyan.refute.frozen``) blocks the unit with the evidence until a human gives guidance (across
  sessions: another run cannot make a false statement true); the guidance (``reset_after``)
  lifts the block and the unit goes back to the stage the failure names (the audit). It never
  uses up the budget;
* an interrupted run (the process died) does not count: it is simply run again;
* a unit is complete when a gate run succeeded and nothing ran after it;
* a unit whose dependency is blocked is blocked too, with the dependency's reason;
* a succeeded ``prove`` run recorded when the unit is already at the gate or complete (a
  hand-edited proof taken in by ``Gateway.record_manual_attempt``) sends the unit back to the
  gate: the gate re-runs on the new proof. A success also clears a block;
* a unit **adopted** from an existing Lake package (``fyan.adopt``: its declarations were found
  declared, sorry-free and with allowed axioms by the trusted inspector) is complete whatever
  its runs, and its view says ``adopted`` (distinct from closed by Fyan's gate);
* human guidance resets the attempt budget: failures of runs up to ``reset_after`` (the last
  run id when the advice was recorded) no longer count (environment failures still block for
  their session);
* a **restart** marker (a run recorded as interrupted with failure kind ``restart``, written
  when a change of the source is accepted: ``Gateway.accept_source``) makes the unit start
  over: the runs before it no longer count at all (not complete, first stage next, no failure
  against the budget); they stay in the history;
* a **re-plan**: a failed ``prove`` run of kind ``replan`` (the Formalizer's verdict — a planned
  lemma refuted, or a step too hard — checked by ``fyan.replan``) with a rewind to ``plan`` sends
  the unit back to the Planner for its planned lemmas only: it costs the prove stage no attempt,
  the frozen roots stay frozen (the plan check refuses a plan that changes one), and the plan's
  success goes straight to ``prove`` (the audit certified the roots, which did not change). Each
  counts in ``replans``. A ``replan`` run without a rewind (the check found the bound
  ``[scheduler] max_replans`` reached) blocks the unit for a human with its reason, until human
  guidance recorded after it (``reset_after``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from graphlib import TopologicalSorter

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
    adopted: bool = False
    #: re-plans caused by the Formalizer's checked verdicts (module docstring)
    replans: int = 0
    #: a re-plan is under way: the next successful plan goes to prove, not to the audit
    replanning: bool = False


def progress(
    runs: list[StageRun], attempts_per_stage: int, session_start: float = 0.0, reset_after: int = 0,
    adopted: bool = False,
) -> Progress:
    """Replay ``runs`` (one unit's, in id order) through the rules of the module docstring.

    ``session_start`` (POSIX seconds) is when the current run session began; ``reset_after``
    is the run id up to which failures no longer count against the budget (0: none);
    ``adopted``: the unit is complete by adoption (its runs are then only counted).
    """
    p = Progress()
    if adopted:
        p.next_stage, p.complete, p.adopted = None, True, True
        p.attempts.update(r.stage.value for r in runs)
        return p
    failures: Counter = Counter()
    for r in runs:
        if r.failure_kind is FailureKind.RESTART:  # a source change was accepted: start over
            p, failures = Progress(), Counter()
            continue
        p.attempts[r.stage.value] += 1
        if r.status is RunStatus.RUNNING:
            p.running = r
            continue
        if r.status is RunStatus.INTERRUPTED:
            continue
        if r.status is RunStatus.SUCCEEDED:
            if r.stage is p.next_stage and r.stage is Stage.PLAN and p.replanning:
                p.next_stage, p.replanning, p.blocked_reason = Stage.PROVE, False, None  # roots still frozen
            elif r.stage is p.next_stage:
                p.next_stage = r.stage.next
                p.complete = r.stage is Stage.GATE
                p.blocked_reason = None
            elif r.stage is Stage.PROVE and (p.complete or p.next_stage is Stage.GATE):
                p.next_stage, p.complete, p.blocked_reason = Stage.GATE, False, None  # hand-edited proof
            continue
        # failed
        p.complete = False
        p.last_failure = r
        if r.failure_kind is FailureKind.REPLAN:  # the Formalizer's checked verdict: not charged
            if r.rewind_to is not None:
                p.replans += 1
                p.next_stage, p.replanning, p.blocked_reason = r.rewind_to, True, None
            elif r.id > reset_after:
                p.next_stage, p.blocked_reason = r.stage, r.reason or "re-plan bound reached"
            else:
                p.next_stage, p.blocked_reason = r.stage, None
            continue
        if r.failure_kind is FailureKind.ENVIRONMENT and (r.finished_at or 0.0) < session_start:
            p.next_stage = r.rewind_to or r.stage
            p.blocked_reason = None
            continue  # an earlier session's environment problem: try again
        if r.failure_kind is FailureKind.REFUTED:  # a human decides (guidance), never a retry
            p.next_stage = r.rewind_to or r.stage
            p.blocked_reason = (r.reason or f"{r.stage.value}: statement refuted") if r.id > reset_after else None
            continue
        if r.failure_kind is not FailureKind.ENVIRONMENT and r.id > reset_after:
            failures[r.stage] += 1
        if r.rewind_to is not None:
            p.next_stage = r.rewind_to
        else:
            p.next_stage = r.stage
        if r.failure_kind is FailureKind.ENVIRONMENT:
            p.blocked_reason = r.reason or f"{r.stage.value} failed"
        elif failures[r.stage] >= attempts_per_stage and r.id > reset_after:
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


def unit_view(
    record: UnitRecord, p: Progress, depends_on: list[str], dep_views: Mapping[str, UnitView]
) -> UnitView:
    """The view of one unit from its own progress and its dependencies' views."""
    base = dict(unit=record, next_stage=p.next_stage, depends_on=depends_on, attempts=dict(p.attempts),
                adopted=p.adopted, replans=p.replans)
    if p.running is not None:
        return UnitView(status=UnitStatus.RUNNING, reason=f"{p.running.stage.value} running", **base)
    if p.complete:
        return UnitView(status=UnitStatus.COMPLETE, reason="adopted" if p.adopted else None, **base)
    if p.blocked_reason is not None:
        return UnitView(status=UnitStatus.BLOCKED, reason=p.blocked_reason, **base)
    blocked = [d for d in depends_on if dep_views[d].status is UnitStatus.BLOCKED]
    pending = [d for d in depends_on if dep_views[d].status is not UnitStatus.COMPLETE]
    if blocked:
        reason = dep_views[blocked[0]].reason or ""
        if not reason.startswith("dependency "):
            reason = f"dependency {blocked[0]} is blocked: {reason}"
        return UnitView(status=UnitStatus.BLOCKED, reason=reason, **base)
    if pending:
        return UnitView(status=UnitStatus.WAITING, reason="waiting for " + ", ".join(pending), **base)
    reason = None
    if p.last_failure is not None:
        reason = f"retrying {p.next_stage.value if p.next_stage else ''}: {p.last_failure.reason}"
    return UnitView(status=UnitStatus.READY, reason=reason, **base)


def unit_views(
    units: list[UnitRecord],
    deps: list[DependencyRecord],
    runs: list[StageRun],
    attempts_per_stage: int,
    session_start: float = 0.0,
    resets: Mapping[str, int] | None = None,
    scoped: Mapping[str, float] | None = None,
    adopted: set[str] | frozenset[str] = frozenset(),
) -> dict[str, UnitView]:
    """Status of every unit, dependencies included (module docstring), keyed by unit id.

    ``resets`` maps a unit id to its ``reset_after`` run id (see ``progress``); ``scoped`` a
    unit id to the start of a later session restricted to some units (POSIX seconds);
    ``adopted``: the ids of units complete by adoption."""
    resets = resets or {}
    scoped = scoped or {}
    by_unit: dict[str, list[StageRun]] = {u.id: [] for u in units}
    for r in sorted(runs, key=lambda r: r.id):
        by_unit.setdefault(r.unit, []).append(r)
    depends: dict[str, list[str]] = {u.id: [] for u in units}
    for d in deps:
        if d.depends_on not in depends[d.unit]:
            depends[d.unit].append(d.depends_on)
    views: dict[str, UnitView] = {}
    record = {u.id: u for u in units}
    for uid in TopologicalSorter(depends).static_order():  # dependencies first
        p = progress(by_unit[uid], attempts_per_stage, max(session_start, scoped.get(uid, 0.0)), resets.get(uid, 0),
                     uid in adopted)
        views[uid] = unit_view(record[uid], p, depends[uid], views)
    return {u.id: views[u.id] for u in units}
