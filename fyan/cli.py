"""The ``fyan`` command line.

Every command is a function that returns a ``CommandResult`` (``fyan.command_result``: exit
code, JSON payload, human text); ``--json`` prints the payload instead of the text, so machine
use is never an afterthought. Errors Fyan expects (``FyanError``) print their message and hint
and exit with the code of their class. Nothing else reaches the terminal as a traceback: an
unexpected error prints one line and the path of a crash report holding the details
(``fyan.logs.crash_report``; never local variables or document text on the terminal), and
with ``--json`` stdout stays one JSON object. A closed output (``fyan status … | head -1``)
ends quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fyan import __version__, arguments, logs
from fyan.command_result import CommandResult
from fyan.errors import ExitCode, FyanError, InputError, Interrupted, ProjectError, UsageError

__all__ = ["CommandResult", "build_parser", "main"]

EPILOG = """exit codes:
  0  success (for `run`: every unit complete)
  1  internal error (a bug): one line, and the details in a crash report (its path is printed)
  2  bad command line (unknown option, value out of range, unknown unit id)
  3  incomplete: the run reached quiescence with blocked units (a replay miss included), the
     gate failed, `verify` found a completion that does not reproduce, `doctor` found
     something needed missing, or `status` found the first ingest interrupted (the next run
     reads the source again)
  4  bad input: source document, configuration (no model configured, a missing API key),
     project folder, or a replay cassette that is missing or malformed (checked before any attempt)
  5  refused: an illegal state transition, or another run holds the project lock
  130  interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM (`fyan daemon stop`, kill), as
       shells report them, at any moment (starting up, ingesting, during attempts): one line
       "fyan: stopped by SIGINT" on stderr; what was done is kept, attempts in progress are
       recorded as interrupted, and `fyan resume <project>` continues

A Lean toolchain is needed to complete units (install elan, then `elan default stable`, then
`fyan selftest`: the gate trusts a toolchain only after its selftest passed). Without one, Fyan runs every stage it can and blocks units at the completion gate."""

#: model names ``fyan init --help`` shows as examples (priced in config/pricing.toml)
EXAMPLE_MODELS = {"anthropic": "claude-opus-4-1", "openai": "gpt-5", "openai-compatible": "qwen2.5-coder"}
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def _quote(path: str | Path) -> str:
    from fyan.terminal import quoted

    return quoted(path)


# -- init ------------------------------------------------------------------------------------

FYAN_TOML = """# Fyan project configuration. Every key, its default and its meaning:
# config/fyan.example.toml in the Fyan repository.

[project]
name = {name}
source = {source}

{intake}{agents}"""

NO_MODEL_TOML = """[agents.default]
# No model is configured yet: `fyan run` stops before any attempt and says so. Choose one
# (or re-create the project with `fyan init --provider ...`; see `fyan init --help`):
#   provider = "anthropic"          model = "claude-opus-4-1"     (export ANTHROPIC_API_KEY=...)
#   provider = "openai"             model = "gpt-5"               (export OPENAI_API_KEY=...)
#   provider = "openai-compatible"  model = "..."  base_url = "http://localhost:8000/v1"
#   provider = "command"            command = ["my-coding-agent", "--print"]
provider = "none"
"""


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _agents_toml(args: argparse.Namespace) -> str:
    """The ``[agents.default]`` section ``fyan init`` writes (module docstring of preflight)."""
    if args.provider is None:
        return NO_MODEL_TOML
    lines = ["[agents.default]"]
    if args.provider in KEY_VARS:
        lines.append(f"# the API key comes from {KEY_VARS[args.provider]} in the environment, never from this file")
    lines.append(f"provider = {_toml_str(args.provider)}")
    lines.append(f"model = {_toml_str(args.model or args.provider)}")
    if args.base_url:
        lines.append(f"base_url = {_toml_str(args.base_url)}")
    if args.agent_command:
        lines.append("command = [" + ", ".join(_toml_str(a) for a in shlex.split(args.agent_command)) + "]")
    return "\n".join(lines) + "\n"


def _check_init_model_args(args: argparse.Namespace) -> None:
    """Raise ``UsageError`` (exit 2) for a provider set-up that cannot work."""
    p = args.provider
    if p is None and (args.model or args.base_url or args.agent_command):
        raise UsageError("--model, --base-url and --command go with --provider",
                         hint="e.g. fyan init DIR --source FILE --provider anthropic --model claude-opus-4-1")
    if args.base_url and p != "openai-compatible":
        raise UsageError("--base-url is for --provider openai-compatible")
    if args.agent_command and p != "command":
        raise UsageError("--command is for --provider command")
    if p in EXAMPLE_MODELS and not args.model:
        raise UsageError(f"--provider {p} needs --model (e.g. --model {EXAMPLE_MODELS[p]}"
                         + ("; the name the server serves" if p == "openai-compatible" else "") + ")")
    if p == "openai-compatible" and not args.base_url:
        raise UsageError("--provider openai-compatible needs --base-url (e.g. http://localhost:8000/v1)")
    if p == "command":
        if not args.agent_command:
            raise UsageError('--provider command needs --command "program --flag ..." (the coding agent CLI)')
        try:
            shlex.split(args.agent_command)
        except ValueError as e:
            raise UsageError(f"--command: {e}") from None


def _init_hint(hint: str | None) -> str | None:
    """An intake hint for ``fyan init``: no fyan.toml exists yet to edit."""
    if hint and "fyan.toml" in hint and "--unknown-references" not in hint:
        return (hint + "; the project was not created: create it with `fyan init ... --no-ingest`, "
                "edit its fyan.toml, then `fyan run` (or set FYAN_INTAKE__<KEY> in the environment)")
    return hint


def _make_parents(target: Path) -> list[Path]:
    """Create the missing folders above ``target``; returns them (deepest last). Raises
    ``ProjectError`` when one cannot be created."""
    missing = []
    parent = target.absolute().parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    missing.reverse()
    for folder in missing:
        try:
            folder.mkdir()
        except OSError as e:
            for made in reversed(missing):
                try:
                    made.rmdir()
                except OSError:
                    pass
            raise ProjectError(f"{folder}: cannot create the folder: {e.strerror or e}",
                               hint="choose a project folder you can write to") from None
    return missing


def _remove_abandoned_inits(target: Path) -> list[Path]:
    """Remove the folders ``fyan init`` of ``target`` builds the project in
    (``.<name>.init-<pid>-*`` beside it) that a killed init left: those whose process is gone.
    Returns them."""
    removed = []
    for folder in target.resolve().parent.glob(f".{target.name}.init-*-*"):
        pid = folder.name[len(f".{target.name}.init-"):].split("-", 1)[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists() or not folder.is_dir():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def cmd_init(args: argparse.Namespace) -> CommandResult:
    from fyan.agents.specify import model_specifier
    from fyan.intake import DEFAULT_MAX_FILE_MIB, read_source
    from fyan.progress import StartupProgress
    from fyan.project import Project
    from fyan.specifier.ingest import ingest
    from fyan.state.gateway import Gateway

    _check_init_model_args(args)
    if args.provider == "openai-compatible":  # a server that is not there: said now, not by a run that waits
        from fyan.agents.preflight import endpoint_refusal
        from fyan.errors import ConfigError

        refused = endpoint_refusal(args.base_url)
        if refused:
            raise ConfigError(f"nothing answers at --base-url {args.base_url}: {refused}; the project was not created",
                              hint="start the model server (vLLM: `vllm serve <model>`; llama.cpp: `llama-server`; "
                                   "Ollama: `ollama serve`, base URL http://localhost:11434/v1) or correct --base-url, "
                                   "then run the same command again")
    library = None
    if not args.lean_project:  # an adopted package keeps its own Mathlib (it comes through its requires)
        from fyan.lean.mathlib import choose_library

        try:
            library = choose_library(args.mathlib, args.core)
        except ValueError as e:
            raise UsageError(str(e)) from None
    package = None
    if args.lean_project:  # a folder that is no Lake package fails before anything is created
        from fyan.adopt.package import read_package

        package = read_package(args.lean_project)
    target = Path(args.dir)
    source = Path(args.source)
    if target.exists() and not target.is_dir():
        raise ProjectError(f"{target}: is a file, not a folder; a project is a folder",
                           hint="choose a new folder for the project (a path that does not exist yet)")
    if target.exists() and any(target.iterdir()):
        raise ProjectError(f"{target}: the folder exists and is not empty", hint="choose a new folder for the project")
    try:
        limit = float(os.environ.get("FYAN_INTAKE__MAX_FILE_MIB", DEFAULT_MAX_FILE_MIB))
    except ValueError:
        raise InputError("FYAN_INTAKE__MAX_FILE_MIB is not a number", hint="give a size in MiB, e.g. 64") from None
    progress = StartupProgress(enabled=not args.json)
    made: list[Path] = []
    try:
        progress.phase(f"Reading {source}")
        catalogue = read_source(source, max_file_mib=limit, tolerant=args.tolerant)  # fails before anything is created
        made = _make_parents(target)
        name = args.name or target.resolve().name
        main_dir = source.resolve().parent
        _remove_abandoned_inits(target)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.init-{os.getpid()}-", dir=target.resolve().parent))
        try:
            for rel in catalogue.files:
                src = main_dir / rel
                dest = tmp / "source" / rel
                if ".." in Path(rel).parts or Path(rel).is_absolute():
                    raise InputError(f"{rel}: included from outside the main file's folder {main_dir}",
                                     hint="give the main file at the root of the source tree")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
            keys = []
            unknown = args.unknown_references or ("error" if args.strict else None)
            if unknown:
                keys.append(f"unknown_references = {_toml_str(unknown)}")
            cycles = args.cycles or ("error" if args.strict else None)
            if cycles:
                keys.append(f"cycles = {_toml_str(cycles)}")
            if args.tolerant:
                keys.append("tolerant = true")
            intake = "[intake]\n" + "\n".join(keys) + "\n\n" if keys else ""
            if library is not None:
                intake += library.toml()
            if package is not None:
                intake += (f"[adopt]\npackage = {_toml_str(str(package.folder))}\n"
                           f"package_name = {_toml_str(package.name)}\n\n")
            (tmp / "fyan.toml").write_text(
                FYAN_TOML.format(name=_toml_str(name), source=_toml_str(f"source/{catalogue.main_file}"),
                                 intake=intake, agents=_agents_toml(args)),
                encoding="utf-8",
            )
            report = None
            if not args.no_ingest:
                progress.phase(f"Finding theorem units and dependencies in {len(catalogue.statements)} statements")
                project = Project.open(tmp)
                gateway = Gateway(project)
                try:  # the source as read above, now copied
                    report = ingest(project, gateway, catalogue, specifier=model_specifier(project, gateway))
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
    except FyanError as e:
        e.hint = _init_hint(e.hint)
        raise
    except OSError as e:
        raise ProjectError(f"{e.filename or target}: {e.strerror or e}", hint="nothing was created") from None
    finally:
        progress.done()
        if not target.exists():
            for folder in reversed(made):  # the folders made for a project that was not created
                try:
                    folder.rmdir()
                except OSError:
                    pass
    adoption = _init_adopt(target) if package is not None and report is not None else None
    if package is not None and report is None:  # --no-ingest: nothing to adopt for yet
        adoption = ({"adopted": False, "problem": "not ingested yet"},
                    f"Adoption of {package.folder} waits for the units: after the first `fyan run` ingests the "
                    f"source, run `fyan adopt {_quote(target)}` (before any attempt starts)")
    result = _init_result(args, target, catalogue, report)
    if library is not None:
        from fyan.lean.mathlib import init_note

        result.payload["library"] = {"mathlib": library.mathlib or None, "toolchain": library.toolchain}
        *head, last = result.text.rstrip("\n").split("\n")  # the next step stays the last line
        result.text = "\n".join([*head, init_note(library, _quote(target)), last])
    if adoption is not None:
        payload, text = adoption
        result.payload["adoption"] = payload
        result.text = result.text.rstrip("\n") + "\n" + text
    return result


def _init_adopt(target: Path) -> tuple[dict, str]:
    """Adopt the ``[adopt] package`` of the project just created (``fyan.adopt.run.adopt``).
    No toolchain or a failed build does not undo the project: its units stay in the pipeline
    and the text says how to adopt later."""
    from fyan.adopt.run import AdoptionUnavailable, adopt
    from fyan.project import Project
    from fyan.state.gateway import Gateway

    project = Project.open(target)
    gateway = Gateway(project)
    try:
        report = adopt(project, gateway)
    except AdoptionUnavailable as e:
        return ({"adopted": False, "problem": e.message},
                f"Adoption of {project.config.adopt.package} not done: {e.message}\n  {e.hint or ''}".rstrip())
    finally:
        gateway.close()
    return report.model_dump(mode="json"), _adoption_text(report)


def _adoption_text(report) -> str:
    c = report.counts
    lines = [f"Adopted {report.package}: {c['adopted']} unit(s) complete by adoption, {c['candidate']} with an "
             f"existing statement to prove (candidate), {c['pipeline']} through the full pipeline"]
    lines += _targets_text(report)
    lines.append(_drift_text(report.drift, report.drift_counts))
    return "\n".join(lines)


def _targets_text(report) -> list[str]:
    """What adoption left out: target modules that do not build, files outside every target."""
    lines = []
    if report.unbuilt:
        lines.append(f"Not adopted ({len(report.unbuilt)} target module(s) not built): "
                     + "; ".join(f"{m} {why}" for m, why in list(report.unbuilt.items())[:20])
                     + (" ..." if len(report.unbuilt) > 20 else ""))
    if report.outside:
        lines.append(f"Ignored ({len(report.outside)} file(s) outside every Lake target): "
                     + ", ".join(report.outside[:20]) + (" ..." if len(report.outside) > 20 else ""))
    return lines


def _connectivity_text(isolated: list[str], components: list[list[str]]) -> list[str]:
    """Isolated statements and disconnected components of the blueprint's dependency graph."""
    lines = []
    if isolated:
        lines.append(f"Isolated ({len(isolated)}: no \\uses in or out): " + ", ".join(isolated[:30])
                     + (" ..." if len(isolated) > 30 else ""))
    if len(components) > 1:
        lines.append(f"Disconnected: {len(components)} components, no \\uses between them: "
                     + "; ".join(f"{{{', '.join(c[:6])}{', ...' if len(c) > 6 else ''}}} ({len(c)})"
                                 for c in components[:10]))
    return lines


def _drift_text(found, tally) -> str:
    if not found:
        return "Drift: none (the blueprint's \\lean and \\leanok match the compiled environment)"
    lines = ["Drift: " + ", ".join(f"{n} {k}" for k, n in tally.items() if n)]
    lines += [f"  {d.label or d.unit}: {d.kind}: {d.detail}" for d in found[:40]]
    if len(found) > 40:
        lines.append(f"  ... {len(found) - 40} more (--json lists them all)")
    return "\n".join(lines)


def _init_result(args: argparse.Namespace, target: Path, catalogue, report) -> CommandResult:
    from fyan.intake.catalogue import format_warnings

    model = {"provider": args.provider or "none", "model": (args.model or args.provider) if args.provider else None}
    if args.provider is None:
        nxt = (f"No model is configured yet: choose one in {_quote(target / 'fyan.toml')} ([agents.default]; "
               f"see `fyan init --help`), then: fyan run {_quote(target)}")
    else:
        nxt = f"Next: fyan run {_quote(target)}"
        var = KEY_VARS.get(args.provider)
        if var and not os.environ.get(var):
            nxt = f"{var} is not set in this shell: export it, then: fyan run {_quote(target)}"
    if report is None:
        return CommandResult(ExitCode.OK, {"project": str(target), "ingested": False, "statements": len(catalogue.statements),
                                           **model},
                             f"Created project {target} ({len(catalogue.statements)} theorem-like statements); not ingested yet.\n"
                             f"Edit {_quote(target / 'fyan.toml')} (providers, [intake] specifier), then: fyan run {_quote(target)}")
    if report.warnings and not args.json:  # every warning, on stderr (--json lists them under "warnings")
        print(format_warnings(report.warnings), end="", file=sys.stderr)
    text = (
        f"Created project {target} from {report.format.upper() if report.format == 'pdf' else report.format} "
        f"source: {report.statements} theorem-like statements in {len(report.files)} file(s), "
        f"{report.units} units, {report.edges} dependency edges between {report.pairs} pairs of units, "
        f"{report.layers} layer(s).\n"
        + intake_report(report)
        + _ingest_details(report)
        + nxt
    )
    return CommandResult(ExitCode.OK, {"project": str(target), **model, **report.model_dump(mode="json")}, text)


def _list(items: list[str], limit: int = 12) -> str:
    return ", ".join(items[:limit]) + (f", ... {len(items) - limit} more (--json lists them all)"
                                       if len(items) > limit else "")


def intake_report(report: Any) -> str:
    """The intake report of ``fyan init`` (issue 25): statements by kind, environments used but
    not classified (with counts), references seen/kept/unresolved, dependency edges by kind,
    isolated statements and disconnected components, empty ``\\ref{}``/``\\label{}``; units by id."""
    r = report.references
    lines = ["Intake report:",
             "  statements by kind: " + ", ".join(f"{k} {n}" for k, n in
                                                  sorted(report.kinds.items(), key=lambda x: (-x[1], x[0])))]
    if report.unclassified_envs:
        lines.append(f"  environments used but not classified ({len(report.unclassified_envs)}; check none is a "
                     "statement): " + _list([f"{k} ({n})" for k, n in report.unclassified_envs.items()]))
    else:
        lines.append("  environments used but not classified: none"
                     + (f" (besides {report.layout_envs} layout environment(s): figure, center, ...)"
                        if report.layout_envs else ""))
    other = r.seen - r.kept - r.unresolved
    lines.append(f"  references: {r.seen} seen, {r.kept} kept (dependency or mention), {r.unresolved} unresolved"
                 + (f", {other} to no unit (running text {r.to_text}, non-unit statements {r.to_non_unit}, "
                    f"the unit itself {r.to_self})" if other else ""))
    unresolved = [f"{w.where} {w.message.split(': unknown label')[0]}" for w in report.warnings
                  if w.code == "unknown-label"]
    if unresolved:
        lines.append("  unresolved references (LaTeX prints ??; each is a finding of its unit): "
                     + _list(unresolved, 8))
    kinds = ", ".join(f"{k} {n}" for k, n in report.edges_by_kind.items()) or "none"
    lines.append(f"  dependency edges by kind: {kinds}; {len(report.mentions)} mention(s)")
    if report.isolated:
        lines.append(f"  isolated statements (no edge in or out): {len(report.isolated)}: {_list(report.isolated)}")
    else:
        lines.append("  isolated statements (no edge in or out): none")
    comps = report.components
    lines.append(f"  connected components (isolated statements apart): {len(comps)}"
                 + (f" (sizes {_list([str(n) for n in comps])})" if len(comps) > 1 else ""))
    if report.empty_references or report.empty_labels:
        lines.append(f"  empty \\ref{{}}: {len(report.empty_references)}"
                     + (f" ({_list(report.empty_references, 6)})" if report.empty_references else "")
                     + f"; empty \\label{{}}: {len(report.empty_labels)}"
                     + (f" ({_list(report.empty_labels, 6)})" if report.empty_labels else ""))
    else:
        lines.append("  empty \\ref{} or \\label{}: none")
    return "\n".join(lines) + "\n"


def _ingest_details(report: Any) -> str:
    """The lines after an ingest's summary (``fyan init`` and the first ``fyan run``/``resume``):
    warnings (printed on stderr by the caller), mentions, problem.tex lint findings."""
    errors = sum(f.severity == "error" for f in report.findings)
    return ((f"  {len(report.warnings)} warning(s) on stderr\n" if report.warnings else "")
            + (f"  {len(report.mentions)} reference(s) kept as mentions, not dependencies (each problem.tex lists "
               "its own; --json lists them all)\n" if report.mentions else "")
            + (f"  problem.tex lints: {len(report.findings)} finding(s), {errors} error(s)\n" if report.findings else "")
            + "".join(f"    {f}\n" for f in report.findings[:10]))


def _announce_ingest(args: argparse.Namespace) -> Callable[[Any], None]:
    """For ``fyan run``/``resume``: when the run ingested the source first (a project made with
    ``--no-ingest``), say so and print intake's warnings on stderr, grouped as ``fyan init``
    prints them (issue 12; ``--json`` lists them under ``ingest.warnings``)."""
    from fyan.intake.catalogue import format_warnings

    def announce(d: Any) -> None:
        r = d.report
        if r is None or args.json:
            return
        print(format_warnings(r.warnings), end="", file=sys.stderr, flush=True)
        print(f"Ingested {r.source}: {r.units} units, {r.edges} edges, {r.layers} layer(s)\n"
              + _ingest_details(r), end="", flush=True)

    return announce


# -- run -------------------------------------------------------------------------------------

def _serve(args: argparse.Namespace, *, until_idle: bool, progress_enabled: bool, dashboard: bool = False,
           port: int | None = None, announce: Callable[[Any], None] | None = None, background: bool = False):
    from fyan.orchestrator.daemon import Daemon, DaemonOptions
    from fyan.progress import RunProgress

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


def _run_result(args: argparse.Namespace, daemon, summary) -> CommandResult:
    from fyan.orchestrator.status import blocked_lines, project_status
    from fyan.state.store import Store

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
        lines.append(f"Details: fyan status {_quote(args.dir)}")
    code = summary.exit_code
    if summary.stopped:  # by a signal: main prints the one interrupt message
        signum = daemon.stop_signal or signal.SIGINT
        code = 128 + int(signum)
        message, hint = _interrupt_text(signum, args.command, args.dir)
        payload["interrupted"] = {"signal": signal.Signals(signum).name, "message": message, "hint": hint}
    return CommandResult(code, payload, "\n".join(lines))


def _check_endpoints(project) -> None:
    """``fyan run``/``resume``: the model servers the run will use accept connections (once,
    before anything runs; ``fyan.agents.preflight.check_endpoints``)."""
    from fyan.agents.preflight import check_endpoints
    from fyan.orchestrator.daemon import Daemon

    check_endpoints(project, ingested=project.paths.db.exists() and Daemon._has_units(project))


def cmd_run(args: argparse.Namespace) -> CommandResult:
    from fyan.project import Project

    _check_endpoints(Project.open(args.dir))  # clear errors before taking the lock

    daemon, summary = _serve(args, until_idle=not args.watch, progress_enabled=not args.json,
                             announce=_announce_ingest(args))
    return _run_result(args, daemon, summary)


# -- resume ----------------------------------------------------------------------------------

def cmd_resume(args: argparse.Namespace) -> CommandResult:
    from fyan.orchestrator.daemon import check_units
    from fyan.orchestrator.resume import explain, plan
    from fyan.project import Project

    project = Project.open(args.dir)
    check_units(project, args.unit, args.dir)  # an unknown id is refused before anything is explained
    p = plan(project, args.parallelism)
    text = explain(p)
    if args.dry_run or p.get("locked_by"):
        code = ExitCode.STATE if p.get("locked_by") else ExitCode.OK
        return CommandResult(code, {"plan": p, "dry_run": args.dry_run}, text)
    _check_endpoints(project)
    if not args.json:
        print(text, flush=True)
    daemon, summary = _serve(args, until_idle=True, progress_enabled=not args.json, announce=_announce_ingest(args))
    result = _run_result(args, daemon, summary)
    result.payload = {"plan": p, **result.payload}
    return result


# -- daemon ----------------------------------------------------------------------------------

def cmd_daemon(args: argparse.Namespace) -> CommandResult:
    from fyan.orchestrator import daemon as d
    from fyan.project import Project

    if args.action == "serve":  # the background process itself (started by `daemon start`)
        ingested = _announce_ingest(args)  # its stdout and stderr are .fyan/logs/daemon.log

        def announce(dm) -> None:
            print(f"fyan daemon pid {os.getpid()} serving {dm.project.paths.root}"
                  + (f"; dashboard {dm.dashboard_url} (write token in .fyan/daemon.json)" if dm.dashboard_url else "")
                  + (f"\n{dm.dashboard_note}" if dm.dashboard_note else ""),
                  flush=True)
            ingested(dm)

        args.unit = None
        dm, summary = _serve(args, until_idle=False, progress_enabled=True, dashboard=not args.no_dashboard,
                             port=args.port, announce=announce, background=True)
        return _run_result(args, dm, summary)
    project = Project.open(args.dir)
    if args.action == "start":
        state = d.start_background(args.dir, dashboard=not args.no_dashboard, port=args.port,
                                   parallelism=args.parallelism)
        text = f"Fyan daemon started on {project.name} (pid {state['pid']}); log {state['log']}"
        if state.get("dashboard"):
            text += f"\nDashboard: {state['dashboard']}  (write token: {state['token']})"
            if state.get("dashboard_note"):
                text += f"\n  {state['dashboard_note']}"
        text += f"\nStop it with: fyan daemon stop {_quote(args.dir)}"
        return CommandResult(ExitCode.OK, state, text)
    if args.action == "stop":
        result = d.stop_background(args.dir, wait_s=args.timeout)
        if not result["running"] and not result["stopped"]:
            return CommandResult(ExitCode.OK, result, f"No Fyan daemon is running on {project.name}.")
        return CommandResult(ExitCode.OK, result, f"Fyan daemon pid {result['pid']} stopped; "
                                                 f"`fyan daemon start {_quote(args.dir)}` resumes.")
    return _daemon_status(project)


def _daemon_status(project) -> CommandResult:
    from fyan.orchestrator import daemon as d
    from fyan.orchestrator.status import project_status
    from fyan.state.store import Store

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


# -- dashboard -------------------------------------------------------------------------------

def cmd_dashboard(args: argparse.Namespace) -> CommandResult:
    from fyan.dashboard.server import make_server
    from fyan.project import Project

    project = Project.open(args.dir)
    port = project.config.dashboard.port if args.port is None else args.port
    server, sock, url, token = make_server(project, port)
    if server.port_note:
        print(f"fyan: {server.port_note}", file=sys.stderr, flush=True)
    print(f"Fyan dashboard for {project.name}: {url}\nWrite token (needed to save guidance): {token}\n"
          "Ctrl-C stops it.", flush=True)
    server.run(sockets=[sock])
    return CommandResult(ExitCode.OK, {"url": url}, "dashboard stopped")


# -- status ----------------------------------------------------------------------------------

def cmd_status(args: argparse.Namespace) -> CommandResult:
    from fyan.orchestrator.status import project_status
    from fyan.project import Project
    from fyan.state.store import Store

    project = Project.open(args.dir)
    store = Store(project.paths.db)
    try:
        status = project_status(project, store)
        if not status.ingested:  # never a title over an empty table (issue 27)
            ingest = status.ingest
            code = ExitCode.INCOMPLETE if ingest["state"] == "interrupted" else ExitCode.OK
            text = f"{project.name}: {ingest['text']}."
            if ingest["state"] != "ingesting":
                text += f"\nNext: fyan run {_quote(args.dir)}"
            return CommandResult(code, status.as_payload(), text)
        payload = status.as_payload()
        if args.cost:
            payload["cost"] = _cost(store)
    finally:
        store.close()
    return CommandResult(ExitCode.OK, payload, _status_text(status, payload.get("cost"), args.dir))


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


def _status_text(status, cost: dict | None, folder: str) -> str:
    """``fyan status`` as text: one row per unit (blocked first) with a short reason, then the
    blocked units grouped by root cause with the remedy once, outages, and whether a run is
    alive (``fyan.orchestrator.status``). Document text is printed literally."""
    from fyan.orchestrator.status import STATUS_ORDER, blocked_lines, run_line
    from fyan.terminal import render, table

    units = status.units
    rows = [[u["id"], str(u["layer"]), u["kind"], "adopted" if u.get("adopted") else u["status"], u["stage"] or "-",
             u["short_reason"]]
            for u in sorted(units, key=lambda u: (STATUS_ORDER.get(u["status"], 9),
                                                  u["short_reason"].startswith("waits on "), u["layer"]))]
    adopted = sum(bool(u.get("adopted")) for u in units)
    title = f"{status.project}: " + ", ".join(f"{n} {k}" + (f" ({adopted} by adoption)" if k == "complete" and adopted
                                                             else "") for k, n in sorted(status.counts.items()))
    parts: list[Any] = [table(title, ("unit", "layer", "kind", "status", "stage", "reason"), rows)]
    if cost:
        for key, name in (("by_stage", "stage"), ("by_unit", "unit")):
            crow = [[k, str(row["calls"]), str(row["tokens_in"]), str(row["tokens_out"]), f"{row['cost_usd']:.4f}",
                     str(row["replayed"]), str(row["cache_hits"])]
                    for k, row in list(cost[key].items()) + [("total", cost["total"])]]
            parts.append(table(f"model usage by {name}", (name, "calls", "tokens in", "tokens out", "cost (USD)",
                                                          "replayed", "cache hits"), crow))
        if cost["unpriced_models"]:
            parts.append("not in config/pricing.toml (counted as 0 USD): " + ", ".join(cost["unpriced_models"]))
    lines = blocked_lines(status.blocked)
    lines += [o["text"] for o in status.outages]
    if status.stale:
        lines.append(f"The source changed since intake: {len(status.stale)} unit(s) are stale (reported, never re-run):")
        lines += [f"  {u}: {why}" for u, why in list(status.stale.items())[:20]]
    if "UNCONFINED" in status.sandbox or "refused" in status.sandbox:
        lines.append(f"sandbox: {status.sandbox}")
    lines.append(run_line(status.run, status.project, units))
    if not status.run.get("alive") and any(u["status"] in ("ready", "interrupted") for u in units):
        lines.append(f"Next: fyan run {_quote(folder)}")
    return render(*parts) + "\n" + "\n".join(lines)  # the lines as they are: long ones are not wrapped


# -- gate ------------------------------------------------------------------------------------

def _unit(args: argparse.Namespace, store):
    """The unit ``args.unit`` names; ``UsageError`` (exit 2, as every unknown unit id) when the
    project has none by that id (or no units yet)."""
    unit = store.unit(args.unit) if store.exists else None
    if unit is None:
        store.close()
        raise UsageError(f"{args.dir}: no unit {args.unit!r}", hint=f"list units with `fyan status {_quote(args.dir)}`")
    return unit


def cmd_gate(args: argparse.Namespace) -> CommandResult:
    from fyan.gates.completion import run_gate
    from fyan.gates.report import report_json, report_text
    from fyan.project import Project
    from fyan.state.store import Store

    project = Project.open(args.dir)
    store = Store(project.paths.db)
    unit = _unit(args, store)
    # build/inspector logs and the report of a manual run are kept (they are not stage state);
    # the gate builds in its own workspace under the unit's gate lock (a daemon's gate of the
    # same unit is waited for, never raced)
    log_dir = project.paths.logs / "gate" / f"{unit.id}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    report = run_gate(project, store, unit, log_dir)
    store.close()
    (log_dir / "report.json").write_bytes(report_json(report))
    code = ExitCode.OK if report.passed else ExitCode.INCOMPLETE
    return CommandResult(code, report.model_dump(mode="json"), report_text(report))


# -- verify ----------------------------------------------------------------------------------

def cmd_setup(args: argparse.Namespace) -> CommandResult:
    from fyan.lean.fetch import FetchProgress, setup_report
    from fyan.project import Project

    done, payload, text = setup_report(Project.open(args.dir), progress=FetchProgress(enabled=not args.json))
    return CommandResult(ExitCode.OK if done else ExitCode.INCOMPLETE, payload, text)


def cmd_upgrade(args: argparse.Namespace) -> CommandResult:
    from fyan.lean.fetch import FetchProgress
    from fyan.lean.upgrade import upgrade
    from fyan.project import Project

    report = upgrade(Project.open(args.dir), args.mathlib, progress=FetchProgress(enabled=not args.json))
    payload = {"previous": {"mathlib": report.previous[0] or None, "toolchain": report.previous[1]},
               "mathlib": report.new.mathlib, "toolchain": report.new.toolchain, "fetched": report.fetched,
               "checked": report.checked, "reopened": report.reopened, "previous_kept_in": report.kept}
    return CommandResult(ExitCode.INCOMPLETE if report.reopened else ExitCode.OK, payload, report.text())


def cmd_verify(args: argparse.Namespace) -> CommandResult:
    from fyan.gates.verify import render, verify_project
    from fyan.project import Project
    from fyan.state.store import Store

    project = Project.open(args.dir)
    store = Store(project.paths.db)
    known = {u.id for u in store.units()} if store.exists else set()
    if not known and not args.unit:
        store.close()
        return CommandResult(ExitCode.OK, {"project": project.name, "units": []}, f"{project.name}: not ingested yet.")
    unknown = sorted(set(args.unit or []) - known)
    if unknown:
        store.close()
        raise UsageError(f"{args.dir}: no unit {unknown[0]!r}",
                         hint=f"list units with `fyan status {_quote(args.dir)}`")

    def progress(entry, report) -> None:
        if not args.json:
            print(f"{'ok ' if entry.reproduced else 'NOT'} {entry.unit}", flush=True)

    try:
        result = verify_project(project, store, only=set(args.unit) if args.unit else None, on_unit=progress)
    finally:
        store.close()
    payload = {**result.model_dump(mode="json"), "not_reproduced": [u.unit for u in result.not_reproduced]}
    return CommandResult(ExitCode.INCOMPLETE if result.not_reproduced else ExitCode.OK, payload, render(result))


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


# -- selftest --------------------------------------------------------------------------------

def cmd_selftest(args: argparse.Namespace) -> CommandResult:
    from fyan.selftest.run import render, run_selftest

    record = Path(args.record).expanduser() if args.record else None

    def progress(case) -> None:
        if not args.json:
            print(f"{'ok   ' if case.ok else 'WRONG'} {case.id}", flush=True)

    lean = None
    if args.dir:
        from fyan.project import Project

        lean = Project.open(args.dir).config.lean
    result = run_selftest(args.toolchain or (lean.toolchain if lean else None), record_dir=record, on_case=progress,
                          lean=lean)
    return CommandResult(ExitCode.OK if result.passed else ExitCode.INCOMPLETE, result.payload(), render(result))


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
    unit = _unit(args, store)
    certified, payload, text = audit_report(project, store, unit)
    store.close()
    return CommandResult(ExitCode.OK if certified else ExitCode.INCOMPLETE, payload, text)


# -- adopt, drift ----------------------------------------------------------------------------

def _adopt_config(project, folder: str | None):
    """Write ``[adopt]`` into the project's fyan.toml when it has none (``folder`` given); the
    project re-opened. Raises ``ProjectError`` when it adopts another package already."""
    from fyan.adopt.package import read_package
    from fyan.project import Project

    if not folder:
        return project
    pkg = read_package(folder)
    current = project.config.adopt.package
    if current:
        if Path(current).resolve() != pkg.folder:
            raise ProjectError(f"{project.paths.root} already adopts {current}, not {pkg.folder}",
                               hint="one project adopts one Lake package; start a new project for another")
        return project
    path = project.paths.config
    text = path.read_text(encoding="utf-8")
    if "[adopt]" in text:
        raise ProjectError(f"{path}: has an [adopt] section without a package",
                           hint="set package = \"<folder>\" in it, or remove the section")
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(text.rstrip("\n") + f"\n\n[adopt]\npackage = {_toml_str(str(pkg.folder))}\n"
                   f"package_name = {_toml_str(pkg.name)}\n", encoding="utf-8")
    os.replace(tmp, path)
    return Project.open(project.paths.root)


def cmd_adopt(args: argparse.Namespace) -> CommandResult:
    from fyan.adopt.run import adopt
    from fyan.orchestrator.lock import ProjectLock
    from fyan.project import Project
    from fyan.state.gateway import Gateway

    project = Project.open(args.dir)
    with ProjectLock(project.paths.lock):
        if args.lean_project:
            from fyan.adopt.package import read_package

            read_package(args.lean_project)  # bad input fails before fyan.toml changes
        gateway = Gateway(project)
        try:
            from fyan.adopt.run import project_marks

            project_marks(project, gateway.store)  # ingested? (before fyan.toml changes)
            project = _adopt_config(project, args.lean_project)
            gateway.project = project
            report = adopt(project, gateway)
        finally:
            gateway.close()
    return CommandResult(ExitCode.OK, report.model_dump(mode="json"), _adoption_text(report))


def cmd_drift(args: argparse.Namespace) -> CommandResult:
    from fyan.adopt.run import drift_report
    from fyan.project import Project
    from fyan.state.store import Store

    project = Project.open(args.dir)
    store = Store(project.paths.db)
    try:
        report = drift_report(project, store, args.lean_project)
    finally:
        store.close()
    text = "\n".join([f"Blueprint of {project.name} against {report.package}:", *_targets_text(report),
                      _drift_text(report.drift, report.counts),
                      *_connectivity_text(report.isolated, report.components)])
    return CommandResult(ExitCode.INCOMPLETE if report.drift else ExitCode.OK, report.model_dump(mode="json"), text)


# -- export ----------------------------------------------------------------------------------

def cmd_export(args: argparse.Namespace) -> CommandResult:
    from fyan.project import Project
    from fyan.specifier.blueprint import export_blueprint

    project = Project.open(args.dir)
    if args.format == "patch":
        return _export_patch(project, args)
    report = export_blueprint(project, Path(args.out) if args.out else None)
    out = Path(report.out)
    if out.parts[-2:] == ("blueprint", "src"):
        render_hint = f"Render it with leanblueprint: cd {_quote(out.parent.parent)} && leanblueprint web"
    else:  # leanblueprint reads blueprint/src/ below the folder it runs in
        render_hint = (f"Render it with leanblueprint, which reads blueprint/src/ below the folder it runs in: "
                       f"put {_quote(out)} at <folder>/blueprint/src, then cd <folder> && leanblueprint web")
    text = (
        f"Wrote a leanblueprint source for {report.units} unit(s) to {report.out}: {', '.join(report.written)}"
        + (f" (kept your {', '.join(report.kept)})" if report.kept else "")
        + f"\n  {report.uses} \\uses item(s), {report.leanok_statements} statement(s) and {report.leanok_proofs} "
        f"proof(s) marked \\leanok, {report.lean_declarations} \\lean declaration(s)"
        + f"\n{render_hint}"
    )
    return CommandResult(ExitCode.OK, report.model_dump(), text)


def _export_patch(project, args: argparse.Namespace) -> CommandResult:
    from fyan.adopt.patch import export_patch
    from fyan.state.store import Store

    store = Store(project.paths.db)
    try:
        report = export_patch(project, store, Path(args.out) if args.out else None)
    finally:
        store.close()
    text = (f"Wrote {report.out}: {len(report.new_modules)} new module(s) for {report.package}"
            + (f" ({', '.join(report.new_modules)})" if report.new_modules else "")
            + f"; blueprint: {report.units_marked} statement/proof block(s) marked as the gate verified them, "
            f"{report.units_unmarked} \\leanok removed where it did not ({', '.join(report.blueprint_files) or 'no file'})"
            + f"\nReview, then apply in the package: cd {_quote(report.package)} && git apply {_quote(report.out)}")
    return CommandResult(ExitCode.OK, report.model_dump(), text)


# -- wiring ----------------------------------------------------------------------------------

COMMANDS: dict[str, Callable[[argparse.Namespace], CommandResult]] = {
    "init": cmd_init,
    "run": cmd_run,
    "status": cmd_status,
    "gate": cmd_gate,
    "setup": cmd_setup,
    "upgrade": cmd_upgrade,
    "verify": cmd_verify,
    "doctor": cmd_doctor,
    "shadow": cmd_shadow,
    "audit": cmd_audit,
    "export": cmd_export,
    "adopt": cmd_adopt,
    "drift": cmd_drift,
    "resume": cmd_resume,
    "daemon": cmd_daemon,
    "dashboard": cmd_dashboard,
    "selftest": cmd_selftest,
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
                   help="a reference to a label defined nowhere in the document: warn (the default; listed in the "
                   "intake report and in its unit's findings, as LaTeX prints ?? and goes on) or stop (error); "
                   "written to the project's fyan.toml ([intake] unknown_references)")
    p.add_argument("--cycles", choices=["error", "break"],
                   help="dependency cycles among the references: demote the weakest edge of each to a mention, with "
                   "a warning naming it (break, the default; a cycle of \\uses alone still stops) or stop and list "
                   "them all (error); written to fyan.toml ([intake] cycles)")
    p.add_argument("--strict", action="store_true",
                   help="refuse what LaTeX only warns about: unknown references and dependency cycles stop intake "
                   "(the same as --unknown-references error --cycles error)")
    p.add_argument("--tolerant", action="store_true",
                   help="malformed math in a statement (unbalanced $, $$, \\(, \\[, braces) or malformed environments "
                   "(\\begin{proof} closed by \\end{definition}, a proof never closed), in TeX or in Markdown: warn for "
                   "each with its file and line and read on instead of stopping (a statement never closed ends at "
                   "the next statement or proof); written to fyan.toml ([intake] tolerant)")
    g = p.add_argument_group(
        "model (written to [agents.default] of fyan.toml; without --provider the project has no model yet and "
        "`fyan run` says how to choose one)")
    g.add_argument("--provider", choices=["anthropic", "openai", "openai-compatible", "command"],
                   help="anthropic (ANTHROPIC_API_KEY), openai (OPENAI_API_KEY), openai-compatible (a vLLM, "
                   "llama.cpp or Ollama server: --base-url), or command (a coding-agent CLI: --command)")
    g.add_argument("--model", help="the model's name, e.g. " + ", ".join(f"{m} ({k})" for k, m in EXAMPLE_MODELS.items())
                   + "; needed with every provider but command")
    g.add_argument("--base-url", help="endpoint of an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    g.add_argument("--command", dest="agent_command", help='the coding-agent CLI, as you would type it, e.g. "my-agent --print"')
    p.add_argument("--lean-project", metavar="FOLDER",
                   help="an existing Lake package (a leanblueprint project's) to adopt: its declarations named by "
                   "\\lean{...} are looked up in its compiled environment by the trusted inspector; proved ones make "
                   "their units complete by adoption, ones with sorry become the statements to prove; its files are "
                   "never changed (written to [adopt] package)")
    p.add_argument("--mathlib", metavar="TAG",
                   help="the Mathlib release tag the project's Lake package requires (default: the default pair of "
                   "Fyan's table, fyan/lean/mathlib.py); the lean-toolchain that tag names is pinned with it")
    p.add_argument("--core", action="store_true",
                   help="a Lake package with no dependency (core Lean only), for documents that need no Mathlib")
    p.add_argument("--json", action="store_true", help="print a JSON result")

    p = sub.add_parser("adopt", help="adopt an existing Lake package: units whose \\lean declarations are proved in "
                       "its compiled environment become complete by adoption",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--lean-project", metavar="FOLDER", help="the Lake package (default: [adopt] package of fyan.toml)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("drift", help="compare the blueprint's \\lean, \\leanok and \\uses with the adopted package's "
                       "compiled environment (exit 3 when they disagree)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--lean-project", metavar="FOLDER", help="the Lake package (default: [adopt] package of fyan.toml)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("run", help="run every stage of every unit to quiescence (foreground, resumable)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--unit", action="append", help="restrict to this unit and its dependencies (repeatable)")
    p.add_argument("--parallelism", type=arguments.parallelism, help="stage attempts at once (default: [scheduler] parallelism)")
    p.add_argument("--watch", action="store_true",
                   help="keep running at quiescence, acting on guidance, source and proof edits (Ctrl-C stops)")
    p.add_argument("--json", action="store_true", help="no progress display; print a JSON summary")

    p = sub.add_parser("resume", help="explain what resuming will do (interrupted attempts, stale units, ...), then run",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--dry-run", action="store_true", help="only explain; change nothing")
    p.add_argument("--unit", action="append", help="restrict to this unit and its dependencies (repeatable)")
    p.add_argument("--parallelism", type=arguments.parallelism, help="stage attempts at once (default: [scheduler] parallelism)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("daemon", help="start, stop or inspect the background daemon of a project",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["start", "stop", "status", "serve"],
                   help="start (in the background), stop (SIGTERM, waits), status; serve = the daemon process itself")
    p.add_argument("dir", help="project folder")
    p.add_argument("--no-dashboard", action="store_true", help="do not serve the dashboard")
    p.add_argument("--port", type=arguments.port, help="dashboard port on 127.0.0.1 (default: [dashboard] port; 0 = any)")
    p.add_argument("--parallelism", type=arguments.parallelism, help="stage attempts at once (default: [scheduler] parallelism)")
    p.add_argument("--timeout", type=arguments.seconds, default=60.0, help="stop: seconds to wait for the daemon to exit")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("dashboard", help="serve the project's dashboard on 127.0.0.1 (foreground)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--port", type=arguments.port, help="port (default: [dashboard] port; 0 = any free port)")
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

    p = sub.add_parser("setup", help="fetch the project's Lake dependencies now (lake update, Mathlib's cache get; "
                       "resumable); the first `fyan run` does the same")
    p.add_argument("dir", help="project folder")
    p.add_argument("--json", action="store_true", help="print a JSON result")

    p = sub.add_parser("upgrade", help="move the project to another Mathlib tag and the toolchain it names: fetch, "
                       "re-check every complete unit on the new pair, reopen those that no longer reproduce")
    p.add_argument("dir", help="project folder")
    p.add_argument("--mathlib", metavar="TAG", required=True, help="the Mathlib release tag to move to, e.g. v4.34.1")
    p.add_argument("--json", action="store_true", help="print a JSON result")

    p = sub.add_parser("verify", help="re-run the completion gate of every complete unit from scratch; list those "
                       "whose completion does not reproduce (exit 3)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("--unit", action="append", help="verify only this complete unit (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("doctor", help="which model providers are usable here, and whether a Lean toolchain is present",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", help="project folder (its configured providers); without it, the hosted APIs' keys")
    p.add_argument("--online", action="store_true", help="also contact the hosted APIs' endpoints (Anthropic, OpenAI)")
    p.add_argument("--worker", action="store_true",
                   help="instead: can this node take the project's Lean tasks on a Ray cluster (toolchain pin, built "
                        "dependencies, sandbox)? prints the `ray start` line to join with")
    p.add_argument("--toolchain", help="with --worker: the toolchain pin to check (default: the project's [lean] toolchain)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("selftest", help="prove the gate on this machine's Lean toolchain: run every known cheat and the "
                       "honest controls through the real gate (the gate trusts a toolchain only after this passed)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", help="a project folder: use its [lean] settings (lake, toolchain, sandbox, "
                   "timeouts); without it, the defaults with this machine's FYAN_LEAN__* settings")
    p.add_argument("--toolchain", metavar="PIN", help="the toolchain pin to prove, e.g. leanprover/lean4:v4.31.0 "
                   "(default: the project's or the default [lean] toolchain)")
    p.add_argument("--record", metavar="DIR", help="also write the raw Lake and Lean output of every case to "
                   "DIR/<lean version>/ (fixtures for Fyan's test suite)")
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
    p.add_argument("format", choices=["blueprint", "patch"],
                   help="blueprint: a leanblueprint source (content.tex, macros, web.tex); patch: the proofs and new "
                   "declarations as a patch to the adopted Lake package, with its blueprint's \\lean and \\leanok set to "
                   "what the gate verified")
    p.add_argument("dir", help="project folder")
    p.add_argument("--out", help="output folder (default: <project>/blueprint/src); for patch the file "
                   "(default: <project>/export/adoption.patch)")
    p.add_argument("--json", action="store_true", help="print a JSON result")
    return parser


def _print(text: str, stream=None) -> None:
    print(text, file=stream or sys.stdout, flush=True)


def _quiet_closed_output() -> None:
    """The reader of our output went away (``| head -1``): say nothing more, and keep Python
    from complaining about it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _interrupt_text(signum: int, command: str, folder: str | None) -> tuple[str, str]:
    """(message, hint) for a command stopped by ``signum``: the same words wherever the signal
    arrived (starting up, ingesting, during attempts)."""
    message = f"stopped by {signal.Signals(signum).name}"
    if command in ("run", "resume", "daemon") and folder:
        return message, (f"what was done is kept (attempts in progress are recorded as interrupted); "
                         f"`fyan resume {_quote(folder)}` continues")
    return message, "run the same command again"


def _fail(args: argparse.Namespace, code: ExitCode, message: str, hint: str | None = None, **extra: Any) -> int:
    """Report an error: one JSON object on stdout with ``--json``, else lines on stderr."""
    if getattr(args, "json", False):
        _print(json.dumps({"error": message, "hint": hint, "exit_code": int(code), **extra}, ensure_ascii=False))
    else:
        _print(f"fyan: error: {message}", sys.stderr)
        if hint:
            _print(f"  hint: {hint}", sys.stderr)
    return int(code)


def main(argv: list[str] | None = None) -> int:
    """Run one command (module docstring); returns the exit code (``ExitCode``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    folder = Path(args.dir) if isinstance(getattr(args, "dir", None), str) else None
    previous = None
    if threading.current_thread() is threading.main_thread():  # SIGTERM ends a command as Ctrl-C does
        def terminated(signum, frame):
            raise Interrupted(signum)

        previous = signal.signal(signal.SIGTERM, terminated)
    try:
        try:
            result = COMMANDS[args.command](args)
        except FyanError as e:
            return _fail(args, e.exit_code, e.message, e.hint)
        except (KeyboardInterrupt, Interrupted) as e:
            signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
            message, hint = _interrupt_text(signum, args.command, getattr(args, "dir", None))
            code = ExitCode(128 + int(signum))
            if args.json:
                return _fail(args, code, message, hint, signal=signal.Signals(signum).name)
            _print(f"fyan: {message}\n  hint: {hint}", sys.stderr)  # a stop asked for, not an error
            return int(code)
        except OSError as e:
            if isinstance(e, BrokenPipeError):
                raise
            if e.filename is None:
                raise
            report = logs.crash_report(e, args.command, folder)
            return _fail(args, ExitCode.INPUT, f"{e.filename}: {e.strerror or e}",
                         f"details in {report}", log=str(report))
        except Exception as e:  # a bug: one line on the terminal, the details in a file
            report = logs.crash_report(e, args.command, folder)
            return _fail(args, ExitCode.INTERNAL, f"internal error ({type(e).__name__}); this is a bug in Fyan",
                         f"the details are in {report}; please include that file when you report it", log=str(report))
        if args.json:
            _print(json.dumps(result.payload, indent=2, ensure_ascii=False, default=str))
        else:
            if result.text:
                _print(result.text)
            stopped = result.payload.get("interrupted") if isinstance(result.payload, dict) else None
            if stopped:  # the same line as an interrupt while starting up (``_interrupt_text``)
                _print(f"fyan: {stopped['message']}\n  hint: {stopped['hint']}", sys.stderr)
        return int(result.code)
    except BrokenPipeError:
        _quiet_closed_output()
        return int(ExitCode.OK)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    raise SystemExit(main())
