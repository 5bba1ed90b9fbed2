"""``fyan setup``: fetch the project's Lake dependencies now, as Fyan's own trusted step
(``fyan.lakepackage.fetch``: ``lake update`` when the manifest is missing or stale, then Mathlib's
``lake exe cache get``), with progress; resumable. The first ``fyan run`` does the same."""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict

from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.lakepackage.fetch import FetchProgress, setup_report
from fyan.project import Project

DESCRIPTION = """Fetch the project's Lake dependencies now: `lake update` when the manifest is missing or
stale, then Mathlib's `lake exe cache get`, run by Fyan itself (never by model-written code,
never inside the sandbox), with progress. An interrupted or offline fetch changes nothing that
was complete: run the same command again to resume. The first `fyan run` does the same."""

EXIT_CODES = {
    3: "the dependencies could not be fetched (offline, no toolchain): what is missing is named",
    4: "bad input: configuration, project folder",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--json", action="store_true", help="print a JSON result")


class Payload(BaseModel):
    """``fyan setup --json``: which steps ran, what each fetched, and what is still missing."""

    model_config = ConfigDict(extra="allow")


def run(args: argparse.Namespace) -> CommandResult:
    done, payload, text = setup_report(Project.open(args.dir), progress=FetchProgress(enabled=not args.json))
    return CommandResult(ExitCode.OK if done else ExitCode.INCOMPLETE, payload, text)
