"""``fyan run``: run every stage of every unit to quiescence in the foreground (resumable), and
what ``resume`` and the daemon share with it: serving a project and summarising the run."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from fyan import arguments
from fyan.agents.preflight import check_endpoints
from fyan.command_result import CommandResult
from fyan.commands._shared import interrupt_text
from fyan.intake.catalogue import format_warnings
from fyan.daemon import Daemon, DaemonOptions, check_units
from fyan.orchestrator.status import blocked_lines, project_status
from fyan.progress import RunProgress
from fyan.project import Project
from fyan.specifier.report import ingest_details
from fyan.state.store import Store
from fyan.terminal import quoted


DESCRIPTION = """Run every stage of every unit (Reasoner, Planner, semantic audit, Formalizer, completion gate)
to quiescence, in the foreground; Ctrl-C stops, and `fyan resume` continues where it stopped."""


EXIT_CODES = {
    3: "incomplete: the run reached quiescence with blocked units (a replay miss included)",
    4: "bad input: source document, configuration (no model, a missing API key), project folder, cassette",
    5: "refused: another run holds the project lock",
    130: "interrupted by Ctrl-C (SIGINT); 143 stopped by SIGTERM: what was done is kept",
}


def add_unit_options(p: argparse.ArgumentParser) -> None:
    """``--unit`` and ``--parallelism`` (``run``, ``resume``)."""
    p.add_argument("--unit", action="append", help="restrict to this unit and its dependencies (repeatable)")
    p.add_argument("--parallelism", type=arguments.parallelism, help="stage attempts at once (default: [scheduler] parallelism)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    add_unit_options(p)
    p.add_argument("--watch", action="store_true",
                   help="keep running at quiescence, acting on guidance, source and proof edits (Ctrl-C stops)")
    p.add_argument("--json", action="store_true", help="no progress display; print a JSON summary")


class Unit(BaseModel):
    unit: str
    reason: str


class Payload(BaseModel):
    """``fyan run --json``: the run's summary (counts by status and by layer, blocked units with
    their reasons and grouped by root cause, units held after a source change)."""

    model_config = ConfigDict(extra="allow")
    project: str
    units: int
    layers: int
    counts: dict[str, int]
    by_layer: dict[str, dict[str, int]]
    steps: int
    interrupted_resumed: int
    elapsed_s: float
    blocked: list[Unit]
    blocked_groups: list[dict[str, Any]]
    held: list[Unit]
    stopped: str | None
    notes: list[Any]
    ingest: dict[str, Any] | None = None
    interrupted: dict[str, str] | None = None


def announce_ingest(args: argparse.Namespace) -> Callable[[Any], None]:
    """For ``fyan run``/``resume``: when the run ingested the source first (a project made with
    ``--no-ingest``), say so and print intake's warnings on stderr, grouped as ``fyan init``
    prints them (``--json`` lists them under ``ingest.warnings``)."""
    def announce(d: Any) -> None:
        r = d.report
        if r is None or args.json:
            return
        print(format_warnings(r.warnings), end="", file=sys.stderr, flush=True)
        print(f"Ingested {r.source}: {r.units} units, {r.edges} edges, {r.layers} layer(s)\n"
              + ingest_details(r), end="", flush=True)

    return announce


def serve(args: argparse.Namespace, *, until_idle: bool, progress_enabled: bool, dashboard: bool = False,
           port: int | None = None, announce: Callable[[Any], None] | None = None, background: bool = False):
    progress = RunProgress(enabled=progress_enabled)
    options = DaemonOptions(watch=True, until_idle=until_idle, only=set(args.unit) if getattr(args, "unit", None) else None,
                            parallelism=getattr(args, "parallelism", None), dashboard=dashboard, dashboard_port=port,
                            background=background)
    daemon = Daemon(args.dir, options, on_event=progress, on_ready=announce)
    progress.live = daemon.live
    try:
        summary = daemon.serve()
    finally:
        progress.close()
    return daemon, summary


def run_result(args: argparse.Namespace, daemon, summary) -> CommandResult:
    project = daemon.project
    store = Store(project.paths.db)
    try:
        status = project_status(project, store, with_stale=False)
    finally:
        store.close()
    payload = {
        "project": project.name, "units": summary.units, "layers": summary.layers, "counts": summary.counts,
        "by_layer": {str(k): v for k, v in summary.by_layer.items()}, "steps": summary.steps,
        "interrupted_resumed": summary.interrupted, "elapsed_s": summary.elapsed_s,
        "blocked": [{"unit": u, "reason": r} for u, r in summary.blocked],
        "blocked_groups": status.as_payload()["blocked_groups"],
        "held": [{"unit": u, "reason": r} for u, r in summary.held], "stopped": summary.stopped,
        "notes": daemon.notes,
    }
    if daemon.report is not None:  # this run ingested the source first
        payload["ingest"] = daemon.report.model_dump(mode="json")
    lines = [
        f"{project.name}: {summary.units} units in {summary.layers} layer(s); "
        + ", ".join(f"{n} {k}" for k, n in sorted(summary.counts.items()))
        + f" ({summary.steps} stage attempts, {summary.elapsed_s}s)"
    ]
    lines += ["  " + line for line in blocked_lines(status.blocked)]
    if summary.held:
        lines.append(f"  held, stale after a source change ({len(summary.held)}): "
                     + ", ".join(u for u, _ in summary.held[:8]))
    if any(g.cause == "Lean toolchain not found" for g in status.blocked):
        lines.append("Without a Lean toolchain this is the expected end: every stage that needs no Lean ran, and the "
                     "completion gate failed closed. Install Lean and run the same command again: Fyan resumes where "
                     "it stopped (nothing done is redone).")
    if summary.blocked:
        lines.append(f"Details: fyan status {quoted(args.dir)}")
    code = summary.exit_code
    if summary.stopped:  # by a signal: main prints the one interrupt message
        signum = daemon.stop_signal or signal.SIGINT
        code = 128 + int(signum)
        message, hint = interrupt_text(signum, args.command, args.dir)
        payload["interrupted"] = {"signal": signal.Signals(signum).name, "message": message, "hint": hint}
    return CommandResult(code, payload, "\n".join(lines))


def check_model_endpoints(project) -> None:
    """``fyan run``/``resume``: the model servers the run will use accept connections (once,
    before anything runs; ``fyan.agents.preflight.check_endpoints``)."""
    check_endpoints(project, ingested=project.paths.db.exists() and Daemon._has_units(project))


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    check_units(project, args.unit, args.dir)  # an unknown id is refused before anything else
    check_model_endpoints(project)  # clear errors before taking the lock

    daemon, summary = serve(args, until_idle=not args.watch, progress_enabled=not args.json,
                             announce=announce_ingest(args))
    return run_result(args, daemon, summary)

