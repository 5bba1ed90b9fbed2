"""The orchestrator's in-memory copy of the state: units, edges, runs and derived statuses.

The store is the truth: the ledger is loaded from it when a run starts
(``Ledger.load``) and then kept current from the ``StageRun`` objects the gateway returns for
each write it made (``record``), so the run loop never re-reads the whole store. Statuses are
derived with the same pure rules as ``Store.views`` (``fyan.state.lifecycle.progress`` and
``unit_view``), incrementally: a changed unit is re-derived, and its dependents only when the
part of its status they look at (complete / blocked and why) changed. ``verify`` compares the
ledger with a fresh ``Store.views`` (used by tests and by ``fyan resume --dry-run``).

Stage cost estimates for the critical-path scheduler come from recorded durations: a unit's
own last finished attempt of a stage when there is one, else the median of the stage's
recorded durations, else ``DEFAULT_STAGE_SECONDS`` (seconds).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from graphlib import TopologicalSorter

from fyan.state.lifecycle import Progress, progress, unit_view
from fyan.state.models import RunStatus, Stage, StageRun, UnitRecord, UnitStatus, UnitView
from fyan.state.store import Store

DEFAULT_STAGE_SECONDS = 1.0
STAGES = list(Stage)


class Ledger:
    """Units, runs and derived views of one project, kept incrementally (module docstring)."""

    def __init__(
        self,
        units: list[UnitRecord],
        edges: Iterable[tuple[str, str]],
        runs: list[StageRun],
        attempts_per_stage: int,
        session_start: float = 0.0,
        resets: dict[str, int] | None = None,
        scoped: dict[str, float] | None = None,
        adopted: set[str] | None = None,
    ) -> None:
        self.attempts_per_stage = attempts_per_stage
        self.session_start = session_start
        self.scoped = dict(scoped or {})
        self.resets = dict(resets or {})
        self.adopted = set(adopted or ())
        self.units: dict[str, UnitRecord] = {u.id: u for u in units}
        self.depends: dict[str, list[str]] = {u.id: [] for u in units}
        self.dependents: dict[str, list[str]] = {u.id: [] for u in units}
        for unit, dep in edges:
            if dep not in self.depends[unit]:
                self.depends[unit].append(dep)
                self.dependents[dep].append(unit)
        #: dependencies before dependents; the units that become ready together in document order
        #: (the standard library's sorter: networkx's import alone is ~60 ms of a restart).
        #: Raises ``graphlib.CycleError`` on a cycle (the intake refuses one; a store that has one
        #: was edited by hand).
        self.topo: list[str] = []
        sorter = TopologicalSorter(self.depends)
        sorter.prepare()
        while sorter.is_active():
            batch = sorted(sorter.get_ready(), key=lambda u: self.units[u].order)
            self.topo.extend(batch)
            sorter.done(*batch)
        self.runs: dict[str, list[StageRun]] = {u: [] for u in self.units}
        self._durations: dict[Stage, list[float]] = {s: [] for s in Stage}
        self._own: dict[tuple[str, Stage], float] = {}
        self._own_stages: dict[str, dict[Stage, float]] = {}
        for r in sorted(runs, key=lambda r: r.id):
            self.runs[r.unit].append(r)
            self._note_duration(r)
        self.changes = 0  # counts re-derivations (the scheduler refreshes priorities by it)
        self.progress: dict[str, Progress] = {}
        self.views: dict[str, UnitView] = {}
        self.ready: set[str] = set()
        #: units found ready by a derivation since the scheduler last looked (it drains the list;
        #: a unit may appear more than once)
        self.became_ready: list[str] = []
        for uid in self.topo:
            self._derive(uid)

    @classmethod
    def load(cls, store: Store, attempts_per_stage: int) -> Ledger:
        """Read everything from ``store`` (the truth) once."""
        return cls(store.units(), [(d.unit, d.depends_on) for d in store.deps()], store.runs(), attempts_per_stage,
                   store.session_start(), store.budget_resets(), store.session_scoped(), store.adopted())

    def new_session(self, store: Store) -> None:
        """A run session started (``Gateway.start_session``): re-read its start times from
        ``store`` and re-derive every unit."""
        self.session_start, self.scoped = store.session_start(), store.session_scoped()
        self.views, self.ready = {}, set()
        for uid in self.topo:
            self._derive(uid)

    # -- updates ---------------------------------------------------------------------------
    def record(self, run: StageRun) -> None:
        """Take in a run the gateway wrote (new, or an update of a known run id)."""
        runs = self.runs[run.unit]
        for i in range(len(runs) - 1, -1, -1):
            if runs[i].id == run.id:
                runs[i] = run
                break
        else:
            runs.append(run)
            runs.sort(key=lambda r: r.id)
        self._note_duration(run)
        self._rederive(run.unit)

    def last_gate_success(self, unit: str) -> int | None:
        """Id of the unit's latest successful gate run (its current completion), if any."""
        for r in reversed(self.runs[unit]):
            if r.stage is Stage.GATE and r.status is RunStatus.SUCCEEDED:
                return r.id
        return None

    def replace_runs(self, unit: str, runs: list[StageRun]) -> None:
        """Replace one unit's history (after a write the engine did not see, e.g. re-read)."""
        self.runs[unit] = sorted(runs, key=lambda r: r.id)
        for r in runs:
            self._note_duration(r)
        self._rederive(unit)

    def set_reset(self, unit: str, after_run: int) -> None:
        """Human guidance recorded for ``unit``: failures up to ``after_run`` no longer count."""
        self.resets[unit] = max(after_run, self.resets.get(unit, 0))
        self._rederive(unit)

    def _note_duration(self, r: StageRun) -> None:
        if r.duration is not None and r.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            bisect.insort(self._durations[r.stage], r.duration)
            self._own[(r.unit, r.stage)] = r.duration
            self._own_stages.setdefault(r.unit, {})[r.stage] = r.duration

    def _derive(self, uid: str) -> UnitView:
        self.changes += 1
        p = progress(self.runs[uid], self.attempts_per_stage, max(self.session_start, self.scoped.get(uid, 0.0)),
                     self.resets.get(uid, 0), uid in self.adopted)
        self.progress[uid] = p
        view = unit_view(self.units[uid], p, self.depends[uid], self.views)
        self.views[uid] = view
        if view.status is UnitStatus.READY:
            self.ready.add(uid)
            self.became_ready.append(uid)
        else:
            self.ready.discard(uid)
        return view

    @staticmethod
    def _facing(view: UnitView | None) -> tuple:
        """What dependents look at in a view."""
        if view is None:
            return (None,)
        if view.status is UnitStatus.BLOCKED:
            return ("blocked", view.reason)
        return (view.status is UnitStatus.COMPLETE,)

    def _rederive(self, uid: str) -> None:
        todo = [uid]
        while todo:
            u = todo.pop()
            before = self._facing(self.views.get(u))
            after = self._facing(self._derive(u))
            if before != after:
                todo.extend(self.dependents[u])

    # -- reads -----------------------------------------------------------------------------
    def running(self) -> dict[str, StageRun]:
        return {u: p.running for u, p in self.progress.items() if p.running is not None}

    def counts(self) -> Counter:
        return Counter(v.status.value for v in self.views.values())

    def by_layer(self) -> dict[int, Counter]:
        layers: dict[int, Counter] = {}
        for v in self.views.values():
            layers.setdefault(v.unit.layer, Counter())[v.status.value] += 1
        return dict(sorted(layers.items()))

    def stage_cost(self, unit: str, stage: Stage) -> float:
        """Estimated seconds of one attempt of ``stage`` for ``unit`` (module docstring)."""
        own = self._own.get((unit, stage))
        if own is not None:
            return own
        d = self._durations[stage]
        if not d:
            return DEFAULT_STAGE_SECONDS
        n = len(d)
        return d[n // 2] if n % 2 else (d[n // 2 - 1] + d[n // 2]) / 2

    def remaining_cost(self, unit: str) -> float:
        """Estimated seconds of the stages ``unit`` still has to run (0 when complete)."""
        p = self.progress[unit]
        if p.complete or p.next_stage is None:
            return 0.0
        return sum(self.stage_cost(unit, s) for s in STAGES[STAGES.index(p.next_stage):])

    def remaining_costs(self) -> dict[str, float]:
        """``remaining_cost`` of every unit, computed in one pass (per-stage medians once)."""
        medians = {s: self.stage_cost("", s) for s in Stage}
        suffix: dict[Stage | None, float] = {None: 0.0}
        acc = 0.0
        for s in reversed(STAGES):
            acc += medians[s]
            suffix[s] = acc
        index = {s: i for i, s in enumerate(STAGES)}
        out: dict[str, float] = {}
        own_stages = self._own_stages
        for uid, p in self.progress.items():
            if p.complete or p.next_stage is None:
                out[uid] = 0.0
                continue
            cost = suffix[p.next_stage]
            own = own_stages.get(uid)
            if own:
                start = index[p.next_stage]
                for stage, seconds in own.items():
                    if index[stage] >= start:
                        cost += seconds - medians[stage]
            out[uid] = cost
        return out

    def closure(self, only: Iterable[str]) -> set[str]:
        """The units in ``only`` and everything they depend on, transitively."""
        seen: set[str] = set()
        todo = list(only)
        while todo:
            u = todo.pop()
            if u in seen:
                continue
            seen.add(u)
            todo.extend(self.depends[u])
        return seen

    def verify(self, store: Store) -> list[str]:
        """Differences between the ledger's views and a fresh ``store.views`` (empty = agree)."""
        truth = store.views(self.attempts_per_stage)
        problems = []
        for uid, view in truth.items():
            mine = self.views.get(uid)
            if mine is None or (mine.status, mine.next_stage, mine.reason) != (view.status, view.next_stage, view.reason):
                problems.append(f"{uid}: ledger {mine and (mine.status, mine.next_stage, mine.reason)} != store "
                                f"{(view.status, view.next_stage, view.reason)}")
        return problems
