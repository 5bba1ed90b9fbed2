"""The long-running orchestrator of one project: lock, resume, watchers, run loop, signals.

``Daemon.serve`` is what ``fyan run`` (foreground; ``--watch`` keeps it running) and
``fyan daemon start`` (a background process running ``fyan daemon serve``) execute:

1. take the project's run lock (``.fyan/run.lock``, ``flock``: a second daemon or run on the
   same project is refused with the holder's pid; the kernel drops the lock of a killed
   process, so a crash never leaves a stale lock); check before anything runs that every
   stage has a usable model (``fyan.agents.preflight``) and that ``--unit`` names known
   units; end the agent process groups a killed run left running and record the new ones
   (``fyan.agents.process_groups``);
2. open the store, ingest the source on the first run (a model Specifier whose provider is
   unavailable is waited for), recover from a crash (``Gateway.recover``: attempts left
   running are recorded as interrupted and re-run; committed transitions whose files were not
   yet in place are rolled forward); fetch the Lake package's dependencies when they are
   missing (``fyan.lakepackage.fetch``: ``lake update``, Mathlib's ``cache get``; a failure stops the
   run before any attempt and names ``fyan setup``, which resumes it);
3. start the watchers (``watchers.py``) and scan once for what changed while no daemon ran:
   guidance files (``guidance.py``), the source (``staleness.py``: stale units are reported
   and held, never re-run), hand-edited proofs (``handedits.py``: taken in through the
   gateway, then the gate re-runs);
4. run the loop (``engine.py``) with critic reviews of stagnating units (``stagnation.py``)
   and, when asked, the dashboard (``fyan.dashboard``) in a thread;
5. on SIGTERM or SIGINT: stop opening attempts, let the write in progress finish, record the
   attempts still running as interrupted, end every agent process group, and exit. SIGKILL
   at any moment is safe too: the next start recovers (steps 1 and 2).

While it runs, ``.fyan/daemon.json`` (mode 0600) says who runs, since when, where the
dashboard is and its write token; ``fyan daemon status|stop`` read it. What the run is doing
(jobs in flight, providers unavailable) is handed to the dashboard as ``Daemon.live`` — the
dashboard never imports the daemon.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fyan import logs
from fyan.agents import process_groups
from fyan.agents.providers.factory import ProviderFactory
from fyan.errors import FyanError, LockedError, ProviderUnavailable, UsageError
from fyan.agents import guidance
from fyan.orchestrator import handedits, staleness
from fyan.orchestrator.engine import Engine, RunSummary, StepEvent
from fyan.orchestrator.live import LiveState
from fyan.orchestrator import lock
from fyan.orchestrator.lock import STATE_FILE, ProjectLock
from fyan.orchestrator.stagnation import Critic
from fyan.orchestrator.watchers import Changes, ProjectWatcher
from fyan.project import Project
from fyan.state.faults import fault_point
from fyan.state.gateway import Gateway
from fyan.state.models import UnitStatus
from fyan.terminal import quoted

if TYPE_CHECKING:  # the specifier's modules load only when a run ingests
    from fyan.specifier.ingest import IngestReport

#: files of ``.fyan/`` that belong to the running process, not to the state a failed first
#: ingest rolls back (the lock it holds, its agents' registry and scratch, its logs, daemon.json)
_RUN_FILES = {"run.lock", "agents.json", "tmp", "logs", STATE_FILE}


def open_for_run(path: str | Path, providers: Callable | None = None):
    """(project, gateway, ingest report or None): ingests the source on the first run; a
    failed first ingest leaves no state behind. Call with the run lock held. ``providers``
    (stage -> Provider) serves a model Specifier (default: the project's configuration)."""
    project = Project.open(path)
    fresh = not project.paths.db.exists()
    gateway = Gateway(project)
    report = None
    try:
        if fresh or not gateway.store.has_units():
            # imported here: a restart of an ingested project needs neither (0.4 s of a restart
            # to first dispatch)
            from fyan.agents.specify import model_specifier
            from fyan.specifier.ingest import ingest

            report = ingest(project, gateway, specifier=model_specifier(project, gateway, providers))
    except BaseException:
        gateway.close()
        if fresh:  # leave the folder as it was: no half-made state (the run's own files stay)
            for entry in project.paths.state.iterdir() if project.paths.state.is_dir() else []:
                if entry.name not in _RUN_FILES:
                    shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
        raise
    return project, gateway, report


def check_units(project: Project, only: set[str] | list[str] | None, path: str | Path) -> None:
    """Refuse unknown ``only`` units (``UsageError``, exit 2) before anything is ingested or
    run: against the recorded units, or — before the first ingest — the units the document's
    intake finds (``fyan run --unit``, ``fyan resume --unit``)."""
    if not only:
        return
    if Daemon._has_units(project):
        from fyan.state.store import Store

        store = Store(project.paths.db)
        known = {u.id for u in store.units()}
        store.close()
    else:
        from fyan.specifier.ingest import plan_ingest

        known = {u.id for u in plan_ingest(project)[0].units}
    unknown = sorted(set(only) - known)
    if unknown:
        raise UsageError(f"unknown unit(s): {', '.join(unknown)}; nothing was run",
                         hint=f"unit ids are listed by `fyan status {quoted(path)}` (after a first run) "
                         "and by `fyan init` (--json)")


def lock_holder(project: Project) -> str | None:
    """Who holds the project's run lock ("pid N on host since T"), or None when nobody does."""
    return lock.lock_holder(project.paths.state)


def read_state(project: Project) -> dict[str, Any] | None:
    """The running daemon's ``.fyan/daemon.json``, or None."""
    return lock.read_run_state(project.paths.state)


@dataclass
class DaemonOptions:
    watch: bool = True  # run watchers
    until_idle: bool = True  # exit at quiescence (``fyan run``); False: keep running (daemon)
    only: set[str] | None = None
    parallelism: int | None = None
    dashboard: bool = False
    dashboard_port: int | None = None
    background: bool = False  # the background daemon (``fyan daemon serve``); False: a foreground ``fyan run``
    engine_kwargs: dict[str, Any] = field(default_factory=dict)  # tests and benchmarks: agent doubles


class Daemon:
    def __init__(self, path: str | Path, options: DaemonOptions | None = None,
                 on_event: Callable[[StepEvent, dict], None] | None = None,
                 on_ready: Callable[[Daemon], None] | None = None) -> None:
        self.path = Path(path)
        self.options = options or DaemonOptions()
        self.on_event = on_event
        self.on_ready = on_ready
        self.project: Project | None = None
        self.gateway: Gateway | None = None
        self.engine: Engine | None = None
        self.report: IngestReport | None = None
        self.stale: staleness.Staleness | None = None
        self.notes: list[str] = []  # what the daemon noticed (also in the log and the event log)
        self.dashboard_url: str | None = None
        #: the dashboard's configured port was taken and it serves elsewhere (``make_server``)
        self.dashboard_note: str | None = None
        self.token: str | None = None
        self._deferred_proofs: set[str] = set()
        self._server = None
        self._factory: ProviderFactory | None = None  # the project's providers, shared by the Specifier and the engine
        self._phase = "starting"
        self._started = time.time()
        self._stop_reason: str | None = None
        #: the signal that stopped the run (SIGINT, SIGTERM), for the exit code (128 + its number)
        self.stop_signal: int | None = None
        self._wake = threading.Event()

    # -- what the loop thread does with changes -------------------------------------------
    def _note(self, text: str) -> None:
        self.notes.append(f"{time.strftime('%H:%M:%S')}  {text}")
        logs.get().info("daemon_note", note=text)
        if self.on_event is not None and self.engine is not None:
            self.on_event(StepEvent("-", "watch", "note", text), self.engine.views())

    def _log_ingest(self) -> None:
        """This run ingested the source first: its warnings go to the structured log (one
        ``ingest_warning`` record each) and, grouped as ``fyan init`` prints them, to the daemon's
        notes (``fyan run`` also prints them on stderr; a background daemon's stderr is its log)."""
        from fyan.intake.catalogue import format_warnings

        r = self.report
        log = logs.get()
        log.info("ingested", source=r.source, units=r.units, edges=r.edges, layers=r.layers,
                 warnings=len(r.warnings), mentions=len(r.mentions), findings=len(r.findings))
        for w in r.warnings:
            log.warning("ingest_warning", code=w.code, where=w.where, message=w.message)
        if r.warnings:
            self.notes.append(f"{time.strftime('%H:%M:%S')}  first ingest: "
                              + format_warnings(r.warnings).rstrip("\n"))

    def held(self, unit: str) -> str | None:
        if self.stale is not None and unit in self.stale.stale:
            return "stale: " + self.stale.stale[unit]
        return None

    def handle(self, changes: Changes) -> None:
        """Act on watched changes (runs in the loop thread)."""
        assert self.engine is not None and self.gateway is not None and self.engine.ledger is not None
        ledger = self.engine.ledger
        for unit in sorted(changes.guidance):
            if unit not in ledger.units:
                self._note(f"guidance/{unit}.md names no unit; ignored (see `fyan status` for unit ids)")
                continue
            runs = ledger.runs[unit]
            kind = guidance.record_human(self.gateway, unit, runs[-1].id if runs else 0)
            if kind == "guidance":
                ledger.set_reset(unit, runs[-1].id if runs else 0)
                self._note(f"guidance for {unit} recorded; its next attempt gets it as context")
            elif kind == "guidance_removed":
                self._note(f"guidance for {unit} removed")
        if changes.source:
            self.check_source()
        proofs = sorted(changes.proofs | self._deferred_proofs)
        hashes = handedits.recorded_hashes(self.gateway.store, proofs[0] if len(proofs) == 1 else None) if proofs else {}
        for unit in proofs:
            if unit not in ledger.units:
                continue
            running = ledger.views[unit].status is UnitStatus.RUNNING
            outcome = handedits.take(self.gateway, unit, self.engine.attempts, running, hashes.get(unit, set()))
            if outcome is None:
                self._deferred_proofs.discard(unit)
                continue
            if outcome.deferred:
                self._deferred_proofs.add(unit)
                continue
            self._deferred_proofs.discard(unit)
            self.engine.refresh_unit(unit)
            self._note(f"units/{unit}/Basic.lean edited by hand: {outcome.reason}")

    def check_source(self) -> None:
        assert self.gateway is not None and self.project is not None
        before = dict(self.stale.stale) if self.stale else {}
        self.stale = staleness.check(self.project, self.gateway.store)
        if self.stale.stale != before or (self.stale.new_statements and before == {}):
            if self.stale.changed:
                self.gateway.event("source_changed", None, {
                    "source_sha256": self.stale.source_sha256, "stale": self.stale.stale,
                    "new_statements": self.stale.new_statements, "error": self.stale.error,
                })
            if self.stale.stale:
                self._note(f"source changed: {len(self.stale.stale)} unit(s) stale and held (never re-run): "
                           + ", ".join(sorted(self.stale.stale)[:8]))
            elif self.stale.changed:
                self._note("source changed; no unit's statement or proof changed")
            else:
                self._note("source restored: no unit is stale")

    def scan(self) -> None:
        """Everything the watchers would have seen while no daemon ran."""
        assert self.engine is not None and self.engine.ledger is not None and self.project is not None
        units = self.engine.ledger.units
        g = self.project.paths.guidance
        on_disk = {p.stem for p in g.glob("*.md")} if g.is_dir() else set()
        recorded = {e.unit for e in self.gateway.store.events(kind="guidance", limit=10_000_000)
                    if e.data.get("source") == "human" and e.unit}
        proofs = set(handedits.recorded_hashes(self.gateway.store))  # units with a recorded proof
        self.handle(Changes(guidance=on_disk | recorded, source=set(), proofs=proofs & set(units)))
        self.check_source()

    # -- lifecycle -------------------------------------------------------------------------
    def live(self) -> LiveState:
        """What this run is doing now — handed to the dashboard and the progress display
        (``fyan.orchestrator.live``); callable from any thread."""
        if self.engine is not None and self.engine.ledger is not None:
            state = self.engine.live()
        else:
            state = LiveState(outages=self._factory.breakers.outages() if self._factory is not None else [])
        state.phase, state.pid, state.started = self._phase, os.getpid(), self._started
        state.stopping = state.stopping or self._stop_reason
        return state

    def stop(self, reason: str) -> None:
        """Stop the run (any thread, signal handlers included)."""
        if self._stop_reason is None:
            self._stop_reason = reason
        self._wake.set()
        if self.engine is not None:
            self.engine.stop(reason)

    def _write_state(self) -> None:
        assert self.project is not None
        data = {"pid": os.getpid(), "started": self._started, "project": str(self.project.paths.root),
                "dashboard": self.dashboard_url, "dashboard_note": self.dashboard_note, "token": self.token,
                "background": self.options.background,
                "log": str(self.project.paths.logs / "daemon.log")}
        path = self.project.paths.state / STATE_FILE
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)

    def _signals(self) -> list[tuple[int, Any]]:
        if threading.current_thread() is not threading.main_thread():
            return []
        previous: list[tuple[int, Any]] = []
        hits = {"n": 0}

        def handler(signum, frame):
            hits["n"] += 1
            if self.stop_signal is None:
                self.stop_signal = signum
            self.stop(f"stopped by {signal.Signals(signum).name}")
            if hits["n"] > 1 and signum == signal.SIGINT:
                raise KeyboardInterrupt

        for sig in (signal.SIGTERM, signal.SIGINT):
            previous.append((sig, signal.signal(sig, handler)))
        return previous

    def serve(self) -> RunSummary:
        """Run (module docstring). Raises ``LockedError`` when another run holds the project,
        ``ConfigError``/``InputError`` when no usable model is configured (before anything
        runs), ``UsageError`` for an unknown ``only`` unit (before anything is ingested)."""
        project = Project.open(self.path)  # a clear error before taking the lock
        lock = ProjectLock(self.path / ".fyan" / "run.lock")
        lock.acquire()
        watcher = None
        previous: list = []
        o = self.options
        kwargs = dict(o.engine_kwargs)
        try:
            self.project = project
            fault_point("run:starting")
            if "providers" not in kwargs:  # providers passed in (tests, benchmarks) need no model
                from fyan.agents.preflight import check_models

                check_models(project, ingested=project.paths.db.exists() and self._has_units(project))
                self._factory = ProviderFactory(project)
                kwargs["providers"], kwargs["breakers"] = self._factory.for_stage, self._factory.breakers
            self._check_only(project)
            self._end_leftovers(project)
            process_groups.activate(project.paths.state)
            if o.dashboard:
                self._start_dashboard()
            self._write_state()
            previous = self._signals()
            self._phase = "ingesting"
            self.project, self.gateway, self.report = self._open_waiting_for_providers(kwargs.get("providers"))
            self._phase = "fetching"  # Fyan's trusted step: the package's dependencies, before any attempt
            from fyan.lakepackage.fetch import fetch_project

            fetch_project(self.project, command=f"fyan setup {self.path}")
            kwargs.setdefault("critic", None)
            self.engine = Engine(self.project, self.gateway, only=o.only, parallelism=o.parallelism,
                                 on_event=self.on_event, held=self.held, **kwargs)
            if self._stop_reason is not None:
                self.engine.stop(self._stop_reason)
            if kwargs["critic"] is None and self.project.config.stagnation.enabled:
                self.engine.critic = Critic(self.project, self.gateway, self.engine.providers)
            if self.report is not None:
                self._log_ingest()
            if o.watch:
                watcher = ProjectWatcher(self.project, lambda ch: self.engine.call_soon(lambda: self.handle(ch)))
                watcher.start()
            self.engine.call_soon(self.scan)
            self._phase = "running"
            if self.on_ready is not None:
                self.on_ready(self)
            return self.engine.run(until_idle=o.until_idle)
        finally:
            for sig, old in previous:
                signal.signal(sig, old)
            if watcher is not None:
                watcher.stop()
            process_groups.deactivate()  # every stop path ends the agents it started
            if self._server is not None:
                self._server.should_exit = True
            if self.project is not None:
                try:
                    (self.project.paths.state / STATE_FILE).unlink()
                except OSError:
                    pass
            if self.gateway is not None:
                self.gateway.close()
            lock.release()

    @staticmethod
    def _has_units(project: Project) -> bool:
        from fyan.state.store import Store

        store = Store(project.paths.db)
        try:
            return bool(store.units())
        except Exception:
            return False
        finally:
            store.close()

    def _check_only(self, project: Project) -> None:
        check_units(project, self.options.only, self.path)

    def _end_leftovers(self, project: Project) -> None:
        """End agent process groups a killed run left behind (``process_groups``)."""
        ended = process_groups.end_leftovers(project.paths.state)
        if ended:
            text = (f"ended {len(ended)} agent process group(s) left running by a run that was killed: "
                    + ", ".join(g.label for g in ended))
            self.notes.append(f"{time.strftime('%H:%M:%S')}  {text}")
            logs.get().warning("leftover_agents_ended", groups=[g.label for g in ended])
            if self.on_event is not None:
                self.on_event(StepEvent("-", "watch", "note", text), {})

    def _open_waiting_for_providers(self, providers: Callable | None):
        """``open_for_run``; a model Specifier whose provider is unavailable is waited for
        (the breaker's wait), not failed. Raises the last ``ProviderUnavailable`` when the run
        is stopped while waiting."""
        while True:
            try:
                return open_for_run(self.path, providers)
            except ProviderUnavailable as e:
                if self._stop_reason is not None:
                    raise
                logs.get().warning("ingest_waits_for_provider", provider=e.provider, retry_at=e.retry_at)
                if self.on_event is not None:
                    self.on_event(StepEvent("-", "provider", "unavailable",
                                            f"the Specifier waits: {e.provider} unavailable ({e.error})"), {})
                self._wake.wait(max(0.05, e.retry_at - time.time()))
                if self._stop_reason is not None:
                    raise

    def _start_dashboard(self) -> None:
        from fyan.dashboard.server import start_in_thread

        assert self.project is not None
        port = self.options.dashboard_port
        if port is None:
            port = self.project.config.dashboard.port
        self._server, self.dashboard_url, self.token = start_in_thread(self.project, port, live=self.live)
        self.dashboard_note = getattr(self._server, "port_note", None)
        if self.dashboard_note:  # never silently elsewhere
            self.notes.append(f"{time.strftime('%H:%M:%S')}  dashboard: {self.dashboard_note}")
            logs.get().warning("dashboard_port_taken", note=self.dashboard_note)


# -- background process (fyan daemon start|stop|status) ---------------------------------------

def start_background(path: str | Path, *, dashboard: bool = True, port: int | None = None,
                     parallelism: int | None = None, wait_s: float = 20.0) -> dict[str, Any]:
    """Start ``fyan daemon serve`` detached; returns its state (pid, dashboard, token, log).

    Raises ``LockedError`` when a daemon or run already holds the project, ``ConfigError`` /
    ``InputError`` when no usable model is configured (``fyan.agents.preflight``: nothing is
    started), ``FyanError`` when the process did not come up (with the end of its log)."""
    import subprocess
    import sys

    from fyan.agents.preflight import check_models

    project = Project.open(path)
    holder = lock_holder(project)
    if holder is not None:
        raise LockedError(
            f"{project.paths.root}: a Fyan daemon or run is already working on this project ({holder})",
            hint=f"see `fyan daemon status {quoted(path)}`; stop it with `fyan daemon stop {quoted(path)}`",
        )
    # the same check the daemon makes, here, so that its one message is the command's answer
    check_models(project, ingested=project.paths.db.exists() and Daemon._has_units(project))
    project.paths.logs.mkdir(parents=True, exist_ok=True)
    log_path = project.paths.logs / "daemon.log"
    try:
        (project.paths.state / STATE_FILE).unlink()
    except OSError:
        pass
    argv = [sys.executable, "-m", "fyan", "daemon", "serve", str(project.paths.root)]
    if not dashboard:
        argv.append("--no-dashboard")
    if port is not None:
        argv += ["--port", str(port)]
    if parallelism is not None:
        argv += ["--parallelism", str(parallelism)]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        state = read_state(project)
        if state is not None and state.get("pid") == proc.pid:
            return state
        if proc.poll() is not None:
            tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-8:]
            msg = "\n".join(tail)
            if "already working on this project" in msg:
                raise LockedError(f"{project.paths.root}: a Fyan daemon or run is already working on this project",
                                  hint=f"see `fyan daemon status {quoted(path)}`")
            raise FyanError(f"the daemon exited at start (code {proc.returncode}); end of {log_path}:\n{msg}")
        time.sleep(0.05)
    raise FyanError(f"the daemon did not report ready within {wait_s:.0f} s; see {log_path}")


def stop_background(path: str | Path, *, wait_s: float = 30.0) -> dict[str, Any]:
    """Send SIGTERM to the project's daemon and wait until it released the lock."""
    project = Project.open(path)
    state = read_state(project)
    holder = lock_holder(project)
    if holder is None:
        return {"running": False, "stopped": False}
    pid = state.get("pid") if state else None
    if pid is None:
        raise FyanError(f"{project.paths.root}: the project is locked ({holder}) but not by a daemon",
                        hint="a foreground `fyan run` holds it: stop it with Ctrl-C")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if lock_holder(project) is None:
            return {"running": False, "stopped": True, "pid": pid}
        time.sleep(0.1)
    raise FyanError(f"daemon pid {pid} did not stop within {wait_s:.0f} s",
                    hint=f"`kill -9 {pid}` is safe: the next start resumes")
