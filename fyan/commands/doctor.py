"""``fyan doctor``: which model providers are usable here, whether a Lean toolchain is present; or
(``--worker``) whether this node can take a project's Lean tasks on a Ray cluster."""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict

from fyan.command_result import CommandResult
from fyan.config import FyanConfig
from fyan.doctor import diagnose, render
from fyan.errors import ExitCode
from fyan.executor.workercheck import check_worker, render_worker
from fyan.project import Project


DESCRIPTION = """Say which model providers are usable here (keys, endpoints; --online contacts them) and whether
a Lean toolchain is present and trusted (its selftest passed); with a project, its configured
providers. --worker instead checks whether this node can take the project's Lean tasks on a Ray
cluster."""


EXIT_CODES = {
    3: "something needed is missing (each finding says what to do)",
    4: "bad input: configuration, project folder",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", help="project folder (its configured providers); without it, the hosted APIs' keys")
    p.add_argument("--online", action="store_true", help="also contact the hosted APIs' endpoints (Anthropic, OpenAI)")
    p.add_argument("--worker", action="store_true",
                   help="instead: can this node take the project's Lean tasks on a Ray cluster (toolchain pin, built "
                        "dependencies, sandbox)? prints the `ray start` line to join with")
    p.add_argument("--toolchain", help="with --worker: the toolchain pin to check (default: the project's [lean] toolchain)")
    p.add_argument("--json", action="store_true", help="print JSON")


class Payload(BaseModel):
    """``fyan doctor --json``: ``ok`` and the findings (providers, toolchain); with --worker the
    node's checks."""

    model_config = ConfigDict(extra="allow")
    ok: bool
    project: str | None = None


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir) if args.dir else None
    if args.worker:  # may this node advertise the `lean` resource on a Ray cluster?

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

