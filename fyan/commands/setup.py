"""``fyan setup``: fetch the project's Lake dependencies now, as Fyan's own trusted step
(``fyan.lakepackage.fetch``: ``lake update`` when the manifest is missing or stale, then Mathlib's
``lake exe cache get``), with progress; resumable. The first ``fyan run`` does the same. Then
the declaration index of the project's toolchain and dependency set
(``fyan.prover.environment.project_index``): built once by the trusted inspector, reused after,
or skipped with the reason (no toolchain, the inspector failed); the payload's ``index`` says
which."""

from __future__ import annotations

import argparse
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.lakepackage.fetch import FetchProgress, setup_report
from fyan.project import Project

DESCRIPTION = """Fetch the project's Lake dependencies now: `lake update` when the manifest is missing or
stale, then Mathlib's `lake exe cache get`, run by Fyan itself (never by model-written code,
never inside the sandbox), with progress; then the index `search_declarations` reads (built once
per toolchain and dependency set by the trusted inspector). An interrupted or offline fetch changes nothing that
was complete: run the same command again to resume. The first `fyan run` does the same."""

EXIT_CODES = {
    3: "the dependencies could not be fetched (offline, no toolchain): what is missing is named",
    4: "bad input: configuration, project folder",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--json", action="store_true", help="print a JSON result")


class IndexState(BaseModel):
    """The declaration index after ``fyan setup`` (``.fyan/declarations.sqlite``)."""

    state: Literal["built", "reused", "skipped"]
    reason: str = Field(description="what was indexed, or why the index was skipped")


class Payload(BaseModel):
    """``fyan setup --json``: which steps ran, what each fetched, and what is still missing."""

    model_config = ConfigDict(extra="allow")
    index: IndexState | None = Field(default=None, description="the declaration index (absent: nothing fetched)")


def run(args: argparse.Namespace) -> CommandResult:
    from fyan.prover.environment import project_index

    project = Project.open(args.dir)
    done, payload, text = setup_report(project, progress=FetchProgress(enabled=not args.json))
    if done:
        state, reason, _ = project_index(project, project.paths.logs / "setup")
    else:
        state, reason = "skipped", f"the dependencies were not fetched: {payload.get('problem')}"
    payload["index"] = {"state": state, "reason": reason}
    text += f"\ndeclaration index: {state} ({reason})"
    return CommandResult(ExitCode.OK if done else ExitCode.INCOMPLETE, payload, text)
