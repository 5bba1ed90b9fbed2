"""``fyan selftest``: prove the gate on this machine's Lean toolchain."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.project import Project
from fyan.selftest.run import render, run_selftest


DESCRIPTION = """Prove the completion gate on this machine's Lean toolchain: run every known cheat (each must be
refused) and the honest controls (each must pass) through the real gate. The gate trusts a
toolchain only after this passed; the passing record is kept per toolchain."""


EXIT_CODES = {
    3: "a cheat was admitted or an honest control refused (the toolchain is not trusted)",
    4: "bad input: configuration, project folder, no toolchain",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", help="a project folder: use its [lean] settings (lake, toolchain, sandbox, "
                   "timeouts); without it, the defaults with this machine's FYAN_LEAN__* settings")
    p.add_argument("--toolchain", metavar="PIN", help="the toolchain pin to prove, e.g. leanprover/lean4:v4.31.0 "
                   "(default: the project's or the default [lean] toolchain)")
    p.add_argument("--record", metavar="DIR", help="also write the raw Lake and Lean output of every case to "
                   "DIR/<lean version>/ (fixtures for Fyan's test suite)")
    p.add_argument("--json", action="store_true", help="print JSON")


class Payload(BaseModel):
    """``fyan selftest --json``: whether the gate refused every cheat and passed every control,
    with one entry per case."""

    model_config = ConfigDict(extra="allow")
    passed: bool


def run(args: argparse.Namespace) -> CommandResult:
    record = Path(args.record).expanduser() if args.record else None

    def progress(case) -> None:
        if not args.json:
            print(f"{'ok   ' if case.ok else 'WRONG'} {case.id}", flush=True)

    lean = None
    package = None
    if args.dir:
        project = Project.open(args.dir)
        lean = project.config.lean
        # the project's Lake package: its dependencies' extensions are listed there, and Mathlib
        # controls compiled there when it requires Mathlib (fyan.trust.learn)
        package = project.paths.lean
    result = run_selftest(args.toolchain or (lean.toolchain if lean else None), record_dir=record, on_case=progress,
                          lean=lean, package=package)
    return CommandResult(ExitCode.OK if result.passed else ExitCode.INCOMPLETE, result.payload(), render(result))

