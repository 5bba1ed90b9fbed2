"""The local web dashboard (Starlette app served by uvicorn), bound to 127.0.0.1 only.

Reading is open to the local machine; the one write — saving guidance for a unit — needs the
token printed when the dashboard starts (form field ``token`` or header ``X-Fyan-Token``,
compared in constant time) and writes exactly one file, ``guidance/<unit>.md`` (the unit must
exist; the file is replaced atomically). A refused save answers with the unit's page again
(HTTP 403), the typed text kept in the form and what to do said above it. The dashboard never
writes the store: the daemon's watcher records the guidance through the gateway. Requests
whose ``Host`` is not the loopback name are refused (a guard against DNS rebinding).

What it shows is ``fyan.orchestrator.status.project_status`` — the same as ``fyan status``: run
liveness from the lock, blocked units grouped by root cause with the remedy, provider outages.
The daemon that serves it hands over its own view (``live``: jobs in flight, outages) — the
dashboard never imports the daemon; ``fyan dashboard`` alone reads the lock and the events.

Pages: ``/`` (counts, outages, blocked causes, the dependency graph by chapter and section,
progress by layer, every unit in a table that sorts and filters), ``/unit/<id>`` (the statement,
stage history, gate report, audit as tables, cost, events, the guidance form); JSON:
``/api/state`` (what ``/`` shows), ``/api/version`` (changes whenever
the state does: the pages poll it and update by themselves); ``/static/`` (the page script and
the vendored graph library).
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from fyan.dashboard import render
from fyan.agents.guidance import write_human
from fyan.orchestrator.live import LiveState
from fyan.orchestrator.status import ProjectStatus, project_status
from fyan.project import Project
from fyan.state.store import Store

HOST = "127.0.0.1"
MAX_GUIDANCE_CHARS = 20_000
STATIC = Path(__file__).with_name("static")


class _State:
    def __init__(self, project: Project, token: str, live: Callable[[], LiveState] | None) -> None:
        self.project = project
        self.token = token
        self.live = live
        self.store = Store(project.paths.db)
        self._stale: tuple[str, dict[str, str]] | None = None
        self._status: tuple[str, ProjectStatus] | None = None
        self._lock = threading.Lock()

    def views(self):
        if not self.store.exists:
            return {}
        return self.store.views(self.project.config.scheduler.attempts_per_stage)

    def stale(self) -> dict[str, str]:
        from fyan.orchestrator import staleness

        if not self.store.exists:
            return {}
        digest = staleness.source_digest(self.project, staleness.recorded_files(self.store))
        with self._lock:
            if self._stale is None or self._stale[0] != digest:
                self._stale = (digest, staleness.check(self.project, self.store).stale)
            return self._stale[1]

    def status(self) -> ProjectStatus:
        live = None
        if self.live is not None:
            try:
                live = self.live()
            except Exception:  # a snapshot taken while the loop changes: fall back to the store
                live = None
        # one computation per recorded state: the page and its first /api/state share it
        # (``version`` changes with every transition, the run starting or stopping, outages)
        key = self.version()
        with self._lock:
            cached = self._status if self._status is not None and self._status[0] == key else None
        if cached is not None and live is None:
            status = cached[1]
        else:
            status = project_status(self.project, self.store, live, with_stale=False)
            with self._lock:
                self._status = (key, status)
        if status.ingested:
            status.stale = self.stale()
            for u in status.units:
                u["stale"] = status.stale.get(u["id"])
        return status

    def version(self) -> str:
        """Changes whenever what the pages show may have: a new event (every transition
        writes one), the run starting or stopping, an outage changing."""
        from fyan.orchestrator.lock import lock_holder

        last = self.store.last_event_id() if self.store.exists else 0
        alive = self.live is not None or lock_holder(self.project.paths.state) is not None
        outages = ""
        if self.live is not None:
            try:
                outages = ",".join(f"{o.provider}@{o.next_try:.0f}" for o in self.live().outages)
            except Exception:
                outages = ""
        return f"{last}:{int(alive)}:{outages}"

    def costs(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.store.exists:
            for c in self.store.model_calls():
                out[c.unit or "-"] = out.get(c.unit or "-", 0.0) + c.cost
        return out


def _read_json(path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_text(path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


_MACROS: dict[str, tuple[int, dict[str, str]]] = {}


def document_macros(store) -> dict[str, str]:
    """The document's macros for the unit page's math (``render.katex_macros`` of the recorded
    catalogue's ``macros``), decoded once per recorded catalogue (cached by its hash)."""
    raw = store.meta("catalogue") or ""
    key = str(store.db)
    cached = _MACROS.get(key)
    if cached is not None and cached[0] == hash(raw):
        return cached[1]
    try:
        macros = render.katex_macros(json.loads(raw).get("macros", []) if raw else [])
    except (ValueError, AttributeError):
        macros = {}
    _MACROS[key] = (hash(raw), macros)
    return macros


def build_app(project: Project, token: str, live: Callable[[], LiveState] | None = None) -> Starlette:
    """The dashboard app of ``project``; ``live``: the serving run's own view, if any."""
    state = _State(project, token, live)

    async def index(request: Request) -> Response:
        return HTMLResponse(render.overview(state.status(), state.costs()))

    async def api_state(request: Request) -> Response:
        payload = state.status().as_payload()
        payload["run_text"] = render.run_text(payload["run"], payload["root"], payload["counts"].get("interrupted", 0))
        payload["version"] = state.version()
        payload["now"] = time.time()
        return JSONResponse(payload)

    async def api_version(request: Request) -> Response:
        return JSONResponse({"version": state.version()})

    def unit_response(uid: str, *, guidance_text: str | None = None, saved: bool = False,
                      token_error: bool = False, status_code: int = 200) -> Response:
        view = state.views().get(uid)
        if view is None:
            return PlainTextResponse(f"no unit {uid!r}", status_code=404)
        shown = next((u for u in state.status().units if u["id"] == uid), None)
        udir = project.paths.unit(uid)
        gpath = project.paths.guidance / f"{uid}.md"
        if guidance_text is None:
            guidance_text = gpath.read_text(encoding="utf-8", errors="replace") if gpath.is_file() else ""
        return HTMLResponse(render.unit_page(
            project.name, view, shown, state.store.runs(uid), _read_json(udir / "gate" / "report.json"),
            _read_json(udir / "audit" / "record.json"), _read_json(udir / "audit" / "result.json"),
            state.store.model_calls(uid), state.store.events(uid, limit=500), guidance_text,
            state.stale().get(uid), saved, token_error, _read_text(udir / "problem.tex"),
            _read_text(udir / "source_proof.tex"), lean={
                "statement": _read_text(udir / "Statement.lean"), "proof": _read_text(udir / "Basic.lean"),
                "freezes": [f.model_dump() for f in state.store.freezes(uid)],
                "iterations": _read_json(udir / "iterations.json")}, macros=document_macros(state.store)),
            status_code=status_code)

    async def unit(request: Request) -> Response:
        return unit_response(request.path_params["unit"], saved=request.query_params.get("saved") == "1")

    async def save_guidance(request: Request) -> Response:
        form = await request.form()
        given = request.headers.get("x-fyan-token") or str(form.get("token") or "")
        uid = str(form.get("unit") or "")
        text = str(form.get("text") or "")
        units = {u.id for u in state.store.units()} if state.store.exists else set()
        if not given or not hmac.compare_digest(given.encode(), state.token.encode()):
            if uid in units:  # the page again, the typed text kept, and what to do
                return unit_response(uid, guidance_text=text, token_error=True, status_code=403)
            return PlainTextResponse("refused: a valid token is required to write (printed when the dashboard started)",
                                     status_code=403)
        if uid not in units:
            return PlainTextResponse(f"no unit {uid!r}", status_code=404)
        if len(text) > MAX_GUIDANCE_CHARS:
            return PlainTextResponse(f"guidance is limited to {MAX_GUIDANCE_CHARS} characters", status_code=413)
        write_human(project, uid, text)
        return RedirectResponse(f"/unit/{uid}?saved=1", status_code=303)

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", index), Route("/favicon.ico", favicon), Route("/api/state", api_state), Route("/api/version", api_version),
        Route("/unit/{unit}", unit), Route("/guidance", save_guidance, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, middleware=[
        Middleware(TrustedHostMiddleware, allowed_hosts=[HOST, "localhost"])])


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def make_server(project: Project, port: int, token: str | None = None, live: Callable[[], LiveState] | None = None):
    """(uvicorn server, bound socket, url, token); the socket is bound to 127.0.0.1 only, on
    ``port`` or, when that port is taken, on any free port (the url says which, and the
    server's ``port_note`` says that it moved and why; None when it did not)."""
    import uvicorn

    token = token or secrets.token_urlsafe(24)
    note = None
    try:
        sock = _bind(port)
    except OSError as e:
        if port == 0:
            raise
        sock = _bind(0)  # the configured port is taken (another project's daemon?): any free port
        note = (f"port {port} is not free on {HOST} ({e.strerror or e}: another dashboard or program uses it); "
                f"serving on port {sock.getsockname()[1]} instead (--port or [dashboard] port chooses one)")
    config = uvicorn.Config(build_app(project, token, live), log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    server.port_note = note  # type: ignore[attr-defined]  # uvicorn's Server has no field for it
    url = f"http://{HOST}:{sock.getsockname()[1]}/"
    return server, sock, url, token


def start_in_thread(project: Project, port: int, token: str | None = None, live: Callable[[], LiveState] | None = None):
    """Serve in a daemon thread; returns (server, url, token). ``server.should_exit = True``
    stops it. ``live``: the serving run's own view (``Daemon.live``)."""
    server, sock, url, token = make_server(project, port, token, live)
    thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True, name="fyan-dashboard")
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    return server, url, token
