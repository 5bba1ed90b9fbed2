"""Where a task runs: decode its payload, put its inputs in place, run it, return its result.

``execute(payload, runtime, site, fetch)`` is the one entry point, called by both backends —
in a thread of the head (``local``) or in a Ray worker process (``ray``) — so the Ray path is
the local path with another transport. It never raises: every outcome is a ``TaskResult``.

* A **stage attempt** runs the stage's agent (``fyan.agents.stages``, or the runtime's double)
  in the node's mirror of the project, through an ordinary ``Project`` and read-only ``Store``;
  its model calls are recorded here and returned for the head to persist; a recording provider
  appends to a file of the attempt, returned as ``cassette_append``.
* A **gate build** runs the completion gate (``fyan.gates.completion.run_gate``) with this
  node's toolchain; the trust rules are the gate's own (sandboxed builds, a workspace the gate
  prepares from the recorded, hash-checked artifacts, the nonce-tagged probe). Its report is
  returned as evidence, apart from the attempt's files.

Failures are classified for the head: a task whose inputs cannot be read or put in
place on this node (a foreign payload, a full disk, a missing blob) fails with
``error_kind = "environment"`` — the unit waits for a node that can run it, it is not a
proof failure; an agent's own failures are ``agent`` (or ``environment`` when the error says
another attempt cannot help, as a replay miss), exactly as in a local attempt.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fyan.sandbox import safefile
from fyan.executor.bookkeeping import BOOKKEEPING
from fyan.executor.mirror import Fetch, Mirror, MirrorError, Site, prompts_folder
from fyan.executor.payload import (
    ModelCall, PayloadError, TaskResult, TaskSpec, decode_spec, encode_result, inputs_digest,
)
from fyan.sandbox import admission
from fyan.state.models import Stage, StageRun

#: Name of the file a recording provider appends to inside the attempt folder (returned to the
#: head as ``cassette_append``, never as an attempt file)
CASSETTE_APPEND = ".cassette-append.jsonl"


@dataclass
class Runtime:
    """The code a task runs with, when not Fyan's own: ``agents`` (stage → agent function) and
    ``providers`` (stage name → provider) stand in for the model-driven stages in tests and
    benchmarks (an agent given for ``gate`` stands in for the gate's Lean work). None =
    the registry's stage agents (``fyan.stages``), the completion gate, and providers built on the node
    from the configuration snapshot. Must be picklable for the ``ray`` backend."""

    agents: dict[Stage, Callable] | None = None
    providers: Callable[[str], Any] | None = None


class CallRecorder:
    """Takes ``StageSession``'s ``record_model_call`` on a node; the head persists the calls."""

    def __init__(self) -> None:
        self.calls: list[ModelCall] = []
        self._lock = threading.Lock()

    def record_model_call(self, run: StageRun | None, **kw: Any) -> None:
        with self._lock:
            self.calls.append(ModelCall(ts=time.time(), **kw))


_providers: dict[tuple[str, str, str], Any] = {}
_breakers: dict[str, Any] = {}
_providers_lock = threading.Lock()


def _registry_agent(stage: str) -> Callable | None:
    """The agent the stage registry names for ``stage`` (None: the stage has no model part)."""
    from fyan.stages import resolve, stage_spec

    ref = stage_spec(stage).agent
    return resolve(ref) if ref is not None else None


def _provider_for(project: Any, stage: str, cassette: Path | None, append: Path) -> Any:
    """The provider ``[agents]`` configures for ``stage``, built on this node. Replay providers
    are kept per cassette (its parse is shared by tasks); a recording provider writes to
    ``append`` (this attempt's file)."""
    from fyan.agents.providers.factory import build_provider, live_provider
    from fyan.agents.providers.replay import RecordingProvider

    from fyan.agents.providers.breaker import Breakers

    settings = project.config.agents
    agent = settings.for_stage(stage)
    with _providers_lock:  # this process's circuit breakers (the head keeps its own, see the engine)
        breakers = _breakers.setdefault("", Breakers(settings.outage_wait_initial, settings.outage_wait_max))
    if agent.provider == "record":
        if agent.record_provider is None:
            from fyan.errors import ConfigError

            raise ConfigError('provider = "record" needs record_provider = "anthropic" | "openai" | "openai-compatible"')
        return RecordingProvider(live_provider(agent.record_provider, agent, breakers, settings, project), append)
    key = (agent.model_dump_json(), str(cassette), str(project.paths.root))
    with _providers_lock:
        if key not in _providers:
            _providers[key] = build_provider(agent, cassette, breakers, settings, project)
        return _providers[key]


#: site -> (the configuration snapshot, the configuration made from it): the last one of this
#: process (``_config_for``)
_configs: dict[Site, tuple[dict[str, Any], Any]] = {}
#: (mirror root, id of the configuration) -> the ``Project`` tasks of this process open there
_projects: dict[tuple[Path, int], Any] = {}
_configs_lock = threading.Lock()


def _config_for(site: Site, snapshot: dict[str, Any]) -> Any:
    """The ``FyanConfig`` of ``snapshot`` with this node's settings applied (``lake``), made once
    per process and snapshot: a head sends the same snapshot with every task of a run, and
    validating it section by section cost ~0.7 ms per task. A changed snapshot (an
    edited ``fyan.toml``, another project) makes a new one. The configuration is shared by the
    tasks of this process, as the head's ``Project.config`` is shared by its threads: nothing
    writes it after this function. Raises ``pydantic.ValidationError`` (a ``ValueError``)."""
    from fyan.config import config_from_snapshot

    with _configs_lock:
        cached = _configs.get(site)
    if cached is not None and cached[0] == snapshot:
        return cached[1]
    config = config_from_snapshot(snapshot)
    if site.lake is not None:
        config.lean.lake = site.lake
    elif site.remote and config.lean.lake and not Path(config.lean.lake).exists():
        config.lean.lake = ""  # the head's path means nothing here: look on this node
    with _configs_lock:
        _configs[site] = (snapshot, config)
    return config


def _project_for(root: Path, config: Any) -> Any:
    """The ``Project`` at the mirror ``root`` with ``config``, made once per process and
    configuration (``Project()`` resolves the root, an ``lstat`` per path component); the
    file-size cap of ``config`` (``safefile.configure``) is applied for every task, as a new
    ``Project`` would."""
    from fyan.project import Project

    key = (root, id(config))
    with _configs_lock:
        project = _projects.get(key)
        if project is None or project.config is not config:
            if len(_projects) > 16:  # snapshots changed many times: keep the map small
                _projects.clear()
            project = _projects[key] = Project(root, config)
            return project
    safefile.configure(config.lean.max_file_mb * 1024 * 1024)
    return project


def _collect(folder: Path) -> dict[str, bytes]:
    """Regular files under ``folder`` (relative paths); links are not followed."""
    out: dict[str, bytes] = {}
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            path = Path(dirpath) / name
            if not safefile.is_regular(path):  # links, FIFOs, devices: never opened
                continue
            rel = path.relative_to(folder).as_posix()
            if rel != CASSETTE_APPEND:
                out[rel] = safefile.read_bytes(path)  # UnsafeFile (an OSError) above [lean] max_file_mb
    return out


def _result(spec: TaskSpec | None, site: Site, **kw: Any) -> bytes:
    run = spec.run if spec is not None else {}
    return encode_result(TaskResult(head=spec.head if spec else "", run_id=int(run.get("id", 0)),
                                    unit=str(run.get("unit", "")), stage=str(run.get("stage", "")),
                                    node=site.name, **kw))


def execute(payload: bytes, runtime: Runtime | None, site: Site, fetch: Fetch) -> bytes:
    """Run one task (module docstring); returns the encoded ``TaskResult``. Never raises."""
    try:
        return _execute(payload, runtime, site, fetch)
    except Exception as e:  # the node itself failed (a lock file, a full disk): its environment
        return _result(None, site, error=f"worker {site.name} failed: {type(e).__name__}: {e}",
                       error_kind="environment", error_type=type(e).__name__)


def _execute(payload: bytes, runtime: Runtime | None, site: Site, fetch: Fetch) -> bytes:
    t0 = time.monotonic()
    try:
        spec = decode_spec(payload)
    except PayloadError as e:
        return _result(None, site, error=f"worker {site.name} cannot read the task: {e}", error_kind="environment",
                       error_type="PayloadError")
    timings: dict[str, float] = {}
    try:
        config = _config_for(site, spec.config)
        run = StageRun.model_validate(spec.run)
        mirror = Mirror.open(site, spec.project_id)
        lib = config.lean_lib
    except (MirrorError, ValueError) as e:
        return _result(spec, site, error=f"worker {site.name} cannot take the task: {e}", error_kind="environment",
                       error_type=type(e).__name__)
    with mirror.unit_lock(run.unit):
        try:
            attempt_dir = mirror.put_task(spec, fetch, lib)
            prompts = prompts_folder(site, spec.prompts, fetch)
            cassette = mirror.blob_file("cassettes", spec.cassette, fetch, ".jsonl") if spec.cassette else None
            declarations = (mirror.blob_file("declarations", spec.declarations, fetch, ".jsonl")
                            if spec.declarations else None)
        except MirrorError as e:
            return _result(spec, site, error=f"worker {site.name} cannot import the task's inputs: {e}",
                           error_kind="environment", error_type="MirrorError")
        timings["inputs_s"] = time.monotonic() - t0
        try:
            admission.configure_once(config.lean)  # a worker process: its task's [lean] settings
            with admission.for_unit(run.unit):  # its Lean processes are admitted by memory as this unit's
                from fyan.agents.prove_tools import use_declarations

                with use_declarations(declarations):  # the head's [prover] declarations list
                    return _run(spec, run, config, mirror, attempt_dir, prompts, cassette, runtime, site, timings, t0)
        finally:
            shutil.rmtree(attempt_dir, ignore_errors=True)


def _run(spec: TaskSpec, run: StageRun, config: Any, mirror: Mirror, attempt_dir: Path, prompts: Path,
         cassette: Path | None, runtime: Runtime | None, site: Site, timings: dict[str, float], t0: float) -> bytes:
    from fyan.agents.prompts import use_prompts
    from fyan.agents.session import StageSession
    from fyan.agents.stages import UnitContext
    from fyan.errors import FyanError

    project = _project_for(mirror.root, config)
    store = mirror.store
    error: str | None = None
    kind: str | None = None
    error_type: str | None = None
    evidence: dict[str, Any] = {}
    recorder = CallRecorder()
    append = attempt_dir / CASSETTE_APPEND
    digest = ""
    try:
        unit = store.unit(run.unit)
        digest = inputs_digest(spec.unit.rows)  # echoed: the inputs this node was handed
        if unit is None:
            raise MirrorError(f"unit {run.unit} is missing from the node's copy of the state")
        t1 = time.monotonic()
        doubles = runtime.agents if runtime is not None and runtime.agents is not None else None
        with use_prompts(prompts):
            if spec.kind == "gate" and (doubles is None or run.stage not in doubles):
                from fyan.gates.stages import run_gate_retrying
                from fyan.lean.toolchain import discover

                disc = discover(config.lean, cwd=project.paths.lean)
                report, tries = run_gate_retrying(project, store, unit, attempt_dir, disc)  # crashes retried here
                evidence["gate_report"] = report.model_dump(mode="json")
                evidence["gate_runs"] = tries
            else:
                agent = doubles.get(run.stage) if doubles is not None else _registry_agent(run.stage)
                if agent is not None:
                    if runtime is not None and runtime.providers is not None:
                        provider = runtime.providers(run.stage.value)
                    else:
                        provider = _provider_for(project, run.stage.value, cassette, append)
                    session = StageSession(
                        gateway=recorder, run=run, provider=provider,  # type: ignore[arg-type]
                        agent=config.agents.for_stage(run.stage.value), form_repairs=config.agents.form_repairs,
                        attempt_dir=attempt_dir,
                    )
                    agent(session, UnitContext(project, store, unit, run))
        timings["run_s"] = time.monotonic() - t1
    except MirrorError as e:
        error, kind, error_type, digest = f"worker {site.name}: {e}", "environment", "MirrorError", ""
    except FyanError as e:
        error, kind, error_type = e.message, ("agent" if e.retryable else "environment"), type(e).__name__
        from fyan.errors import ProviderUnavailable

        if isinstance(e, ProviderUnavailable):  # an outage: the head waits it out, never counts it
            evidence["provider_unavailable"] = {"provider": e.provider, "error": e.error, "since": e.since,
                                                "retry_at": e.retry_at}
        if cassette is not None:  # name the project's cassette, not this node's copy of it
            error = error.replace(str(cassette), str(spec.config["agents"]["replay_file"]))
    except Exception as e:  # an agent bug fails the attempt, never the worker
        error = f"internal error in the {run.stage.value} stage: {type(e).__name__}: {e}"
        kind, error_type = "agent", type(e).__name__
        evidence["traceback"] = traceback.format_exc()[-4000:]
    with BOOKKEEPING:
        files = _collect(attempt_dir)
        appended = append.read_bytes() if append.is_file() else b""
        timings["task_s"] = time.monotonic() - t0
        return _result(spec, site, files=files, error=error, error_kind=kind, error_type=error_type,
                       calls=recorder.calls, cassette_append=appended, evidence=evidence, inputs_digest=digest,
                       timings=timings)
