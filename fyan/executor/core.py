"""The executor: between the run loop (``fyan.orchestrator.engine``) and the attempts.

``Executor.attempt(run)`` takes a stage run the gateway opened and returns it closed: it builds
the task's inputs (``InputBuilder``), hands the encoded payload to a backend, and takes the
result back in (``collect``) — the head, through the gateway, is the only writer of state
(docs/design.md, trust boundaries). Taking a result in is the same whichever backend ran it:

1. the result must be one the head expects (``Gateway.check_fence``: this session's token, this
   run, still running) and computed on the inputs the head handed out (``inputs_digest``, echoed
   by the node; they are still the unit's current ones, since the gateway allows no other
   transition of a unit while an attempt of it runs); otherwise it is refused
   (``TransitionError``) and the run, if still running, is recorded *interrupted* and
   dispatched again;
2. the attempt folder's files are written into ``.fyan/attempts/…`` of the project (paths that
   would leave the folder are refused), the model calls are recorded, appended cassette lines
   go into the project's cassette;
3. ``Gateway.finish`` runs the stage's deterministic check on those files, as for any attempt
   (the gate's verdict arrives as evidence, see ``fyan.gates.stages.check_gate``).

Backends: ``local`` runs ``fyan.executor.worker.execute`` in the calling thread (one of the
engine's worker threads), on this machine's mirror of the project; ``ray``
(``fyan.executor.ray_backend``) runs the same function as a Ray task placed by resources. A task
whose node is lost (``TaskLost``) is recorded interrupted — not a failure — and dispatched again;
the next submission of the same unit waits 1, 2, 4 … 30 s when it keeps losing its node. A task
that cannot run at all (``TaskRefused``: no node offers ``lean``, Fyan missing on the worker)
fails with an environment reason.

Placement (``[executor]``): stages with Lean builds (plan: the cited-names lookup; prove: the
Formalizer's builds; gate) declare the custom resource ``lean`` and ``[lean] memory_limit_mb``;
agent-only stages (reason, audit) declare ``[executor] agent_memory_mb`` and run on any node.
``reserve`` keeps the tasks in flight within the cluster's slots and ``lean`` capacity, so Ray
never queues work out of the critical-path order the engine dispatched it in. (Where to add
admitting Lean processes against a memory budget belongs there, with each task's declared
memory at hand in ``_resources``.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from fyan.errors import FyanError, ProviderUnavailable, TransitionError
from fyan.executor.inputs import InputBuilder, safe_join
from fyan.executor.mirror import Site
from fyan.executor.payload import PayloadError, TaskResult, decode_result, encode_spec
from fyan.executor.bookkeeping import BOOKKEEPING
from fyan.executor.worker import Runtime, execute
from fyan.project import Project
from fyan.stages import needs_lean, stage_spec
from fyan.state.faults import fault_point
from fyan.state.gateway import Gateway
from fyan.state.models import FailureKind, Stage, StageRun

#: the custom Ray resource of nodes with the project's toolchain and built dependencies
LEAN_RESOURCE = "lean"
MAX_BACKOFF_S = 30.0


class TaskLost(Exception):
    """The node running the task went away (died, removed, its worker crashed): the attempt is
    interrupted, not failed."""


class TaskRefused(Exception):
    """The task could not run anywhere (no node offers what it needs, the worker cannot load
    Fyan): an environment problem."""


class AttemptLost(FyanError):
    """Raised to the run loop after an attempt was recorded interrupted (its node was lost or
    its result refused); the unit is ready again."""


class Backend(Protocol):
    name: str

    def start(self) -> None: ...

    def put(self, key: str, data: bytes) -> None: ...

    def run(self, payload: bytes, *, lean: bool, cpus: float, memory_mb: int) -> bytes: ...

    def capacity(self) -> dict[str, int] | None: ...

    def close(self) -> None: ...


class LocalBackend:
    """Tasks run in the calling thread, on this machine's mirror of the project
    (``<project>/.fyan/executor/``), whose ``workspaces/`` and ``lean/.lake/packages`` are the
    project's own."""

    name = "local"

    def __init__(self, project: Project, runtime: Runtime | None) -> None:
        self.runtime = runtime
        self.site = Site(base=project.paths.state / "executor", workspaces=project.paths.workspaces,
                         lake_packages=project.paths.lean / ".lake" / "packages", name="local")
        self._blobs: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        pass

    def put(self, key: str, data: bytes) -> None:
        with self._lock:
            self._blobs[key] = data

    def fetch(self, keys: list[str]) -> dict[str, bytes]:
        with self._lock:
            return {k: self._blobs[k] for k in keys if k in self._blobs}

    def run(self, payload: bytes, *, lean: bool, cpus: float, memory_mb: int) -> bytes:
        return execute(payload, self.runtime, self.site, self.fetch)

    def capacity(self) -> dict[str, int] | None:
        return None

    def close(self) -> None:
        pass


class Executor:
    """Runs stage attempts through a backend (module docstring). Thread-safe."""

    def __init__(self, project: Project, gateway: Gateway, backend: Backend, log: Any = None) -> None:
        self.project = project
        self.gateway = gateway
        self.backend = backend
        self.log = log
        self.inputs = InputBuilder(project, gateway.store, gateway.project_id, backend.put)
        self._lock = threading.Lock()
        self._inflight = {"any": 0, LEAN_RESOURCE: 0}
        self._losses: dict[str, int] = {}
        self._cassette_lock = threading.Lock()
        self.started = False
        #: seconds spent per phase, summed over the attempts (``timings()``)
        self._times = {"inputs": 0.0, "transport": 0.0, "node": 0.0, "collect": 0.0, "attempts": 0}

    @classmethod
    def for_project(cls, project: Project, gateway: Gateway, runtime: Runtime | None = None,
                    log: Any = None) -> Executor:
        """The executor ``[executor] backend`` names. Raises ``ConfigError`` when the ``ray``
        backend is chosen and Ray is not installed."""
        cfg = project.config.executor
        if cfg.backend == "ray":
            import os

            from fyan.executor.ray_backend import RayBackend

            local_lean = 0
            if cfg.address == "local":  # a one-machine Ray: `lean` here when the pinned toolchain is
                from fyan.lean.toolchain import check_pin, discover

                disc = discover(project.config.lean, cwd=project.paths.lean)
                if disc.toolchain is not None and check_pin(disc.toolchain, project.paths.lean).ok:
                    local_lean = os.cpu_count() or 1
            return cls(project, gateway, RayBackend(cfg.address, runtime, project.config.lean.toolchain, cfg.task_cpus,
                                                    local_lean), log)
        return cls(project, gateway, LocalBackend(project, runtime), log)

    def start(self) -> None:
        if not self.started:
            self.backend.start()
            self.started = True

    def close(self) -> None:
        if self.started:
            self.backend.close()
            self.started = False

    # -- placement ---------------------------------------------------------------------------
    def reserve(self, stage: Stage) -> bool:
        """Take a slot for an attempt of ``stage`` if the cluster has one free now (always, on
        ``local``: ``[scheduler] parallelism`` bounds it). Pair with ``release``."""
        lean = needs_lean(stage)
        cap = self.backend.capacity()
        with self._lock:
            if cap is not None:
                if cap["slots"] > 0 and self._inflight["any"] >= cap["slots"]:
                    return False
                if lean and cap[LEAN_RESOURCE] > 0 and self._inflight[LEAN_RESOURCE] >= cap[LEAN_RESOURCE]:
                    return False
            self._inflight["any"] += 1
            if lean:
                self._inflight[LEAN_RESOURCE] += 1
        return True

    def release(self, stage: Stage) -> None:
        with self._lock:
            self._inflight["any"] -= 1
            if needs_lean(stage):
                self._inflight[LEAN_RESOURCE] -= 1

    def _resources(self, stage: Stage) -> dict[str, Any]:
        cfg = self.project.config
        lean = needs_lean(stage)
        return {"lean": lean, "cpus": cfg.executor.task_cpus,
                "memory_mb": cfg.lean.memory_limit_mb if lean else cfg.executor.agent_memory_mb}

    # -- one attempt -------------------------------------------------------------------------
    def attempt(self, run: StageRun) -> StageRun:
        """Run the opened ``run`` and return it closed (module docstring). Raises
        ``AttemptLost`` after recording it interrupted; ``ProviderUnavailable`` when its
        provider was down where it ran (the run is still open: the engine records it
        interrupted by the provider); ``TransitionError`` when the gateway refuses to close it
        (a stop in progress)."""
        self.start()
        kind: Literal["attempt", "gate"] = "gate" if stage_spec(run.stage).completes else "attempt"
        t0 = time.perf_counter()
        try:
            with BOOKKEEPING:
                spec = self.inputs.spec(run, kind, self.gateway.head_token or "")
                payload = encode_spec(spec)
        except (OSError, ValueError) as e:
            return self.gateway.finish(run, agent_error=f"the head cannot read the attempt's inputs: {e}",
                                       failure_kind=FailureKind.ENVIRONMENT)
        self._backoff(run.unit)
        t1 = time.perf_counter()
        try:
            data = self.backend.run(payload, **self._resources(run.stage))
        except TaskLost as e:
            with self._lock:
                self._losses[run.unit] = self._losses.get(run.unit, 0) + 1
            self._interrupt(run, f"interrupted: {e}")
            raise AttemptLost(f"{run.unit}: {run.stage.value} lost its node ({e}); dispatched again") from None
        except TaskRefused as e:
            return self.gateway.finish(run, agent_error=str(e), failure_kind=FailureKind.ENVIRONMENT)
        with self._lock:
            self._losses.pop(run.unit, None)
        t2 = time.perf_counter()
        try:
            result = decode_result(data)
        except PayloadError as e:
            return self.gateway.finish(run, agent_error=f"unreadable result from the worker: {e}",
                                       failure_kind=FailureKind.ENVIRONMENT)
        if not result.run_id and result.error_kind == "environment":
            # the node could not even read the task (another Fyan, a broken node): the answer to
            # the payload this call sent, for this run; it names no run to fence
            return self.gateway.finish(run, agent_error=result.error, failure_kind=FailureKind.ENVIRONMENT)
        done = self.collect(run, result, spec.inputs_digest)
        node = result.timings.get("task_s", 0.0)
        with self._lock:
            t = self._times
            t["inputs"] += t1 - t0
            t["transport"] += max(0.0, t2 - t1 - node)
            t["node"] += node
            t["collect"] += time.perf_counter() - t2
            t["attempts"] += 1
        return done

    def timings(self) -> dict[str, float]:
        """Mean seconds per attempt: ``inputs`` (the head builds the task), ``transport`` (to
        the node and back, beyond the node's own time: the backend's dispatch), ``node`` (the
        task on its node: inputs put in place, agent or gate, files collected), ``collect``
        (the head takes the result in: files, calls, check, publish); and ``attempts``."""
        with self._lock:
            n = max(1, int(self._times["attempts"]))
            return {**{k: v / n for k, v in self._times.items() if k != "attempts"},
                    "attempts": self._times["attempts"]}

    def _backoff(self, unit: str) -> None:
        with self._lock:
            lost = self._losses.get(unit, 0)
        if lost >= 2:
            time.sleep(min(MAX_BACKOFF_S, 2.0 ** (lost - 2)))

    def _interrupt(self, run: StageRun, reason: str) -> None:
        self.gateway.interrupt([run.id], reason)
        if self.log is not None:
            self.log.info("attempt_interrupted", unit=run.unit, stage=run.stage.value, run=run.id, reason=reason)

    def collect(self, run: StageRun, result: TaskResult, expected_digest: str | None = None) -> StageRun:
        """Take ``result`` in for ``run`` (module docstring, steps 1–3). Raises
        ``TransitionError`` when the result is refused (the run, if still running, is then
        recorded interrupted)."""
        with BOOKKEEPING:  # the bookkeeping up to the check (fyan.executor.bookkeeping)
            try:
                self.gateway.check_fence(run, result.head, result.run_id)
                if result.inputs_digest and expected_digest and result.inputs_digest != expected_digest:
                    raise TransitionError(f"result of run {run.id} of {run.unit} was computed on other inputs "
                                          "than the ones handed out: refused")
            except TransitionError as e:
                self._interrupt(run, f"interrupted: {e.message}")
                raise
            fault_point("attempt:before_finish")
            attempt_dir = self.project.paths.root / run.attempt_dir
            attempt_dir.mkdir(parents=True, exist_ok=True)
            unreadable: str | None = None
            try:
                for rel, content in result.files.items():
                    path = safe_join(attempt_dir, rel)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(content)
            except (ValueError, OSError) as e:
                unreadable = f"the worker's files cannot be taken in: {e}"
            if unreadable is None:
                self.gateway.record_model_calls(run, [c.model_dump() for c in result.calls])
                if result.cassette_append:
                    self._append_cassette(result.cassette_append)
        if unreadable is not None:
            return self.gateway.finish(run, agent_error=unreadable, failure_kind=FailureKind.ENVIRONMENT,
                                       fence=result.head, facts=self._facts(run))
        outage = result.evidence.get("provider_unavailable")
        if outage is not None:  # the engine records the attempt interrupted by the provider
            raise ProviderUnavailable(str(outage["provider"]), str(outage["error"]), since=float(outage["since"]),
                                      retry_at=float(outage["retry_at"]))
        if self.log is not None:
            self.log.info("attempt_result", unit=run.unit, stage=run.stage.value, run=run.id, node=result.node,
                          error=result.error, **{k: round(v, 4) for k, v in result.timings.items()})
        if self.log is not None and "traceback" in result.evidence:
            self.log.error("agent_crashed", unit=run.unit, stage=run.stage.value, node=result.node,
                           error=result.error, tb=result.evidence["traceback"])
        if result.error is not None:
            kind = FailureKind.ENVIRONMENT if result.error_kind == "environment" else FailureKind.AGENT
            return self.gateway.finish(run, agent_error=result.error, failure_kind=kind, fence=result.head,
                                       facts=self._facts(run))
        return self.gateway.finish(run, exit_status=result.exit_status, fence=result.head, facts=self._facts(run),
                                   evidence={k: v for k, v in result.evidence.items()
                                             if k in ("gate_report", "gate_runs")})

    def _facts(self, run: StageRun) -> dict[str, Any]:
        """Facts Fyan's own code counts in the attempt folder, recorded with the attempt's event
        for ``fyan status`` (never part of a decision): the counterexample searches it ran
        (``fyan.refute.record.tally``: executed, refuting, worthless)."""
        from fyan.refute.record import tally

        searches = tally(self.project.paths.root / run.attempt_dir)
        return {} if searches is None else {"refutations": searches}

    def _append_cassette(self, data: bytes) -> None:
        path: Path = self.project.paths.root / self.project.config.agents.replay_file
        with self._cassette_lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab") as fh:
                fh.write(data)


def make_runtime(agents: Mapping | None, providers: Callable | None) -> Runtime | None:
    """The runtime for an engine given test or benchmark doubles (None: Fyan's own)."""
    if agents is None and providers is None:
        return None
    return Runtime(agents=dict(agents) if agents is not None else None, providers=providers)  # picklable for Ray
