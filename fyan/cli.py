"""The ``fyan`` command line.

Every command is a function that returns a ``CommandResult`` (exit code, JSON payload, human
text); ``--json`` prints the payload instead of the text, so machine use is never an
afterthought. Errors Fyan expects (``FyanError``) print their message and hint and exit with
the code of their class; anything else is a bug (exit 1, traceback in the project log).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fyan import __version__, logs
from fyan.errors import ExitCode, FyanError, InputError, ProjectError

EPILOG = """exit codes:
  0  success (for `run`: every unit complete)
  1  internal error (a bug; see .fyan/logs/fyan.jsonl)
  2  bad command line
  3  incomplete: the run reached quiescence with blocked units, the gate failed,
     or `doctor` found something needed missing
  4  bad input: source document, configuration, project folder or replay cassette
  5  refused: an illegal state transition, or another run holds the project lock

A Lean toolchain is needed to complete units (install elan, then `elan default stable`).
Without one, Fyan runs every stage it can and blocks units at the completion gate."""


@dataclass
class CommandResult:
    code: ExitCode = ExitCode.OK
    payload: dict[str, Any] = field(default_factory=dict)
    text: str = ""


# -- init ------------------------------------------------------------------------------------

FYAN_TOML = """# Fyan project configuration. Every key, its default and its meaning:
# config/fyan.example.toml in the Fyan repository.

[project]
name = {name}
source = {source}

{intake}[agents.default]
# "replay" serves recorded responses from replay/cassette.jsonl; for a live model use
# provider = "anthropic" (ANTHROPIC_API_KEY) or "openai" (OPENAI_API_KEY), with model = "...".
provider = "replay"
model = "example-authored"
"""


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def cmd_init(args: argparse.Namespace) -> CommandResult:
    from fyan.intake import DEFAULT_MAX_FILE_MIB, read_source
    from fyan.project import Project
    from fyan.specifier.ingest import ingest
    from fyan.state.gateway import Gateway

    target = Path(args.dir)
    source = Path(args.source)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ProjectError(f"{target}: exists and is not empty", hint="choose a new folder for the project")
    try:
        limit = float(os.environ.get("FYAN_INTAKE__MAX_FILE_MIB", DEFAULT_MAX_FILE_MIB))
    except ValueError:
        raise InputError("FYAN_INTAKE__MAX_FILE_MIB is not a number", hint="give a size in MiB, e.g. 64") from None
    catalogue = read_source(source, max_file_mib=limit)  # fails before anything is created
    name = args.name or target.resolve().name
    main_dir = source.resolve().parent
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.init-", dir=target.resolve().parent))
    try:
        for rel in catalogue.files:
            src = main_dir / rel
            dest = tmp / "source" / rel
            if ".." in Path(rel).parts or Path(rel).is_absolute():
                raise InputError(f"{rel}: included from outside the main file's folder {main_dir}",
                                 hint="give the main file at the root of the source tree")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
        intake = ""
        if args.unknown_references:
            intake = f"[intake]\nunknown_references = {_toml_str(args.unknown_references)}\n\n"
        (tmp / "fyan.toml").write_text(
            FYAN_TOML.format(name=_toml_str(name), source=_toml_str(f"source/{catalogue.main_file}"), intake=intake),
            encoding="utf-8",
        )
        report = None
        if not args.no_ingest:
            project = Project.open(tmp)
            gateway = Gateway(project)
            try:
                report = ingest(project, gateway, catalogue)  # the source as read above, now copied
            finally:
                gateway.close()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a project folder is not
        if target.exists():
            target.rmdir()
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if report is None:
        return CommandResult(ExitCode.OK, {"project": str(target), "ingested": False, "statements": len(catalogue.statements)},
                             f"Created project {target} ({len(catalogue.statements)} theorem-like statements); not ingested yet.\n"
                             f"Edit {target / 'fyan.toml'} (providers, [intake] specifier), then: fyan run {target}")
    shown = report.warnings[:10]
    more = len(report.warnings) - len(shown)
    errors = sum(f.severity == "error" for f in report.findings)
    text = (
        f"Created project {target} from {report.format.upper() if report.format == 'pdf' else report.format} "
        f"source: {report.statements} theorem-like statements in {len(report.files)} file(s), "
        f"{report.units} units, {report.edges} dependency edges, {report.layers} layer(s).\n"
        + "".join(f"  warning: {w}\n" for w in shown)
        + (f"  ... and {more} more warning(s) (--json lists them all)\n" if more > 0 else "")
        + (f"  problem.tex lints: {len(report.findings)} finding(s), {errors} error(s)\n" if report.findings else "")
        + "".join(f"    {f}\n" for f in report.findings[:10])
        + f"Next: fyan run {target}"
    )
    return CommandResult(ExitCode.OK, {"project": str(target), **report.model_dump(mode="json")}, text)


# -- run -------------------------------------------------------------------------------------

class _Progress:
    """Live progress: a rich display on a terminal, one line per event otherwise."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stdout.isatty()
        self.lock = threading.Lock()
        self.live = None
        if enabled and self.tty:
            from rich.live import Live

            self.live = Live(refresh_per_second=4, transient=True)
            self.live.start()

    def __call__(self, event, views) -> None:
        if not self.enabled:
            return
        with self.lock:
            if self.live is not None:
                self.live.update(self._table(views))
                if event.status in ("succeeded", "failed", "note", "interrupted", "critic"):
                    self.live.console.print(self._line(event))
            elif event.status != "started":
                print(self._line(event), flush=True)

    @staticmethod
    def _line(event) -> str:
        if event.status == "note":
            return f"{time.strftime('%H:%M:%S')}  {event.reason}"[:300]
        stage = getattr(event.stage, "value", event.stage)
        reason = f" — {event.reason}" if event.reason and event.status != "succeeded" else ""
        return f"{time.strftime('%H:%M:%S')}  {stage:<6} {event.unit:<40} {event.status}{reason}"[:300]

    @staticmethod
    def _table(views):
        from rich.table import Table

        layers: dict[int, list] = {}
        for v in views.values():
            layers.setdefault(v.unit.layer, []).append(v)
        done = sum(v.status.value == "complete" for v in views.values())
        t = Table(title=f"fyan run: {done}/{len(views)} units complete", expand=False)
        t.add_column("layer")
        t.add_column("done/total", justify="right")
        t.add_column("ready", justify="right")
        t.add_column("blocked", justify="right")
        t.add_column("running (unit: stage)")
        for layer, vs in sorted(layers.items()):
            running = [f"{v.unit.id}: {v.next_stage.value if v.next_stage else ''}" for v in vs if v.status.value == "running"]
            t.add_row(str(layer), f"{sum(v.status.value == 'complete' for v in vs)}/{len(vs)}",
                      str(sum(v.status.value == "ready" for v in vs)), str(sum(v.status.value == "blocked" for v in vs)),
                      ", ".join(running)[:100])
        return t

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


def _serve(args: argparse.Namespace, *, until_idle: bool, progress_enabled: bool, dashboard: bool = False,
           port: int | None = None, announce: Callable[[Any], None] | None = None):
    from fyan.orchestrator.daemon import Daemon, DaemonOptions

    progress = _Progress(0, enabled=progress_enabled)
    options = DaemonOptions(watch=True, until_idle=until_idle, only=set(args.unit) if getattr(args, "unit", None) else None,
                            parallelism=getattr(args, "parallelism", None), dashboard=dashboard, dashboard_port=port)
    daemon = Daemon(args.dir, options, on_event=progress, on_ready=announce)
    try:
        summary = daemon.serve()
    finally:
        progress.close()
    return daemon, summary


def _run_result(args: argparse.Namespace, daemon, summary) -> CommandResult:
    project = daemon.project
    payload = {
        "project": project.name, "units": summary.units, "layers": summary.layers, "counts": summary.counts,
        "by_layer": {str(k): v for k, v in summary.by_layer.items()}, "steps": summary.steps,
        "interrupted_resumed": summary.interrupted, "elapsed_s": summary.elapsed_s,
        "blocked": [{"unit": u, "reason": r} for u, r in summary.blocked],
        "held": [{"unit": u, "reason": r} for u, r in summary.held], "stopped": summary.stopped,
        "notes": daemon.notes,
    }
    lines = [
        f"{project.name}: {summary.units} units in {summary.layers} layer(s); "
        + ", ".join(f"{n} {k}" for k, n in sorted(summary.counts.items()))
        + f" ({summary.steps} stage attempts, {summary.elapsed_s}s)"
    ]
    reasons: dict[str, list[str]] = {}
    for unit, reason in summary.blocked:
        reasons.setdefault(_root_reason(reason), []).append(unit)
    for reason, units in reasons.items():
        lines.append(f"  blocked ({len(units)}): {reason}")
        lines.append("    " + ", ".join(units[:8]) + (f", ... (+{len(units) - 8})" if len(units) > 8 else ""))
    if summary.held:
        lines.append(f"  held, stale after a source change ({len(summary.held)}): "
                     + ", ".join(u for u, _ in summary.held[:8]))
    if summary.blocked:
        lines.append(f"Details: fyan status {args.dir}")
    code = summary.exit_code
    if summary.stopped:
        lines.append(f"{summary.stopped}: attempts in progress were recorded as interrupted; "
                     f"`fyan resume {args.dir}` continues")
        code = ExitCode.INCOMPLETE if code != ExitCode.OK else code
    return CommandResult(code, payload, "\n".join(lines))


def cmd_run(args: argparse.Namespace) -> CommandResult:
    from fyan.project import Project

    Project.open(args.dir)  # clear error before taking the lock

    def announce(d) -> None:
        if d.report is not None and not args.json:
            r = d.report
            print(f"Ingested {r.source}: {r.units} units, {r.edges} edges, {r.layers} layer(s)", flush=True)

    daemon, summary = _serve(args, until_idle=not args.watch, progress_enabled=not args.json, announce=announce)
    return _run_result(args, daemon, summary)


# -- resume ----------------------------------------------------------------------------------

def cmd_resume(args: argparse.Namespace) -> CommandResult:
    from fyan.orchestrator.resume import explain, plan
    from fyan.project import Project

    project = Project.open(args.dir)
    p = plan(project, args.parallelism)
    text = explain(p)
    if args.dry_run or p.get("locked_by"):
        code = ExitCode.STATE if p.get("locked_by") else ExitCode.OK
        return CommandResult(code, {"plan": p, "dry_run": args.dry_run}, text)
    if not args.json:
        print(text, flush=True)
    daemon, summary = _serve(args, until_idle=True, progress_enabled=not args.json)
    result = _run_result(args, daemon, summary)
    result.payload = {"plan": p, **result.payload}
    return result


# -- daemon ----------------------------------------------------------------------------------

def cmd_daemon(args: argparse.Namespace) -> CommandResult:
    from fyan.orchestrator import daemon as d
    from fyan.project import Project

    if args.action == "serve":  # the background process itself (started by `daemon start`)
        def announce(dm) -> None:
            print(f"fyan daemon pid {os.getpid()} serving {dm.project.paths.root}"
                  + (f"; dashboard {dm.dashboard_url} (write token in .fyan/daemon.json)" if dm.dashboard_url else ""),
                  flush=True)

        args.unit = None
        dm, summary = _serve(args, until_idle=False, progress_enabled=True, dashboard=not args.no_dashboard,
                             port=args.port, announce=announce)
        return _run_result(args, dm, summary)
    project = Project.open(args.dir)
    if args.action == "start":
        state = d.start_background(args.dir, dashboard=not args.no_dashboard, port=args.port,
                                   parallelism=args.parallelism)
        text = f"Fyan daemon started on {project.name} (pid {state['pid']}); log {state['log']}"
        if state.get("dashboard"):
            text += f"\nDashboard: {state['dashboard']}  (write token: {state['token']})"
        text += f"\nStop it with: fyan daemon stop {args.dir}"
        return CommandResult(ExitCode.OK, state, text)
    if args.action == "stop":
        result = d.stop_background(args.dir, wait_s=args.timeout)
        if not result["running"] and not result["stopped"]:
            return CommandResult(ExitCode.OK, result, f"No Fyan daemon is running on {project.name}.")
        return CommandResult(ExitCode.OK, result, f"Fyan daemon pid {result['pid']} stopped; "
                                                 f"`fyan daemon start {args.dir}` resumes.")
    holder = d.lock_holder(project)
    state = d.read_state(project) if holder else None
    payload: dict[str, Any] = {"running": holder is not None, "holder": holder}
    if state:
        payload.update({k: state.get(k) for k in ("pid", "started", "dashboard", "token", "log")})
    from fyan.state.store import Store

    store = Store(project.paths.db)
    if store.exists:
        views = store.views(project.config.scheduler.attempts_per_stage)
        counts: dict[str, int] = {}
        for v in views.values():
            counts[v.status.value] = counts.get(v.status.value, 0) + 1
        payload["counts"] = counts
        store.close()
    if holder is None:
        text = f"No Fyan daemon is running on {project.name}."
    elif state is None:
        text = f"{project.name} is locked by a foreground run ({holder})."
    else:
        text = (f"Fyan daemon running on {project.name}: pid {state['pid']} since "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(state['started']))}")
        if state.get("dashboard"):
            text += f"\nDashboard: {state['dashboard']}  (write token: {state['token']})"
    if payload.get("counts"):
        text += "\nUnits: " + ", ".join(f"{n} {k}" for k, n in sorted(payload["counts"].items()))
    return CommandResult(ExitCode.OK, payload, text)


# -- dashboard -------------------------------------------------------------------------------

def cmd_dashboard(args: argparse.Namespace) -> CommandResult:
    from fyan.dashboard.server import make_server
    from fyan.project import Project

    project = Project.open(args.dir)
    port = project.config.dashboard.port if args.port is None else args.port
    server, sock, url, token = make_server(project, port)
    print(f"Fyan dashboard for {project.name}: {url}\nWrite token (needed to save guidance): {token}\n"
          "Ctrl-C stops it.", flush=True)
    server.run(sockets=[sock])
    return CommandResult(ExitCode.OK, {"url": url}, "dashboard stopped")


def _root_reason(reason: str) -> str:
    """Group 'dependency X is blocked: R' under R."""
    while reason.startswith("dependency ") and " is blocked: " in reason:
        reason = reason.split(" is blocked: ", 1)[1]
    return reason


# -- status ----------------------------------------------------------------------------------

def cmd_status(args: argparse.Namespace) -> CommandResult:
    from fyan.project import Project
    from fyan.state.store import Store

    project = Project.open(args.dir)
    store = Store(project.paths.db)
    if not store.exists:
        return CommandResult(ExitCode.OK, {"project": project.name, "units": [], "ingested": False},
                             f"{project.name}: not ingested yet. Next: fyan run {args.dir}")
    views = store.views(project.config.scheduler.attempts_per_stage)
    post: dict[str, dict[str, str]] = {}
    for p in store.post_runs():  # latest run of each post-completion task (never affects status)
        post.setdefault(p.unit, {})[p.task] = p.status.value
    units = [
        {
            "id": v.unit.id, "kind": v.unit.kind, "label": v.unit.label, "layer": v.unit.layer,
            "provenance": v.unit.provenance, "status": v.status.value,
            "stage": v.next_stage.value if v.next_stage else None, "reason": v.reason,
            "depends_on": v.depends_on, "attempts": v.attempts, "after_completion": post.get(v.unit.id, {}),
        }
        for v in views.values()
    ]
    counts: dict[str, int] = {}
    for u in units:
        counts[u["status"]] = counts.get(u["status"], 0) + 1
    payload: dict[str, Any] = {"project": project.name, "ingested": True, "counts": counts, "units": units}
    if args.cost:
        payload["cost"] = _cost(store)
    from fyan.orchestrator import staleness

    stale = staleness.check(project, store)
    payload["stale"] = stale.stale
    store.close()
    text = _status_text(project.name, units, counts, payload.get("cost"))
    if stale.stale:
        text += (f"\nThe source changed since intake: {len(stale.stale)} unit(s) are stale (reported, never re-run):\n"
                 + "\n".join(f"  {u}: {why}" for u, why in list(stale.stale.items())[:20]))
    return CommandResult(ExitCode.OK, payload, text)


def _cost(store) -> dict[str, Any]:
    """Model usage summed per stage, per unit and in total (tokens, USD, calls, replayed,
    cache hits), with the models the pricing table does not price."""
    from fyan.agents.pricing import is_priced

    def row() -> dict[str, Any]:
        return {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "replayed": 0, "cache_hits": 0, "latency_s": 0.0}

    by_stage: dict[str, dict[str, Any]] = {}
    by_unit: dict[str, dict[str, Any]] = {}
    total = row()
    unpriced: set[str] = set()
    for c in store.model_calls():
        if not c.replay and c.provider != "command" and not is_priced(c.model):
            unpriced.add(c.model)
        for r in (by_stage.setdefault(c.stage, row()), by_unit.setdefault(c.unit or "(project)", row()), total):
            r["calls"] += 1
            r["tokens_in"] += c.tokens_in
            r["tokens_out"] += c.tokens_out
            r["cost_usd"] = round(r["cost_usd"] + c.cost, 9)
            r["replayed"] += int(c.replay)
            r["cache_hits"] += int(c.cache_hit and not c.replay)
            r["latency_s"] = round(r["latency_s"] + c.latency_s, 3)
    return {"by_stage": by_stage, "by_unit": by_unit, "total": total, "unpriced_models": sorted(unpriced)}


def _status_text(name: str, units: list[dict], counts: dict[str, int], cost: dict | None) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    order = {"blocked": 0, "running": 1, "ready": 2, "waiting": 3, "complete": 4}
    table = Table(title=f"{name}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    for col in ("unit", "layer", "kind", "status", "stage", "reason"):
        table.add_column(col, overflow="fold")
    for u in sorted(units, key=lambda u: (order.get(u["status"], 9), u["layer"])):
        table.add_row(u["id"], str(u["layer"]), u["kind"], u["status"], u["stage"] or "-", escape((u["reason"] or "")[:200]))
    buf = StringIO()
    console = Console(file=buf, width=max(100, shutil.get_terminal_size((140, 20)).columns), force_terminal=False)
    console.print(table)
    if cost:
        for key, title in (("by_stage", "stage"), ("by_unit", "unit")):
            ct = Table(title=f"model usage by {title}")
            for col in (title, "calls", "tokens in", "tokens out", "cost (USD)", "replayed", "cache hits"):
                ct.add_column(col)
            for name, row in list(cost[key].items()) + [("total", cost["total"])]:
                ct.add_row(name, str(row["calls"]), str(row["tokens_in"]), str(row["tokens_out"]), f"{row['cost_usd']:.4f}",
                           str(row["replayed"]), str(row["cache_hits"]))
            console.print(ct)
        if cost["unpriced_models"]:
            console.print("not in config/pricing.toml (counted as 0 USD): " + ", ".join(cost["unpriced_models"]))
    return buf.getvalue().rstrip()


# -- gate ------------------------------------------------------------------------------------

def cmd_gate(args: argparse.Namespace) -> CommandResult:
    from fyan.gates.completion import report_json, report_text, run_gate
    from fyan.project import Project
    from fyan.state.store import Store

    project = Project.open(args.dir)
    store = Store(project.paths.db)
    unit = store.unit(args.unit) if store.exists else None
    if unit is None:
        raise ProjectError(f"{args.dir}: no unit {args.unit!r}", hint=f"list units with `fyan status {args.dir}`")
    # build/probe logs and the report of a manual run are kept (they are not stage state)
    log_dir = project.paths.logs / "gate" / f"{unit.id}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    report = run_gate(project, store, unit, log_dir)
    store.close()
    (log_dir / "report.json").write_bytes(report_json(report))
    code = ExitCode.OK if report.passed else ExitCode.INCOMPLETE
    return CommandResult(code, report.model_dump(mode="json"), report_text(report))


# -- doctor ----------------------------------------------------------------------------------

def cmd_doctor(args: argparse.Namespace) -> CommandResult:
    from fyan.doctor import diagnose, render
    from fyan.project import Project

    project = Project.open(args.dir) if args.dir else None
    if args.worker:  # issue 14: may this node advertise the `lean` resource on a Ray cluster?
        from fyan.config import FyanConfig
        from fyan.executor.workercheck import check_worker, render_worker

        # without a project: the defaults with this machine's FYAN_LEAN__* settings
        cfg = project.config.lean if project else FyanConfig(project={"name": "-", "source": "-"}).lean
        if args.toolchain:
            cfg = cfg.model_copy(update={"toolchain": args.toolchain})
        report = check_worker(cfg, project.paths.lean if project else None)
        return CommandResult(ExitCode.OK if report["ok"] else ExitCode.INCOMPLETE, report, render_worker(report))
    report = diagnose(project.config if project else None, project.paths.root if project else None, online=args.online)
    if project is not None:
        report["project"] = project.name
    code = ExitCode.OK if report["ok"] else ExitCode.INCOMPLETE
    return CommandResult(code, report, render(report))


# -- shadow (SA-Pass; implemented in fyan/shadow/commands.py) ---------------------------------

def cmd_shadow(args: argparse.Namespace) -> CommandResult:
    from fyan.shadow.commands import cmd_shadow as run

    return run(args)


# -- audit -----------------------------------------------------------------------------------

def cmd_audit(args: argparse.Namespace) -> CommandResult:
    from fyan.audit.report import audit_report
    from fyan.project import Project
    from fyan.state.store import Store

    project = Project.open(args.dir)
    store = Store(project.paths.db)
    unit = store.unit(args.unit) if store.exists else None
    if unit is None:
        raise ProjectError(f"{args.dir}: no unit {args.unit!r}", hint=f"list units with `fyan status {args.dir}`")
    certified, payload, text = audit_report(project, store, unit)
    store.close()
    return CommandResult(ExitCode.OK if certified else ExitCode.INCOMPLETE, payload, text)


# -- export ----------------------------------------------------------------------------------

def cmd_export(args: argparse.Namespace) -> CommandResult:
    from fyan.project import Project
    from fyan.specifier.blueprint import export_blueprint

    project = Project.open(args.dir)
    report = export_blueprint(project, Path(args.out) if args.out else None)
    text = (
        f"Wrote a leanblueprint source for {report.units} unit(s) to {report.out}: {', '.join(report.written)}"
        + (f" (kept your {', '.join(report.kept)})" if report.kept else "")
        + f"\n  {report.uses} \\uses item(s), {report.leanok_statements} statement(s) and {report.leanok_proofs} "
        f"proof(s) marked \\leanok, {report.lean_declarations} \\lean declaration(s)"
        + f"\nRender it with leanblueprint: cd {Path(report.out).parent.parent} && leanblueprint web"
    )
    return CommandResult(ExitCode.OK, report.model_dump(), text)


# -- wiring ----------------------------------------------------------------------------------

COMMANDS: dict[str, Callable[[argparse.Namespace], CommandResult]] = {
    "init": cmd_init,
    "run": cmd_run,
    "status": cmd_status,
    "gate": cmd_gate,
    "doctor": cmd_doctor,
    "shadow": cmd_shadow,
    "audit": cmd_audit,
    "export": cmd_export,
    "resume": cmd_resume,
    "daemon": cmd_daemon,
    "dashboard": cmd_dashboard,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fyan",
        description="Formalize a mathematical document in Lean 4, theorem unit by theorem unit, "
        "behind a deterministic completion gate.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fyan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("init", help="create a project from a source document and split it into theorem units",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="new project folder")
    p.add_argument("--source", required=True,
                   help="the document: main TeX file (its \\input tree is copied too), a PDF, or a Markdown file")
    p.add_argument("--name", help="project name (default: the folder name)")
    p.add_argument("--no-ingest", action="store_true",
                   help="only create the folder and fyan.toml; the first `fyan run` ingests (to configure a model "
                   "Specifier or providers first)")
    p.add_argument("--unknown-references", choices=["error", "warn"],
                   help="a reference to a label defined nowhere in the document: stop (error, the default) "
                   "or warn; written to the project's fyan.toml ([intake] unknown_references)")
    p.add_argument("--json", action="store_true", help="print a JSON result")

    p = sub.add_parser("run", help="run every stage of every unit to quiescence (foreground, resumable)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--unit", action="append", help="restrict to this unit and its dependencies (repeatable)")
    p.add_argument("--parallelism", type=int, help="stage attempts at once (default: [scheduler] parallelism)")
    p.add_argument("--watch", action="store_true",
                   help="keep running at quiescence, acting on guidance, source and proof edits (Ctrl-C stops)")
    p.add_argument("--json", action="store_true", help="no progress display; print a JSON summary")

    p = sub.add_parser("resume", help="explain what resuming will do (interrupted attempts, stale units, ...), then run",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--dry-run", action="store_true", help="only explain; change nothing")
    p.add_argument("--unit", action="append", help="restrict to this unit and its dependencies (repeatable)")
    p.add_argument("--parallelism", type=int, help="stage attempts at once (default: [scheduler] parallelism)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("daemon", help="start, stop or inspect the background daemon of a project",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["start", "stop", "status", "serve"],
                   help="start (in the background), stop (SIGTERM, waits), status; serve = the daemon process itself")
    p.add_argument("dir", help="project folder")
    p.add_argument("--no-dashboard", action="store_true", help="do not serve the dashboard")
    p.add_argument("--port", type=int, help="dashboard port on 127.0.0.1 (default: [dashboard] port; 0 = any)")
    p.add_argument("--parallelism", type=int, help="stage attempts at once (default: [scheduler] parallelism)")
    p.add_argument("--timeout", type=float, default=60.0, help="stop: seconds to wait for the daemon to exit")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("dashboard", help="serve the project's dashboard on 127.0.0.1 (foreground)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--port", type=int, help="port (default: [dashboard] port; 0 = any free port)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("status", help="one line per unit: stage, status, reason",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--cost", action="store_true", help="also sum model usage and cost per stage and unit")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("gate", help="run the completion gate on a unit now and print every check",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("unit", help="unit id (see `fyan status`)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = sub.add_parser("doctor", help="which model providers are usable here, and whether a Lean toolchain is present",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", help="project folder (its configured providers); without it, the hosted APIs' keys")
    p.add_argument("--online", action="store_true", help="also contact the hosted APIs' endpoints (Anthropic, OpenAI)")
    p.add_argument("--worker", action="store_true",
                   help="instead: can this node take the project's Lean tasks on a Ray cluster (toolchain pin, built "
                        "dependencies, sandbox)? prints the `ray start` line to join with")
    p.add_argument("--toolchain", help="with --worker: the toolchain pin to check (default: the project's [lean] toolchain)")
    p.add_argument("--json", action="store_true", help="print JSON")

    from fyan.shadow.commands import add_parser as add_shadow_parser

    add_shadow_parser(sub, EPILOG)

    p = sub.add_parser("audit", help="show a unit's semantic audit: slots, evidence record, grade, routing, staleness",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("unit", help="unit id (see `fyan status`)")
    p.add_argument("--json", action="store_true", help="print the audit as JSON")

    p = sub.add_parser("export", help="write the project's units and DAG in another format (blueprint: leanblueprint TeX)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("format", choices=["blueprint"], help="blueprint: a leanblueprint source (content.tex, macros, web.tex)")
    p.add_argument("dir", help="project folder")
    p.add_argument("--out", help="output folder (default: <project>/blueprint/src)")
    p.add_argument("--json", action="store_true", help="print a JSON result")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = COMMANDS[args.command](args)
    except FyanError as e:
        if getattr(args, "json", False):
            print(json.dumps({"error": e.message, "hint": e.hint, "exit_code": int(e.exit_code)}))
        else:
            print(f"fyan: error: {e.message}", file=sys.stderr)
            if e.hint:
                print(f"  hint: {e.hint}", file=sys.stderr)
        return int(e.exit_code)
    except KeyboardInterrupt:
        print("fyan: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    except Exception as e:  # a bug: say so, keep the traceback
        logs.get().error("internal_error", command=args.command, error=repr(e), exc_info=True)
        import traceback

        traceback.print_exc()
        print(f"fyan: internal error: {type(e).__name__}: {e} (this is a bug in Fyan)", file=sys.stderr)
        return int(ExitCode.INTERNAL)
    if args.json:
        print(json.dumps(result.payload, indent=2, ensure_ascii=False, default=str))
    elif result.text:
        print(result.text)
    return int(result.code)


if __name__ == "__main__":
    raise SystemExit(main())
