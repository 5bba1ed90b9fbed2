"""The local web dashboard (Starlette app served by uvicorn), bound to 127.0.0.1 only.

Reading is open to the local machine; the one write — saving guidance for a unit — needs the
token printed when the dashboard starts (form field ``token`` or header ``X-Fyan-Token``,
compared in constant time) and writes exactly one file, ``guidance/<unit>.md`` (the unit must
exist; the file is replaced atomically). The dashboard never writes the store: the daemon's
watcher records the guidance through the gateway. Requests whose ``Host`` is not the loopback
name are refused (a guard against DNS rebinding).

Pages: ``/`` (progress by layer, units blockers first, the DAG as SVG), ``/unit/<id>`` (stage
history, gate report, audit record and result, cost, events, the guidance form),
``/api/state`` (JSON), ``/dag.svg``.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import tempfile
import threading
import time
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from fyan.dashboard import render
from fyan.project import Project
from fyan.state.store import Store

HOST = "127.0.0.1"
MAX_GUIDANCE_CHARS = 20_000


class _State:
    def __init__(self, project: Project, token: str) -> None:
        self.project = project
        self.token = token
        self.store = Store(project.paths.db)
        self._stale: tuple[str, dict[str, str]] | None = None
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


def build_app(project: Project, token: str) -> Starlette:
    state = _State(project, token)

    async def index(request: Request) -> Response:
        from fyan.orchestrator.daemon import read_state

        refresh = request.query_params.get("refresh")
        views = state.views()
        return HTMLResponse(render.overview(project.name, views, state.stale(), state.costs(), read_state(project),
                                            int(refresh) if refresh and refresh.isdigit() else None))

    async def dag(request: Request) -> Response:
        return Response(render.dag_svg(state.views(), state.stale()), media_type="image/svg+xml")

    async def api_state(request: Request) -> Response:
        views = state.views()
        stale = state.stale()
        return JSONResponse({"project": project.name, "units": [
            {"id": v.unit.id, "layer": v.unit.layer, "status": v.status.value, "reason": v.reason,
             "stage": v.next_stage.value if v.next_stage else None, "depends_on": v.depends_on,
             "stale": stale.get(v.unit.id)} for v in views.values()]})

    async def unit(request: Request) -> Response:
        uid = request.path_params["unit"]
        views = state.views()
        view = views.get(uid)
        if view is None:
            return PlainTextResponse(f"no unit {uid!r}", status_code=404)
        udir = project.paths.unit(uid)
        gpath = project.paths.guidance / f"{uid}.md"
        return HTMLResponse(render.unit_page(
            project.name, view, state.store.runs(uid), _read_json(udir / "gate" / "report.json"),
            _read_json(udir / "audit" / "record.json"), _read_json(udir / "audit" / "result.json"),
            state.store.model_calls(uid), state.store.events(uid, limit=500),
            gpath.read_text(encoding="utf-8", errors="replace") if gpath.is_file() else "",
            state.stale().get(uid), request.query_params.get("saved") == "1"))

    async def save_guidance(request: Request) -> Response:
        form = await request.form()
        given = request.headers.get("x-fyan-token") or str(form.get("token") or "")
        if not given or not hmac.compare_digest(given.encode(), state.token.encode()):
            return PlainTextResponse("refused: a valid token is required to write (printed when the dashboard started)",
                                     status_code=403)
        uid = str(form.get("unit") or "")
        text = str(form.get("text") or "")
        units = {u.id for u in state.store.units()} if state.store.exists else set()
        if uid not in units:
            return PlainTextResponse(f"no unit {uid!r}", status_code=404)
        if len(text) > MAX_GUIDANCE_CHARS:
            return PlainTextResponse(f"guidance is limited to {MAX_GUIDANCE_CHARS} characters", status_code=413)
        folder = project.paths.guidance
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{uid}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text.replace("\r\n", "\n").rstrip() + "\n")
        os.replace(tmp, folder / f"{uid}.md")
        return RedirectResponse(f"/unit/{uid}?saved=1", status_code=303)

    routes = [
        Route("/", index), Route("/dag.svg", dag), Route("/api/state", api_state),
        Route("/unit/{unit}", unit), Route("/guidance", save_guidance, methods=["POST"]),
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


def make_server(project: Project, port: int, token: str | None = None):
    """(uvicorn server, bound socket, url, token); the socket is bound to 127.0.0.1 only, on
    ``port`` or, when that port is taken, on any free port (the url says which)."""
    import uvicorn

    token = token or secrets.token_urlsafe(24)
    try:
        sock = _bind(port)
    except OSError:
        if port == 0:
            raise
        sock = _bind(0)  # the configured port is taken (another project's daemon?): any free port
    config = uvicorn.Config(build_app(project, token), log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    url = f"http://{HOST}:{sock.getsockname()[1]}/"
    return server, sock, url, token


def start_in_thread(project: Project, port: int, token: str | None = None):
    """Serve in a daemon thread; returns (server, url, token). ``server.should_exit = True``
    stops it."""
    server, sock, url, token = make_server(project, port, token)
    thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True, name="fyan-dashboard")
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    return server, url, token
