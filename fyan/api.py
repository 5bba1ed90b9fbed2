"""Fyan as a Python library: each function runs one ``fyan`` command and returns its
``CommandResult`` (``code``: the exit code the command line would exit with; ``payload``: what
``--json`` prints, described by the command's published schema; ``text``: what a person reads).

The functions are the command modules of ``fyan.commands`` (the same arguments, handler and
rendering as the command line), called with keyword arguments named as the command-line
options (``--dry-run`` is ``dry_run``; the project folder is ``project``). Nothing is printed on
stdout: every call runs as with ``--json``. Errors Fyan expects raise ``FyanError`` (its
``exit_code``, ``message`` and ``hint``); an unknown or missing argument raises ``TypeError``.

>>> from fyan import api
>>> result = api.status("my-paper")          # doctest: +SKIP
>>> result.code, result.payload["counts"]    # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fyan.command_result import CommandResult
from fyan.commands import BY_NAME, load

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "CommandResult", "adopt", "audit", "call", "doctor", "drift", "export", "gate", "init", "payload_schema",
    "resume", "run", "status", "verify",
]

#: the folder of the published JSON Schemas of the commands' ``--json`` payloads
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


def arguments(command: str) -> dict[str, argparse.Action]:
    """The arguments of ``command`` by destination name (its command-line parser's actions)."""
    parser = argparse.ArgumentParser(prog=f"fyan {command}")
    load(command).add_arguments(parser)
    return {a.dest: a for a in parser._actions if a.dest not in ("help", "json")}


def call(command: str, **options: Any) -> CommandResult:
    """Run ``command`` with ``options`` (destination names of its arguments; ``project`` for the
    project folder). Raises ``TypeError`` for an unknown command or option, or a missing
    required one; ``FyanError`` as the command does."""
    if command not in BY_NAME:
        raise TypeError(f"unknown command {command!r}; known: {', '.join(BY_NAME)}")
    if "project" in options:
        options["dir"] = str(options.pop("project"))
    actions = arguments(command)
    unknown = sorted(set(options) - set(actions))
    if unknown:
        raise TypeError(f"fyan {command} has no option {unknown[0]!r}; it takes: {', '.join(sorted(actions))}")
    missing = [d for d, a in actions.items() if a.required or (not a.option_strings and a.nargs is None)]
    missing = [("project" if d == "dir" else d) for d in missing if d not in options]
    if missing:
        raise TypeError(f"fyan {command} needs {', '.join(missing)}")
    values = {d: a.default for d, a in actions.items()}
    values.update(options)
    return load(command).run(argparse.Namespace(command=command, json=True, **values))


def payload_schema(command: str) -> dict[str, Any]:
    """The published JSON Schema of ``command``'s ``--json`` payload (``error`` for the payload
    of a failed command)."""
    return json.loads((SCHEMA_DIR / f"{command}.json").read_text(encoding="utf-8"))


def init(project: str | Path, *, source: str | Path, **options: Any) -> CommandResult:
    """``fyan init``: create a project from ``source`` (options: ``name``, ``no_ingest``,
    ``provider``, ``model``, ``base_url``, ``agent_command``, ``lean_project``, ...)."""
    return call("init", project=project, source=str(source), **options)


def run(project: str | Path, *, unit: list[str] | None = None, parallelism: int | None = None) -> CommandResult:
    """``fyan run``: run every stage of every unit (or of ``unit`` and their dependencies) to quiescence."""
    return call("run", project=project, unit=unit, parallelism=parallelism)


def resume(project: str | Path, *, dry_run: bool = False, unit: list[str] | None = None,
           parallelism: int | None = None) -> CommandResult:
    """``fyan resume``: what resuming does (``payload["plan"]``), then the run unless ``dry_run``."""
    return call("resume", project=project, dry_run=dry_run, unit=unit, parallelism=parallelism)


def status(project: str | Path, *, cost: bool = False) -> CommandResult:
    """``fyan status``: every unit's status, stage and reason; ``cost`` adds model usage."""
    return call("status", project=project, cost=cost)


def gate(project: str | Path, unit: str) -> CommandResult:
    """``fyan gate``: run the completion gate on ``unit`` now (changes no state)."""
    return call("gate", project=project, unit=unit)


def verify(project: str | Path, *, unit: list[str] | None = None) -> CommandResult:
    """``fyan verify``: re-run the gate of every complete unit (or of ``unit``) from scratch."""
    return call("verify", project=project, unit=unit)


def audit(project: str | Path, unit: str) -> CommandResult:
    """``fyan audit``: ``unit``'s semantic audit (slots, evidence, grade, staleness)."""
    return call("audit", project=project, unit=unit)


def adopt(project: str | Path, *, lean_project: str | Path | None = None) -> CommandResult:
    """``fyan adopt``: adopt the project's (or ``lean_project``) Lake package."""
    return call("adopt", project=project, lean_project=str(lean_project) if lean_project else None)


def drift(project: str | Path, *, lean_project: str | Path | None = None) -> CommandResult:
    """``fyan drift``: the blueprint against the adopted package's compiled environment."""
    return call("drift", project=project, lean_project=str(lean_project) if lean_project else None)


def export(project: str | Path, format: str, *, out: str | Path | None = None) -> CommandResult:
    """``fyan export``: ``format`` "blueprint" (leanblueprint source), "patch" (write-back to the adopted
    package) or "leanarchitect" (a patch making the project's Lake package a LeanArchitect project)."""
    return call("export", project=project, format=format, out=str(out) if out else None)


def doctor(project: str | Path | None = None, *, online: bool = False) -> CommandResult:
    """``fyan doctor``: usable model providers and the Lean toolchain."""
    return call("doctor", dir=str(project) if project else None, online=online)


#: version of every published payload schema; a change that removes or retypes a field raises it
PAYLOAD_SCHEMA_VERSION = 1


def generated_schema(command: str) -> dict[str, Any]:
    """The JSON Schema of ``command``'s payload as its ``Payload`` model gives it now (``error``:
    ``fyan.command_result.ErrorPayload``), with its ``$id`` and version; what
    ``scripts/payload_schemas.py`` writes into ``fyan/schemas/``."""
    model: type[BaseModel]
    if command == "error":
        from fyan.command_result import ErrorPayload
        model = ErrorPayload
    else:
        model = load(command).Payload
    schema = model.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"urn:fyan:payload:{command}:v{PAYLOAD_SCHEMA_VERSION}",
            "version": PAYLOAD_SCHEMA_VERSION, **schema}
