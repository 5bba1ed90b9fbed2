"""The run loop: dispatch stage attempts of ready units until nothing more can happen.

One step = one stage attempt of one unit: the gateway opens it (refusing anything illegal),
the executor (``fyan.executor``: threads here, or Ray tasks on a cluster) runs the stage's agent
or the gate build on the attempt's inputs and brings its files back, the gateway runs the
deterministic check and records the outcome. Up to ``[scheduler] parallelism`` attempts run at
once (and, on a cluster, no more than it has slots and ``lean`` capacity for), each waited for
in a worker thread of this process (the gateway serialises the writes); the decisions — which
unit goes next, taking in results, acting on events from watchers — are made in the one thread
that calls ``run``. Ready units are taken highest remaining critical path first
(``scheduler.py``). The loop keeps an in-memory ``Ledger`` of the state, loaded from the store
once and updated from what the gateway returns; the store stays the truth.

``run`` stops at quiescence (nothing running, nothing ready) unless ``until_idle`` is False
(the daemon), and whenever ``stop`` is called (SIGTERM, Ctrl-C): then no new attempt is
opened, the write in progress is allowed to finish, and the attempts still running are
recorded as *interrupted* (``Gateway.interrupt``) — their worker threads are abandoned and
the next run re-runs them. A process killed outright (SIGKILL) leaves its attempts
``running``; the next start's ``Gateway.recover`` marks them interrupted. Nothing that
completed is run again.

Post-completion tasks (the Curator ``curate`` and the Auditor ``review``, ``[agents]
post_completion``) are extra jobs for complete units, dispatched when a slot is free, each at
most once per run for each completion (a failed one is tried again by the next run). They go
through ``Gateway.begin_post``/``finish_post`` and are recorded apart from the stage runs, so
their outcome never changes a unit's status: a unit is complete when its gate passed, whatever
the Curator or Auditor do afterwards.

After a failed attempt the optional ``critic`` (``fyan.orchestrator.stagnation``) may ask for a
review of the unit; the review runs as a job of that unit (no stage of the unit starts while it
runs) and its advice enters through the guidance channel.

**Provider outages are waited out, not counted**. An attempt whose model provider is
unavailable (``ProviderUnavailable``: connection refused, timeout, 429, 5xx, overloaded, or the
provider's circuit breaker open) is recorded by the gateway as *interrupted by the provider*:
no attempt budget is used and no critic is called. Until the provider's breaker is due
(``fyan.agents.providers.breaker``) no unit whose next stage needs that provider is
dispatched; then one goes out as the probe, and the others follow once it answers. A run that
has nothing else to do waits for the provider instead of ending (Ctrl-C or SIGTERM stop it as
usual). Every open, re-open and close of a breaker is recorded as a ``provider_unavailable`` /
``provider_available`` event (what ``fyan status`` and the dashboard show).

**Stop paths end what they started**: after the attempts in flight are recorded as interrupted,
every agent process group still running is ended (``fyan.agents.process_groups``), and the loop
waits a moment for the abandoned workers to clean up (a command agent's scratch folder).
"""

from __future__ import annotations

import functools
import gc
import queue
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fyan import logs
from fyan.agents import process_groups
from fyan.agents.providers.base import Provider
from fyan.agents.providers.breaker import Breakers, Outage
from fyan.agents.providers.factory import ProviderFactory
from fyan.errors import ExitCode, FyanError, ProviderUnavailable, TransitionError
from fyan.executor import AttemptLost, Executor, make_runtime
from fyan.executor.bookkeeping import BOOKKEEPING
from fyan.sandbox import admission
from fyan.orchestrator.ledger import Ledger
from fyan.orchestrator.live import LiveState
from fyan.orchestrator.scheduler import Policy, Scheduler
from fyan.project import Project
from fyan.state.faults import fault_point
from fyan.stages import post_spec, post_task_names, resolve, stage_agents, stage_checks
from fyan.state.gateway import Check, Gateway
from fyan.state.models import FailureKind, PostRun, RunStatus, Stage, StageRun, UnitStatus, UnitView

#: an agent: (``fyan.agents.session.StageSession``, ``fyan.agents.stages.UnitContext``) -> None
StageAgentFn = Callable[[Any, Any], None]

#: a unit the gateway refused to open this many times in a run is left alone for the run
MAX_REFUSALS = 3


_frozen = False


def _freeze_once() -> None:
    """``gc.freeze()`` once per process, after the imports and the ledger load: the modules,
    the configuration and the ledger live as long as the run, and moving them out of the
    collector's generations spares every full collection walking them again."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


@dataclass
class StepEvent:
    """Reported to the progress display after every step."""

    unit: str
    stage: Stage | str
    status: str  # started | succeeded | failed | re-plan | refused | interrupted | critic
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
    stopped: str | None = None
    held: list[tuple[str, str]] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.counts.get("complete", 0) == self.units else ExitCode.INCOMPLETE


class JobKind(StrEnum):
    """What a job of the run loop runs: a stage attempt, a critic review, a post-completion task."""

    STAGE = "stage"
    CRITIC = "critic"
    POST = "post"


@dataclass
class _Job:
    unit: str
    kind: JobKind
    run: StageRun | None = None
    task: str | None = None  # the post-completion task of a ``post`` job
    started: float = field(default_factory=time.time)  # POSIX seconds
    what: str = ""  # the stage or task, for the progress display


# -- the loop's inbox: what other threads tell the loop thread ---------------------------------

@dataclass(frozen=True)
class _Wake:
    """Look at the state again (``stop`` was asked for)."""


@dataclass(frozen=True)
class _OutageChanged:
    """A provider's circuit breaker opened, re-opened (``outage``) or closed (None)."""

    name: str
    outage: Outage | None


@dataclass(frozen=True)
class _Call:
    """Run ``fn`` in the loop's thread (``call_soon``)."""

    fn: Callable[[], None]


@dataclass(frozen=True)
class _Begun:
    """The gateway opened ``run`` for ``job``, ``since_start`` seconds after the run began."""

    job: _Job
    run: StageRun
    since_start: float


@dataclass(frozen=True)
class _Done:
    """``job`` returned ``result`` or raised ``error``."""

    job: _Job
    result: Any
    error: BaseException | None


_Message = _Wake | _OutageChanged | _Call | _Begun | _Done


class Engine:
    def __init__(
        self,
        project: Project,
        gateway: Gateway,
        *,
        providers: Callable[[str], Provider] | None = None,
        checks: Mapping[str, Check] | None = None,
        agents: Mapping[str, StageAgentFn] | None = None,
        only: set[str] | None = None,
        parallelism: int | None = None,
        policy: Policy = "critical-path",
        on_event: Callable[[StepEvent, dict[str, UnitView]], None] | None = None,
        critic: Any | None = None,
        held: Callable[[str], str | None] | None = None,
        breakers: Breakers | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.project = project
        self.gateway = gateway
        if not gateway.checks:
            if checks:  # a dict given by a caller stays the same object
                gateway.checks = checks if isinstance(checks, dict) else dict(checks)
            else:  # resolved here: the gates' modules (Lean, networkx) are not needed before
                gateway.checks = dict(stage_checks())  # a run's first dispatch
        injected = providers
        if providers is None:
            factory = ProviderFactory(project, breakers)
            providers, breakers = factory.for_stage, factory.breakers
        self.providers = providers
        #: the circuit breakers whose changes are recorded as events (providers passed in by a
        #: caller may carry their own; their outages still hold back dispatch)
        self.breakers = breakers or Breakers()
        self.breakers.subscribe(lambda name, outage: self._inbox.put(_OutageChanged(name, outage)))
        self._stage_breakers: dict[str, Any] = {}
        self._probes: dict[str, str] = {}  # breaker name -> unit whose job is the probe
        self._outage_hold_s: float | None = None  # shortest wait of a unit held by an outage
        self._waiting = 0
        if agents is None:  # resolved here: the stage agents' modules are not needed before the first
            agents = stage_agents()  # dispatch when doubles are given
        self.agents = agents
        self.parallelism = parallelism or project.config.scheduler.parallelism
        self.attempts = project.config.scheduler.attempts_per_stage
        self.policy = policy
        self.on_event = on_event
        self.critic = critic
        self.held = held
        self.log = logs.configure(project.paths.logs)
        self._only_names = set(only) if only else None
        self.post_enabled = project.config.agents.post_completion
        self._post_done: set[tuple[str, str, int]] = set()  # loaded at ``run`` from the store
        self._post_tried: set[tuple[str, str, int | None]] = set()
        self.only: set[str] | None = None
        self.ledger: Ledger | None = None
        self._inbox: queue.Queue = queue.Queue()
        self._stop_reason: str | None = None
        self._jobs: dict[str, _Job] = {}
        self._refused: dict[str, int] = {}
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._stopped_jobs: list[_Job] = []
        #: seconds from ``run`` being called to the first attempt opened (resume benchmark)
        self.first_dispatch_s: float | None = None
        # attempts use these providers where they run: on the local backend the head's own (their
        # circuit breakers shared with dispatch); on Ray, doubles passed in, else built on the node
        if project.config.executor.backend == "local":  # whatever ``self.providers`` is at the time
            injected = self._current_provider
        elif isinstance(getattr(injected, "__self__", None), ProviderFactory):
            injected = None  # Fyan's own providers (as the daemon passes them): built on each node
        self._runtime = make_runtime(agents, injected)
        self._executor = executor

    def _current_provider(self, stage: str) -> Provider:
        return self.providers(stage)

    @property
    def executor(self) -> Executor:
        """Where attempts run (``[executor]``; created on first use)."""
        if self._executor is None:
            self._executor = Executor.for_project(self.project, self.gateway, self._runtime, self.log)
        return self._executor

    # -- control from other threads --------------------------------------------------------
    def stop(self, reason: str = "stopped") -> None:
        """Ask the loop to stop (safe from signal handlers and other threads)."""
        if self._stop_reason is None:
            self._stop_reason = reason
        self._inbox.put(_Wake())

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the loop's thread (watchers hand their changes in this way)."""
        self._inbox.put(_Call(fn))

    # -- helpers ---------------------------------------------------------------------------
    def views(self) -> dict[str, UnitView]:
        if self.ledger is not None:
            return self.ledger.views
        return self.gateway.store.views(self.attempts)

    def _emit(self, event: StepEvent) -> None:
        if self.on_event is not None:
            try:
                self.on_event(event, self.views())
            except Exception as e:  # a display problem must never stop the run
                self.log.warning("progress_display_failed", error=repr(e))

    def _resolve_only(self, ledger: Ledger) -> set[str] | None:
        if self._only_names is None:
            return None
        unknown = sorted(self._only_names - set(ledger.units))
        if unknown:
            raise FyanError(f"unknown unit(s): {', '.join(unknown)}", hint="see `fyan status` for unit ids")
        return ledger.closure(self._only_names)

    def refresh_unit(self, unit: str) -> None:
        """Re-read one unit's runs from the store (after a write the loop did not make)."""
        assert self.ledger is not None
        self.ledger.replace_runs(unit, self.gateway.store.runs(unit))

    # -- the work of one attempt (worker thread) -------------------------------------------
    def _attempt(self, run: StageRun) -> StageRun:
        """Run the opened ``run`` through the executor and return it closed (raises
        ``AttemptLost`` when its node was lost: it is recorded interrupted). A provider outage
        met where the attempt ran is waited out, never counted (module docstring); on a remote
        node the head's circuit breaker of that provider learns of it (and of its recovery)."""
        remote = self.executor.backend.name != "local"
        try:
            done = self.executor.attempt(run)
        except ProviderUnavailable as e:  # an outage: waited out, never counted (module docstring)
            fault_point("attempt:before_finish")
            if remote:
                self.breakers.get(e.provider).failed(e.error)
            return self._log(self._interrupted_by_provider(run, e))
        if remote and done.status is RunStatus.SUCCEEDED:  # its provider answered there
            breaker = self._breaker_for(run.stage.value)
            if breaker is not None and breaker.outage() is not None:
                breaker.succeeded()
        return self._log(done)

    def _interrupted_by_provider(self, run: StageRun, e: ProviderUnavailable) -> StageRun:
        """Record ``run`` as interrupted by its provider's outage (worker thread)."""
        self.log.info("provider_unavailable_attempt", unit=run.unit, stage=run.stage.value, provider=e.provider,
                      error=e.error)
        reason = f"interrupted: {e.provider} unavailable ({e.error}); not counted, runs again when it answers"
        return self.gateway.interrupt_by_provider(run, e.provider, reason, {
            "since": e.since, "next_try": e.retry_at, "error": e.error})

    # -- provider outages: which work waits (loop thread) ----------------------------------
    def _breaker_for(self, stage: str) -> Any:
        """The circuit breaker of the provider ``stage`` uses (None: no model, or none can fail)."""
        if stage not in self._stage_breakers:
            breaker = None
            if stage in post_task_names() or stage in self.agents:
                try:
                    breaker = getattr(self.providers(stage), "breaker", None)
                except Exception:  # a provider that cannot be built fails its attempt, as before
                    breaker = None
            self._stage_breakers[stage] = breaker
        return self._stage_breakers[stage]

    def _provider_hold(self, stage: str) -> float:
        """Seconds until work of ``stage`` may be dispatched (0: now). While the breaker of its
        provider is open only one job — the probe — goes out when it is due."""
        breaker = self._breaker_for(stage)
        if breaker is None or breaker.outage() is None:
            return 0.0
        wait = breaker.wait_s()
        if wait > 0:
            return wait
        return 1.0 if breaker.name in self._probes else 0.0

    def _note_probe(self, stage: str, unit: str) -> None:
        breaker = self._breaker_for(stage)
        if breaker is not None and breaker.outage() is not None:
            self._probes[breaker.name] = unit

    def _outage_changed(self, name: str, outage: Outage | None) -> None:
        """A breaker opened, re-opened or closed (loop thread): record it, tell the display."""
        if outage is None:
            self.gateway.event("provider_available", None, {"provider": name})
            self._probes.pop(name, None)
            self._emit(StepEvent("-", "provider", "available", f"{name} answers again"))
        else:
            self.gateway.event("provider_unavailable", None, outage.as_dict())
            self._probes.pop(name, None)
            self._emit(StepEvent("-", "provider", "unavailable", outage.describe() + f" ({outage.error})"))

    def live(self) -> LiveState:
        """A snapshot of what the run is doing (any thread; see ``LiveState``)."""
        jobs = list(self._jobs.values())
        running = [(j.unit, j.run.stage.value if j.run is not None else (j.what or j.kind), j.started) for j in jobs]
        from fyan.orchestrator.status import display_counts  # failed apart from waiting on a failure

        counts = display_counts(self.ledger.views) if self.ledger is not None else {}
        return LiveState(running=running, counts=counts, outages=self.breakers.outages(), waiting=self._waiting,
                         stopping=self._stop_reason, lean=admission.current().snapshot())

    def _post(self, job: _Job) -> PostRun | None:
        """One post-completion task of a complete unit (worker thread); never raises for the
        task's own failures, which are recorded as a failed post run."""
        task = job.task
        assert task is not None
        try:
            run = self.gateway.begin_post(job.unit, task)
        except TransitionError as e:
            self.log.info("post_refused", unit=job.unit, task=task, reason=str(e))
            return None
        error: str | None = None
        try:
            store = self.gateway.store
            unit_record = store.unit(job.unit)
            assert unit_record is not None
            from fyan.agents.session import StageSession
            from fyan.agents.stages import UnitContext

            session = StageSession(
                gateway=self.gateway, run=None, provider=self.providers(task),
                agent=self.project.config.agents.for_stage(task), form_repairs=self.project.config.agents.form_repairs,
                attempt_dir=self.project.paths.root / run.attempt_dir, stage=task, unit=job.unit,
            )
            resolve(post_spec(task).agent)(session, UnitContext(self.project, store, unit_record, run))  # type: ignore[arg-type]
        except ProviderUnavailable as e:  # runs again once the provider answers
            return self.gateway.interrupt_post(run, f"interrupted: {e.provider} unavailable ({e.error})")
        except FyanError as e:
            error = e.message
        except Exception as e:  # a bug in a post task never stops the run loop
            self.log.error("post_crashed", unit=job.unit, task=task, error=repr(e), tb=traceback.format_exc())
            error = f"internal error in {task}: {type(e).__name__}: {e}"
        if error is None:
            done = self.gateway.finish_post(run, resolve(post_spec(task).check))
        else:
            done = self.gateway.finish_post(run, None, agent_error=error)
        self.log.info("post_finished", unit=job.unit, task=task, status=done.status.value, reason=done.reason)
        return done

    def _post_due(self) -> list[tuple[str, str]]:
        """(unit, task) of the post-completion tasks due now (module docstring)."""
        assert self.ledger is not None
        if not self.post_enabled:
            return []
        due = []
        for uid, v in self.ledger.views.items():
            if v.status is not UnitStatus.COMPLETE or uid in self._jobs or (self.only is not None and uid not in self.only):
                continue
            gate = self.ledger.last_gate_success(uid)
            for task in post_task_names():
                item = (uid, task, gate)
                if gate is not None and item not in self._post_done and item not in self._post_tried:
                    if self._provider_hold(task) > 0:
                        break  # its provider is unavailable: it waits
                    due.append((uid, task))
                    break  # one job per unit at a time: the next task goes when a slot frees
        return due

    def step(self, unit: str, stage: Stage) -> StageRun | None:
        """Run one attempt of ``stage`` for ``unit`` synchronously, outside the loop (tests,
        scripts): the gateway opens it (None when it refuses, with the reason logged), the agent
        runs, the gateway closes it."""
        try:
            run = self.gateway.begin(unit, stage, self.attempts)
        except TransitionError as e:
            self.log.warning("transition_refused", unit=unit, stage=stage.value, reason=str(e))
            return None
        done = self._attempt(run)
        if self.ledger is not None:
            self.ledger.record(done)
        return done

    def _log(self, done: StageRun) -> StageRun:
        self.log.info("stage_finished", unit=done.unit, stage=done.stage.value, status=done.status.value,
                      reason=done.reason)
        return done

    def _begin_and_attempt(self, job: _Job, stage: Stage, t0: float) -> StageRun:
        """Open the attempt through the gateway, tell the loop, run it (worker thread); the
        executor slot ``_dispatchable`` reserved is given back at the end."""
        try:
            with BOOKKEEPING:
                run = self.gateway.begin(job.unit, stage, self.attempts, create_dir=False)
            job.run = run
            self._inbox.put(_Begun(job, run, time.monotonic() - t0))
            return self._attempt(run)
        finally:
            self.executor.release(stage)

    def _worker(self, job: _Job, fn: Callable[[], Any]) -> None:
        try:
            result, error = fn(), None
        except BaseException as e:  # reported to the loop, which decides
            result, error = None, e
        self._inbox.put(_Done(job, result, error))

    def _pool_loop(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            self._worker(*item)

    def _start(self, job: _Job, fn: Callable[[], Any]) -> None:
        # daemon threads: a stopping process does not wait for a model call to return. The
        # pool grows to the most jobs ever in flight (parallelism, plus critic reviews).
        self._jobs[job.unit] = job
        busy = len(self._jobs)
        while len(self._threads) < busy:
            t = threading.Thread(target=self._pool_loop, daemon=True, name=f"fyan-worker-{len(self._threads)}")
            self._threads.append(t)
            t.start()
        self._work.put((job, fn))

    # -- the loop --------------------------------------------------------------------------
    def _dispatchable(self, uid: str) -> bool | None:
        """May ready ``uid`` start now (``Scheduler.pick``'s verdicts)?"""
        if uid in self._jobs or (self.only is not None and uid not in self.only) \
                or self._refused.get(uid, 0) >= MAX_REFUSALS:
            return None
        if self.held is not None and self.held(uid) is not None:
            return None
        stage = self.ledger.views[uid].next_stage if self.ledger is not None else None
        if stage is None:
            return None
        hold = self._provider_hold(stage.value)
        if hold > 0:  # its provider is unavailable: the unit waits (stays queued), nothing is counted
            self._waiting += 1
            self._outage_hold_s = hold if self._outage_hold_s is None else min(hold, self._outage_hold_s)
            return False
        return self.executor.reserve(stage)

    def _dispatch(self, scheduler: Scheduler, t0: float) -> int:
        assert self.ledger is not None
        free = self.parallelism - len(self._jobs)
        if free <= 0 or self._stop_reason is not None:
            return 0
        started = 0
        self._outage_hold_s, self._waiting = None, 0
        for uid in scheduler.pick(free, self._dispatchable):
            stage = self.ledger.views[uid].next_stage
            assert stage is not None
            self._note_probe(stage.value, uid)
            job = _Job(uid, JobKind.STAGE, what=stage.value)
            self._start(job, functools.partial(self._begin_and_attempt, job, stage, t0))
            started += 1
        if started < free:  # slots no stage needs: post-completion tasks of complete units
            for uid, task in self._post_due()[: free - started]:
                self._post_tried.add((uid, task, self.ledger.last_gate_success(uid)))
                self._note_probe(task, uid)
                job = _Job(uid, JobKind.POST, task=task, what=task)
                self._start(job, functools.partial(self._post, job))
        return started

    def _take(self, msg: _Message) -> None:
        assert self.ledger is not None
        if isinstance(msg, _OutageChanged):
            self._outage_changed(msg.name, msg.outage)
            return
        if isinstance(msg, _Call):
            try:
                msg.fn()
            except Exception as e:
                self.log.error("loop_call_failed", error=repr(e), tb=traceback.format_exc())
            return
        if isinstance(msg, _Begun):
            if self.first_dispatch_s is None:
                self.first_dispatch_s = msg.since_start
            if msg.job.unit in self._jobs:  # not already finished and taken in
                self.ledger.record(msg.run)
            self._emit(StepEvent(msg.run.unit, msg.run.stage, "started"))
            return
        if not isinstance(msg, _Done):
            return  # _Wake: the loop looks at the state again
        job, result, error = msg.job, msg.result, msg.error
        self._jobs.pop(job.unit, None)
        for name in [n for n, u in self._probes.items() if u == job.unit]:
            self._probes.pop(name)  # the probe is back; the breaker says what it found
        if job.kind is JobKind.POST:
            if error is not None:
                self.log.error("post_crashed", unit=job.unit, task=job.task, error=repr(error))
            elif result is not None and result.status is RunStatus.SUCCEEDED:
                self._post_done.add((job.unit, result.task, result.gate_run_id))
            elif result is not None and result.status is RunStatus.INTERRUPTED:
                self._post_tried.discard((job.unit, result.task, result.gate_run_id))  # again, once it answers
            return
        if job.kind is JobKind.CRITIC:
            if error is not None:
                self.log.error("critic_crashed", unit=job.unit, error=repr(error))
            self._emit(StepEvent(job.unit, "critic", "critic", str(result) if result else None))
            self.refresh_unit(job.unit)  # the review may have recorded guidance (budget reset)
            return
        run = job.run
        if run is None:  # the gateway refused to open it: the store disagrees with the ledger
            self.log.warning("transition_refused", unit=job.unit, reason=str(error))
            self._refused[job.unit] = self._refused.get(job.unit, 0) + 1  # never a busy loop
            self.refresh_unit(job.unit)
            self._emit(StepEvent(job.unit, self.ledger.views[job.unit].next_stage or "-", "refused", str(error)))
            return
        if error is not None or result is None:
            if not isinstance(error, (TransitionError, AttemptLost)):
                self.log.error("step_crashed", unit=job.unit, error=repr(error))
            self.refresh_unit(job.unit)
            self._emit(StepEvent(job.unit, run.stage, "interrupted", str(error) if error else None))
            return
        done: StageRun = result
        self.ledger.record(done)
        shown = "re-plan" if done.failure_kind is FailureKind.REPLAN and done.rewind_to is not None else done.status.value
        self._emit(StepEvent(done.unit, done.stage, shown, done.reason))
        if done.status.value == "failed" and self.critic is not None and self._stop_reason is None:
            review = self.critic.review_for(self.ledger, done)
            if review is not None:
                job = _Job(done.unit, JobKind.CRITIC)
                self._start(job, review)

    def run(self, *, until_idle: bool = True, idle_wait_s: float = 0.5, recover: bool = True) -> RunSummary:
        """Run (module docstring) and summarise. ``until_idle`` False keeps waiting for work
        (watchers, ``call_soon``) until ``stop``."""
        t0 = time.monotonic()
        interrupted = self.gateway.recover(sync_package=False) if recover else []
        self.ledger = Ledger.load(self.gateway.store, self.attempts)
        _freeze_once()
        self.only = self._resolve_only(self.ledger)
        # a restricted run starts a session for its units only (``lifecycle``): the others keep
        # their state, e.g. an environment block of the last full run
        self.gateway.start_session(sorted(self.only) if self.only is not None else None)
        self.ledger.new_session(self.gateway.store)
        if recover:  # the Lean package holds exactly the complete units before any build
            self.gateway.sync_lean_package(
                [v.unit for v in self.ledger.views.values() if v.status is UnitStatus.COMPLETE])
        self.only = self._resolve_only(self.ledger)
        # Lean processes of this process wait for memory ([lean] memory_budget_mb), charged the
        # peaks recorded so far, and new peaks are recorded through the gateway
        admission.configure(self.project.config.lean, peaks=self.gateway.store.lean_peaks(),
                            recorder=self.gateway.record_lean_peak)
        self.executor.start()  # the ray backend joins its cluster here (a clear error if it cannot)
        if self.post_enabled:
            self._post_done = {(p.unit, p.task, p.gate_run_id) for p in self.gateway.store.post_runs()
                               if p.status is RunStatus.SUCCEEDED}
        scheduler = Scheduler(self.ledger, self.policy)
        steps = 0
        while True:
            try:
                while True:
                    self._take(self._inbox.get_nowait())
            except queue.Empty:
                pass
            if self._stop_reason is not None:
                break
            steps += self._dispatch(scheduler, t0)
            hold = self._outage_hold_s  # ready units wait for an unavailable provider
            if not self._jobs and until_idle and self._inbox.empty() and hold is None:
                break
            timeout = 1.0 if self._jobs and until_idle else idle_wait_s
            if hold is not None:
                timeout = max(0.05, hold) if not self._jobs else min(timeout, max(0.05, hold))
            try:
                msg = self._inbox.get(timeout=timeout)
            except queue.Empty:
                continue
            self._take(msg)
        if self._stop_reason is not None:
            self._interrupt_inflight()
            self._end_agents()
        if self._executor is not None:
            self._executor.close()
        self.gateway.tidy()
        for _ in self._threads:
            self._work.put(None)  # idle workers exit; busy ones (abandoned after a stop) are daemons
        self._threads = []
        return self.summary(steps, len(interrupted), time.monotonic() - t0)

    def _interrupt_inflight(self) -> None:
        runs = [j.run.id for j in self._jobs.values() if j.run is not None]
        with self.gateway.stop_writes():  # the writes in progress finish first
            n = self.gateway.interrupt(runs, f"interrupted: {self._stop_reason}")
        self.log.info("run_stopped", reason=self._stop_reason, interrupted=n)
        if self.ledger is not None:
            for j in list(self._jobs.values()):
                self.refresh_unit(j.unit)
                self._emit(StepEvent(j.unit, j.run.stage if j.run else "critic", "interrupted", self._stop_reason))
        self._stopped_jobs = list(self._jobs.values())
        self._jobs.clear()

    def _end_agents(self, wait_s: float = 5.0) -> None:
        """Stop path: end every agent process group still running, then give the abandoned
        workers up to ``wait_s`` seconds to return (their late finish is refused; a command
        agent removes its scratch folder)."""
        ended = process_groups.end_all()
        if ended:
            self.log.info("agent_groups_ended", count=len(ended))
        busy = {id(j) for j in self._stopped_jobs}
        deadline = time.monotonic() + wait_s
        while busy and time.monotonic() < deadline:
            try:
                msg = self._inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if isinstance(msg, _Done):
                busy.discard(id(msg.job))
        self._stopped_jobs = []

    def summary(self, steps: int = 0, interrupted: int = 0, elapsed: float = 0.0) -> RunSummary:
        views = self.views()
        counts: dict[str, int] = {}
        by_layer: dict[int, dict[str, int]] = {}
        for v in views.values():
            counts[v.status.value] = counts.get(v.status.value, 0) + 1
            layer = by_layer.setdefault(v.unit.layer, {})
            layer[v.status.value] = layer.get(v.status.value, 0) + 1
        blocked = [(uid, v.reason or "") for uid, v in views.items() if v.status is UnitStatus.BLOCKED]
        held = []
        if self.held is not None:
            held = [(uid, r) for uid in views if (r := self.held(uid)) is not None]
        return RunSummary(
            units=len(views), layers=1 + max((v.unit.layer for v in views.values()), default=-1),
            counts=counts, blocked=blocked, steps=steps, interrupted=interrupted,
            elapsed_s=round(elapsed, 2), by_layer=dict(sorted(by_layer.items())), stopped=self._stop_reason,
            held=held,
        )
