"""``fyan daemon``: start, stop or inspect the background daemon of a project."""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from fyan import arguments
from fyan.command_result import CommandResult
from fyan.commands.run import announce_ingest, run_result, serve
from fyan.errors import ExitCode
from fyan import daemon as d
from fyan.orchestrator.status import project_status
from fyan.project import Project
from fyan.state.store import Store
from fyan.terminal import quoted


DESCRIPTION = """Start, stop or inspect the background daemon of a project: it runs the project as `fyan run
--watch` does and serves the dashboard; `serve` is the daemon process itself."""


EXIT_CODES = {
    4: "bad input: configuration, project folder",
    5: "refused: another run holds the project lock",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["start", "stop", "status", "serve"],
                   help="start (in the background), stop (SIGTERM, waits), status; serve = the daemon process itself")
    p.add_argument("dir", help="project folder")
    p.add_argument("--no-dashboard", action="store_true", help="do not serve the dashboard")
    p.add_argument("--port", type=arguments.port, help="dashboard port on 127.0.0.1 (default: [dashboard] port; 0 = any)")
    p.add_argument("--parallelism", type=arguments.parallelism, help="stage attempts at once (default: [scheduler] parallelism)")
    p.add_argument("--timeout", type=arguments.seconds, default=60.0, help="stop: seconds to wait for the daemon to exit")
    p.add_argument("--json", action="store_true", help="print JSON")


class Payload(BaseModel):
    """``fyan daemon ... --json``: start: the daemon's state (pid, log, dashboard URL and write
    token); stop: whether it was running and stopped; status: running, holder, counts, outages."""

    model_config = ConfigDict(extra="allow")
    pid: int | None = None
    running: bool | None = None


def run(args: argparse.Namespace) -> CommandResult:
    if args.action == "serve":  # the background process itself (started by `daemon start`)
        ingested = announce_ingest(args)  # its stdout and stderr are .fyan/logs/daemon.log

        def announce(dm) -> None:
            print(f"fyan daemon pid {os.getpid()} serving {dm.project.paths.root}"
                  + (f"; dashboard {dm.dashboard_url} (write token in .fyan/daemon.json)" if dm.dashboard_url else "")
                  + (f"\n{dm.dashboard_note}" if dm.dashboard_note else ""),
                  flush=True)
            ingested(dm)

        args.unit = None
        dm, summary = serve(args, until_idle=False, progress_enabled=True, dashboard=not args.no_dashboard,
                             port=args.port, announce=announce, background=True)
        return run_result(args, dm, summary)
    project = Project.open(args.dir)
    if args.action == "start":
        state = d.start_background(args.dir, dashboard=not args.no_dashboard, port=args.port,
                                   parallelism=args.parallelism)
        text = f"Fyan daemon started on {project.name} (pid {state['pid']}); log {state['log']}"
        if state.get("dashboard"):
            text += f"\nDashboard: {state['dashboard']}  (write token: {state['token']})"
            if state.get("dashboard_note"):
                text += f"\n  {state['dashboard_note']}"
        text += f"\nStop it with: fyan daemon stop {quoted(args.dir)}"
        return CommandResult(ExitCode.OK, state, text)
    if args.action == "stop":
        result = d.stop_background(args.dir, wait_s=args.timeout)
        if not result["running"] and not result["stopped"]:
            return CommandResult(ExitCode.OK, result, f"No Fyan daemon is running on {project.name}.")
        return CommandResult(ExitCode.OK, result, f"Fyan daemon pid {result['pid']} stopped; "
                                                 f"`fyan daemon start {quoted(args.dir)}` resumes.")
    return daemon_status(project)


def daemon_status(project) -> CommandResult:
    store = Store(project.paths.db)
    try:
        status = project_status(project, store, with_stale=False)
    finally:
        store.close()
    run = status.run
    state = d.read_state(project) if run["alive"] else None
    payload: dict[str, Any] = {"running": run["alive"], "holder": run.get("holder")}
    if state:
        payload.update({k: state.get(k) for k in ("pid", "started", "dashboard", "token", "log")})
    payload["ingest"] = status.ingest
    if status.ingested:
        payload["counts"] = status.counts
    payload["providers"] = status.outages
    if not run["alive"]:
        text = f"No Fyan daemon is running on {project.name}."
    elif state is None or not run.get("daemon"):
        text = (f"{project.name} is locked by a foreground `fyan run` ({run['holder']}); "
                "Ctrl-C in its terminal stops it.")
    else:
        text = (f"Fyan daemon running on {project.name}: pid {state['pid']} since "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(state['started']))}")
        if state.get("dashboard"):
            text += f"\nDashboard: {state['dashboard']}  (write token: {state['token']})"
    if payload.get("counts"):
        text += "\nUnits: " + ", ".join(f"{n} {k}" for k, n in sorted(payload["counts"].items()))
        if payload["counts"].get("interrupted"):
            text += " (interrupted attempts resume on the next run)"
    if not status.ingested:
        text += f"\n{project.name}: {status.ingest['text']}"
    for o in status.outages:
        text += f"\n{o['text']}"
    return CommandResult(ExitCode.OK, payload, text)

