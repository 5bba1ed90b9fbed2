"""The run loop: dispatch stage attempts of ready units until nothing more can happen.

One step = one stage attempt of one unit: the gateway opens it (refusing anything illegal),
the stage's agent writes its files into the attempt folder, the gateway runs the deterministic
check and records the outcome. Up to ``[scheduler] parallelism`` steps run at once, in
threads (the work is model calls and Lean subprocesses). Ready units are taken highest
critical path first (``scheduler.py``). The loop stops at quiescence: nothing running and
nothing ready (every unit complete, blocked, or waiting on a blocked unit).

On start the gateway's ``recover`` marks attempts a dead process left running as
*interrupted*; they are simply run again. Nothing that completed is run again.

Post-completion tasks (the Curator ``curate`` and the Auditor ``review``, ``[agents]
post_completion``) are extra work items for complete units, dispatched when a slot is free,
each at most once per session for each completion (a failed one is tried again by the next
``fyan run``). They go through ``Gateway.begin_post``/``finish_post`` and are recorded apart
from the stage runs, so their outcome never changes a unit's status: a unit is complete when
its gate passed, whatever the Curator or Auditor do afterwards.
"""

from __future__ import annotations

import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import networkx as nx

from fyan import logs
from fyan.agents.post import POST_AGENTS
from fyan.agents.providers.base import Provider
from fyan.agents.providers.factory import ProviderFactory
from fyan.agents.session import StageSession
from fyan.agents.stages import STAGE_AGENTS, UnitContext
from fyan.errors import ExitCode, FyanError, TransitionError
from fyan.gates.post import post_checks
from fyan.gates.stages import standard_checks
from fyan.project import Project
from fyan.state.gateway import POST_TASKS, Check, Gateway
from fyan.state.models import FailureKind, PostRun, RunStatus, Stage, StageRun, UnitStatus, UnitView
from fyan.orchestrator.scheduler import order_ready, stage_costs


@dataclass
class StepEvent:
    """Reported to the progress display after every step."""

    unit: str
    stage: Stage
    status: str  # started | succeeded | failed | refused
    reason: str | None = None


@dataclass
class RunSummary:
    units: int
    layers: int
    counts: dict[str, int]
    blocked: list[tuple[str, str]]
    steps: int
    interrupted: int
    elapsed_s: float
    by_layer: dict[int, dict[str, int]] = field(default_factory=dict)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.counts.get("complete", 0) == self.units else ExitCode.INCOMPLETE


class Engine:
    def __init__(
        self,
        project: Project,
        gateway: Gateway,
        *,
        providers: Callable[[str], Provider] | None = None,
        checks: dict[Stage, Check] | None = None,
        only: set[str] | None = None,
        parallelism: int | None = None,
        on_event: Callable[[StepEvent, dict[str, UnitView]], None] | None = None,
    ) -> None:
        self.project = project
        self.gateway = gateway
        if not gateway.checks:
            gateway.checks = checks or standard_checks()
        self.providers = providers or ProviderFactory(project).for_stage
        self.parallelism = parallelism or project.config.scheduler.parallelism
        self.attempts = project.config.scheduler.attempts_per_stage
        self.on_event = on_event
        self.log = logs.configure(project.paths.logs)
        self.only = self._closure(only) if only else None
        self.post_enabled = project.config.agents.post_completion
        self._post_tried: set[tuple[str, str, int]] = set()

    def _closure(self, only: set[str]) -> set[str]:
        """The units named in ``only`` and everything they depend on."""
        known = {u.id for u in self.gateway.store.units()}
        unknown = sorted(only - known)
        if unknown:
            raise FyanError(f"unknown unit(s): {', '.join(unknown)}", hint="see `fyan status` for unit ids")
        g = nx.DiGraph()
        g.add_nodes_from(known)
        g.add_edges_from((d.unit, d.depends_on) for d in self.gateway.store.deps())
        closure = set(only)
        for u in only:
            closure |= nx.descendants(g, u)
        return closure

    def views(self) -> dict[str, UnitView]:
        return self.gateway.store.views(self.attempts)

    def _emit(self, event: StepEvent) -> None:
        if self.on_event is not None:
            self.on_event(event, self.views())

    def step(self, unit: str, stage: Stage) -> StageRun | None:
        """Run one attempt of ``stage`` for ``unit`` through the gateway."""
        try:
            run = self.gateway.begin(unit, stage, self.attempts)
        except TransitionError as e:
            self.log.warning("transition_refused", unit=unit, stage=stage.value, reason=str(e))
            self._emit(StepEvent(unit, stage, "refused", str(e)))
            return None
        self._emit(StepEvent(unit, stage, "started"))
        error: tuple[str, FailureKind] | None = None
        try:
            agent = STAGE_AGENTS.get(stage)
            if agent is not None:
                store = self.gateway.store
                unit_record = store.unit(unit)
                assert unit_record is not None
                session = StageSession(
                    gateway=self.gateway, run=run, provider=self.providers(stage.value),
                    agent=self.project.config.agents.for_stage(stage.value),
                    form_repairs=self.project.config.agents.form_repairs,
                    attempt_dir=self.project.paths.root / run.attempt_dir,
                )
                agent(session, UnitContext(self.project, store, unit_record, run))
        except FyanError as e:
            self.log.info("agent_failed", unit=unit, stage=stage.value, error=str(e))
            error = (e.message, FailureKind.AGENT if e.retryable else FailureKind.ENVIRONMENT)
        except Exception as e:  # an agent bug must not kill the run loop; the attempt fails
            self.log.error("agent_crashed", unit=unit, stage=stage.value, error=repr(e), tb=traceback.format_exc())
            error = (f"internal error in the {stage.value} stage: {type(e).__name__}: {e}", FailureKind.AGENT)
        # the gateway is asked exactly once per attempt: an error after its commit is a bug to
        # report, never a reason to close the same attempt twice
        if error is None:
            done = self.gateway.finish(run)
        else:
            done = self.gateway.finish(run, agent_error=error[0], failure_kind=error[1])
        self.log.info("stage_finished", unit=unit, stage=stage.value, status=done.status.value, reason=done.reason)
        self._emit(StepEvent(unit, stage, done.status.value, done.reason))
        return done

    def post_work(self, views: dict[str, UnitView], busy: set[str]) -> list[tuple[str, str, int]]:
        """(unit, task, gate run) of post-completion tasks due now (module docstring)."""
        if not self.post_enabled:
            return []
        gates: dict[str, int] = {}
        for r in self.gateway.store.runs():
            if r.stage is Stage.GATE and r.status is RunStatus.SUCCEEDED:
                gates[r.unit] = r.id
        done = {(p.unit, p.task, p.gate_run_id) for p in self.gateway.store.post_runs()
                if p.status in (RunStatus.SUCCEEDED, RunStatus.RUNNING)}
        work = []
        for uid, v in views.items():
            if v.status is not UnitStatus.COMPLETE or uid not in gates or (self.only is not None and uid not in self.only):
                continue
            for task in POST_TASKS:
                item = (uid, task, gates[uid])
                if item not in done and item not in self._post_tried and f"{uid}#{task}" not in busy:
                    work.append(item)
        return work

    def post_step(self, unit: str, task: str) -> PostRun | None:
        """Run one post-completion task for the complete ``unit`` through the gateway."""
        try:
            run = self.gateway.begin_post(unit, task)
        except TransitionError as e:
            self.log.info("post_refused", unit=unit, task=task, reason=str(e))
            return None
        try:
            store = self.gateway.store
            unit_record = store.unit(unit)
            assert unit_record is not None
            session = StageSession(
                gateway=self.gateway, run=None, provider=self.providers(task),
                agent=self.project.config.agents.for_stage(task), form_repairs=self.project.config.agents.form_repairs,
                attempt_dir=self.project.paths.root / run.attempt_dir, stage=task, unit=unit,
            )
            POST_AGENTS[task](session, UnitContext(self.project, store, unit_record, run))  # type: ignore[arg-type]
            done = self.gateway.finish_post(run, post_checks()[task])
        except FyanError as e:
            done = self.gateway.finish_post(run, None, agent_error=e.message)
        except Exception as e:  # a bug in a post task never stops the run loop
            self.log.error("post_crashed", unit=unit, task=task, error=repr(e), tb=traceback.format_exc())
            done = self.gateway.finish_post(run, None, agent_error=f"internal error in {task}: {type(e).__name__}: {e}")
        self.log.info("post_finished", unit=unit, task=task, status=done.status.value, reason=done.reason)
        return done

    def run(self) -> RunSummary:
        """Run to quiescence (module docstring) and summarise."""
        start = time.monotonic()
        interrupted = self.gateway.recover()
        self.gateway.start_session()
        steps = 0
        inflight: dict[Future, str] = {}
        with ThreadPoolExecutor(max_workers=self.parallelism, thread_name_prefix="fyan-step") as pool:
            try:
                while True:
                    views = self.views()
                    busy = set(inflight.values())
                    ready = [
                        uid for uid, v in views.items()
                        if v.status is UnitStatus.READY and uid not in busy and (self.only is None or uid in self.only)
                    ]
                    if ready and len(inflight) < self.parallelism:
                        costs = stage_costs(self.gateway.store.runs())
                        for uid in order_ready(views, ready, costs)[: self.parallelism - len(inflight)]:
                            stage = views[uid].next_stage
                            assert stage is not None
                            inflight[pool.submit(self.step, uid, stage)] = uid
                            steps += 1
                    if len(inflight) < self.parallelism:
                        for uid, task, gate in self.post_work(views, set(inflight.values()))[: self.parallelism - len(inflight)]:
                            self._post_tried.add((uid, task, gate))
                            inflight[pool.submit(self.post_step, uid, task)] = f"{uid}#{task}"
                    if not inflight:
                        break
                    done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                    for fut in done:
                        inflight.pop(fut)
                        fut.result()
            except BaseException:
                for fut in inflight:
                    fut.cancel()
                raise
        return self.summary(steps, len(interrupted), time.monotonic() - start)

    def summary(self, steps: int = 0, interrupted: int = 0, elapsed: float = 0.0) -> RunSummary:
        views = self.views()
        counts = Counter(v.status.value for v in views.values())
        by_layer: dict[int, Counter] = {}
        for v in views.values():
            by_layer.setdefault(v.unit.layer, Counter())[v.status.value] += 1
        blocked = [(uid, v.reason or "") for uid, v in views.items() if v.status is UnitStatus.BLOCKED]
        return RunSummary(
            units=len(views), layers=1 + max((v.unit.layer for v in views.values()), default=-1),
            counts=dict(counts), blocked=blocked, steps=steps, interrupted=interrupted,
            elapsed_s=round(elapsed, 2), by_layer={k: dict(c) for k, c in sorted(by_layer.items())},
        )
