"""A pool of warm Lean language servers for the Formalizer's iterations.

A cold feedback compile (``fyan.lakepackage.workspace.compile_candidate``) imports every module the unit
needs each time: for a Mathlib project seconds to tens of seconds and gigabytes per iteration. A
warm server (``fyan.lean.lsp.LeanServer``: ``lean --server`` of the same toolchain) imported
them once; each iteration sends the new text and reads the diagnostics and goals.

* **Key.** A server serves one ``ServerKey``: the ``lean`` binary and its git hash, the search
  path (``LEAN_PATH``), the ``-D`` options and the file's import header. A text with another
  header goes to another server (Lean itself restarts the file worker when the header changes).
  One document per server (``Warm.lean`` in the server's scratch folder), so every unit with the
  same imports reuses the same worker.
* **Memory.** Each server is admitted through the process's memory budget
  (``fyan.sandbox.admission``) as kind ``lean_server``, charged the peak recorded for that kind and
  unit (else ``[lean] memory_limit_mb``), and holds its share while it lives; its measured peak
  (``VmHWM`` of the server and its workers) is recorded after every check. At most
  ``[lean] warm_servers`` live at once (0: no pool, every iteration compiles cold); one idle
  longer than ``[lean] warm_idle_s`` seconds is ended, and idle servers are ended first when a
  new one would not fit in the budget or in the pool, and whenever another Lean process (a gate
  build) would wait for memory (the admission's reclaimer): idle servers never keep a build
  waiting.
* **Failures.** A crash (the process or its worker ended) or a timeout (``[lean] build_timeout``)
  ends that server; a new one is started and the iteration is retried once. A second failure
  raises ``WarmUnavailable`` and the caller compiles cold: it is never charged to the proof.
* **Confinement.** A server runs as a build runs (``fyan.sandbox.runner.confine``: bubblewrap per
  ``[lean] sandbox``, ``tool_environment``), writing only its scratch folder; instead of an
  address-space limit (the file worker reserves far more address space than it uses) a server
  whose measured peak passes ``[lean] memory_limit_mb`` is ended after its check,
  with ``LAKE`` naming no file so the worker reads ``LEAN_PATH`` and never runs
  ``lake setup-file``.

The completion gate never uses a warm server: it compiles cold in its own workspace
(``fyan.lakepackage.trusted``). A warm server's answer is feedback for the model, never a decision.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fyan.sandbox import admission
from fyan.lean.lsp import Elaboration, LeanServer, LspError
from fyan.sandbox.runner import Confinement, confine, sandbox_tmpdir, tool_environment

#: the admission kind of a warm server
KIND = "lean_server"
#: the document every server holds
DOCUMENT = "Warm.lean"


class WarmUnavailable(Exception):
    """No warm answer for this iteration (pool off or full, sandbox refused, the server failed
    twice); the message says why. The caller compiles cold."""


_HEADER_LINE = re.compile(r"^\s*(?:prelude|module|(?:public\s+|meta\s+|private\s+)*import\s+\S.*)\s*$")


def header_of(text: str) -> str:
    """The import header of a Lean file: its leading ``module``/``prelude``/``import`` lines
    (comments and blank lines between them skipped), normalised to one line each."""
    text = re.sub(r"/-.*?-/", "", text, flags=re.S)
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.split("--", 1)[0].strip()
        if not stripped:
            continue
        if not _HEADER_LINE.match(stripped):
            break
        out.append(" ".join(stripped.split()))
    return "\n".join(out)


@dataclass(frozen=True)
class ServerKey:
    """What a warm server is for (module docstring). Paths are strings, in search order."""

    lean: str
    githash: str
    search_path: tuple[str, ...]
    header: str
    options: tuple[tuple[str, str], ...] = ()

    def digest(self) -> str:
        return hashlib.sha256(json.dumps([self.lean, self.githash, self.search_path, self.header,
                                          self.options]).encode()).hexdigest()[:16]


@dataclass
class ServerSpec:
    """How to start a server for a key: the binary's environment additions (``LEAN_PATH``,
    ``LEAN_SYSROOT``), the scratch folder it may write, what the sandbox lets it read, the
    ``[lean] sandbox`` mode, the memory limit (MiB: a server whose measured peak resident memory
    passes it is ended after the check; not an address-space limit, which Lean's server outgrows
    at once) and the timeouts (s) of one check and of a start."""

    scratch: Path
    extra_env: dict[str, str]
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    sandbox: str = "require"
    memory_mb: int | None = None
    timeout_s: float = 900.0
    #: seconds to start a server and answer ``initialize``
    start_timeout_s: float = 120.0


@dataclass
class _Warm:
    key: ServerKey
    server: LeanServer
    unit: str | None
    ticket: contextlib.ExitStack
    cost_mb: int
    sandboxed: bool
    busy: bool = False
    last_used: float = field(default_factory=time.monotonic)
    checks: int = 0


@dataclass
class WarmCheck:
    """One iteration answered warm: the elaboration, how many servers were restarted for it
    (crash or timeout, then retried), and whether the server was already warm."""

    elaboration: Elaboration
    restarts: int
    reused: bool
    sandboxed: bool
    notes: list[str] = field(default_factory=list)


class ServerPool:
    """Warm servers of this process (module docstring). ``size``: ``[lean] warm_servers``;
    ``idle_s``: ``[lean] warm_idle_s``; ``adm``: the admission (default: the process's)."""

    def __init__(self, size: int = 2, idle_s: float = 600.0, adm: admission.Admission | None = None) -> None:
        self.size = size
        self.idle_s = idle_s
        self._adm = adm
        self._lock = threading.Lock()
        self._servers: list[_Warm] = []
        self._reaper: threading.Thread | None = None
        self._stop = threading.Event()
        #: (event, key digest, detail) — starts, reuses, restarts, evictions, for reports and tests
        self.events: list[tuple[str, str, str]] = []

    @property
    def adm(self) -> admission.Admission:
        return self._adm if self._adm is not None else admission.current()

    def configure(self, size: int, idle_s: float) -> None:
        self.size, self.idle_s = size, idle_s
        self.evict_idle()

    def snapshot(self) -> list[dict]:
        with self._lock:
            return [{"key": w.key.digest(), "unit": w.unit, "pid": w.server.pid, "busy": w.busy, "cost_mb": w.cost_mb,
                     "checks": w.checks, "idle_s": round(time.monotonic() - w.last_used, 1)} for w in self._servers]

    def _event(self, what: str, key: ServerKey, detail: str = "") -> None:
        self.events.append((what, key.digest(), detail))

    # -- life cycle --------------------------------------------------------------------------------
    def _end(self, w: _Warm, why: str) -> None:
        self.adm.record(KIND, w.unit, w.server.rss_mb())  # never raises (a failing store is ignored there)
        w.server.close()
        w.ticket.close()  # gives the memory back
        self._event(why, w.key, str(w.server.pid))

    def evict_idle(self, now: float | None = None) -> int:
        """End servers idle longer than ``idle_s`` (and all idle ones beyond ``size``); returns
        how many were ended."""
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = sorted((w for w in self._servers if not w.busy), key=lambda w: w.last_used)
            over = max(0, len(self._servers) - self.size)
            gone = [w for i, w in enumerate(idle) if i < over or now - w.last_used > self.idle_s]
            for w in gone:
                self._servers.remove(w)
        for w in gone:
            self._end(w, "evicted-idle")
        return len(gone)

    def _make_room(self, cost: int) -> None:
        """End idle servers, least recently used first, until a new one fits in the pool and in
        the memory budget (or none is idle). Raises ``WarmUnavailable`` when the pool is full of
        busy servers."""
        while True:
            with self._lock:
                idle = sorted((w for w in self._servers if not w.busy), key=lambda w: w.last_used)
                full = len(self._servers) >= self.size
                tight = self.adm.used_mb() + cost > self.adm.budget_mb and bool(self.adm.running())
                if not (full or tight) or not idle:
                    if full:
                        raise WarmUnavailable(f"all {self.size} warm server(s) are busy")
                    return
                victim = idle[0]
                self._servers.remove(victim)
            self._end(victim, "evicted-for-room" if not full else "evicted-lru")

    def _start(self, key: ServerKey, spec: ServerSpec, unit: str | None) -> _Warm:
        cost = self.adm.cost(KIND, unit)
        self._make_room(cost)
        spec.scratch.mkdir(parents=True, exist_ok=True)
        # no report delay: diagnostics are sent as soon as a snapshot is done (the worker reads
        # server.reportDelayMs from the command line the watchdog hands it)
        argv = [key.lean, "--server", "-Dserver.reportDelayMs=0"] + [f"-D{k}={v}" for k, v in key.options]
        confinement = Confinement(writable=(spec.scratch,), read_only=spec.readable, hidden=spec.hidden)
        env = tool_environment({**spec.extra_env, "LAKE": str(spec.scratch / "no-lake"), "NO_COLOR": "1",
                                "TERM": "dumb"})
        wrapped = confine(argv, spec.scratch, spec.sandbox, confinement, env)
        if wrapped.refused:
            raise WarmUnavailable(wrapped.note or "the sandbox refused to start a warm server")
        if wrapped.sandboxed:
            env["TMPDIR"] = str(sandbox_tmpdir((spec.scratch,)))
        self.adm.add_reclaimer(self._reclaim)
        ticket = contextlib.ExitStack()
        held = ticket.enter_context(self.adm.admit(KIND, unit))
        # no address-space limit: Lean 4.35's file worker reserves ~12 GiB of address space for
        # ~100 MiB resident (docs/lean-contract.md); spec.memory_mb bounds the measured peak instead
        server = LeanServer(wrapped.argv, cwd=spec.scratch, env=env, memory_mb=None,
                            uri=(spec.scratch / DOCUMENT).resolve().as_uri(), stderr=spec.scratch / "server.log")
        w = _Warm(key, server, unit, ticket, held.cost_mb, wrapped.sandboxed, busy=True)
        with self._lock:
            self._servers.append(w)
        try:
            server.start(spec.start_timeout_s)
        except LspError:
            with self._lock:
                self._servers.remove(w)
            self._end(w, "failed-start")
            raise
        self._event("started", key, str(server.pid))
        self._ensure_reaper()
        return w

    def _lease(self, key: ServerKey, spec: ServerSpec, unit: str | None) -> tuple[_Warm, bool]:
        self.evict_idle()
        with self._lock:
            dead = [w for w in self._servers if not w.busy and not w.server.alive()]
            for w in dead:
                self._servers.remove(w)
        for w in dead:  # ended between iterations (a crash): its share is given back
            self._end(w, "ended-idle")
        with self._lock:
            for w in self._servers:
                if w.key == key and not w.busy and w.server.alive():
                    w.busy = True
                    return w, True
        return self._start(key, spec, unit), False

    def _release(self, w: _Warm) -> None:
        with self._lock:
            w.busy = False
            w.last_used = time.monotonic()
            w.checks += 1
            waiting = bool(self.adm.waiting()) and w in self._servers
            if waiting:  # a Lean process waits for memory: an idle server does not keep it waiting
                self._servers.remove(w)
        if waiting:
            self._end(w, "evicted-for-waiter")

    def _reclaim(self, ticket) -> None:
        """The admission's reclaimer: a process must wait for memory, so idle servers end, least
        recently used first, until it fits (or none is idle)."""
        adm = self.adm
        while adm.used_mb() + ticket.cost_mb > adm.budget_mb:
            with self._lock:
                idle = sorted((w for w in self._servers if not w.busy), key=lambda w: w.last_used)
                if not idle:
                    return
                victim = idle[0]
                self._servers.remove(victim)
            self._end(victim, "evicted-for-waiter")

    def _discard(self, w: _Warm, why: str) -> None:
        with self._lock:
            if w in self._servers:
                self._servers.remove(w)
        w.server.kill()
        self._end(w, why)

    def check(self, key: ServerKey, text: str, spec: ServerSpec, *, unit: str | None = None) -> WarmCheck:
        """Elaborate ``text`` on a warm server for ``key`` (started when none is idle), with goals.
        A crash or timeout ends that server and the check is retried once on a new one. Raises
        ``WarmUnavailable`` (pool off, full, sandbox refused, two failures)."""
        if self.size <= 0:
            raise WarmUnavailable("[lean] warm_servers = 0")
        notes: list[str] = []
        restarts = 0
        for attempt in (1, 2):
            try:
                w, reused = self._lease(key, spec, unit)
            except LspError as e:
                notes.append(f"the warm server did not start: {e}")
                restarts += 1
                continue
            try:
                result = w.server.check(text, spec.timeout_s)
            except LspError as e:
                notes.append(f"warm server {w.server.pid} failed ({type(e).__name__}: {e}); restarted")
                restarts += 1
                self._discard(w, "restarted")
                continue
            peak = w.server.rss_mb()
            self.adm.record(KIND, unit, peak)
            self._release(w)
            if spec.memory_mb and peak and peak > spec.memory_mb:  # grew past [lean] memory_limit_mb: end it
                with self._lock:
                    mine = w in self._servers and not w.busy
                    if mine:
                        self._servers.remove(w)
                if mine:
                    self._end(w, "ended-over-memory")
                notes.append(f"warm server {w.server.pid} reached {peak:.0f} MiB (limit {spec.memory_mb} MiB); ended")
            self._event("reused" if reused else "checked", key, str(w.server.pid))
            return WarmCheck(result, restarts, reused, w.sandboxed, notes)
        raise WarmUnavailable("; ".join(notes) or "the warm server failed twice")

    @contextlib.contextmanager
    def lease(self, key: ServerKey, spec: ServerSpec, *, unit: str | None = None):
        """A warm server for ``key`` held for a series of requests (the prover tools: a check,
        then goals at chosen positions, hovers): yields the ``LeanServer``. One that fails
        (``LspError`` raised inside) is ended, not given back; the error propagates. Raises
        ``WarmUnavailable`` (pool off or full, sandbox refused, the server did not start)."""
        if self.size <= 0:
            raise WarmUnavailable("[lean] warm_servers = 0")
        try:
            w, reused = self._lease(key, spec, unit)
        except LspError as e:
            raise WarmUnavailable(f"the warm server did not start: {e}") from None
        try:
            yield w.server
        except LspError:
            self._discard(w, "restarted")
            raise
        except BaseException:
            self._release(w)
            raise
        self.adm.record(KIND, unit, w.server.rss_mb())
        self._release(w)
        self._event("reused" if reused else "leased", key, str(w.server.pid))

    # -- shutdown ----------------------------------------------------------------------------------
    def _ensure_reaper(self) -> None:
        if self._reaper is not None and self._reaper.is_alive():
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(max(1.0, min(30.0, self.idle_s / 2))):
                self.evict_idle()
                with self._lock:
                    if not self._servers:
                        return

        self._reaper = threading.Thread(target=loop, daemon=True, name="lean-server-reaper")
        self._reaper.start()

    def shutdown(self) -> None:
        """End every server (busy ones too)."""
        self._stop.set()
        with self._lock:
            servers, self._servers = list(self._servers), []
        for w in servers:
            self._end(w, "shutdown")


_POOL = ServerPool()
atexit.register(_POOL.shutdown)


def pool() -> ServerPool:
    """This process's pool."""
    return _POOL


def configure(config) -> ServerPool:
    """Follow ``config`` (a ``LeanSection``: ``warm_servers``, ``warm_idle_s``)."""
    _POOL.configure(config.warm_servers, config.warm_idle_s)
    return _POOL


def shutdown() -> None:
    _POOL.shutdown()


def unit_spec(project, setup, *, scratch: Path | None = None) -> tuple[tuple[str, ...], ServerSpec]:
    """(search path, ``ServerSpec``) of a warm server for ``project``'s units: the project
    package's outputs (the gate's recorded ``.olean`` files of complete units), then the
    dependencies, as ``compile_candidate`` searches them; confined like it (the project and your
    home hidden, the toolchain, the dependencies and ``[lean] sandbox_readable`` readable)."""
    from fyan.lakepackage.package import BUILD_LIB
    from fyan.sandbox.runner import home_dir

    cfg = project.config.lean
    search = [(project.paths.lean / BUILD_LIB).resolve()]
    scratch = scratch or project.paths.workspaces / ".lean-servers"
    hidden = [project.paths.root] + ([home_dir()] if home_dir() is not None else [])
    readable = (project.paths.lean, *setup.readable(), *(Path(p).expanduser() for p in cfg.sandbox_readable))
    spec = ServerSpec(scratch=scratch, extra_env=setup.environment(search), readable=tuple(readable),
                      hidden=tuple(hidden), sandbox=cfg.sandbox, memory_mb=cfg.memory_limit_mb,
                      timeout_s=cfg.build_timeout)
    return tuple(str(p) for p in setup.search_path(search)), spec


def check_unit(project, setup, text: str, *, unit: str | None) -> WarmCheck:
    """Elaborate a unit's candidate ``text`` on this process's pool (``[lean] warm_servers``),
    searching as ``compile_candidate`` does. Raises ``WarmUnavailable``."""
    cfg = project.config.lean
    configure(cfg)
    search, spec = unit_spec(project, setup)
    key = ServerKey(str(setup.lean), setup.githash, search, header_of(text), tuple(setup.options))
    spec.scratch = spec.scratch / key.digest()
    return _POOL.check(key, text, spec, unit=unit)

