"""The command registry: every ``fyan`` command, declared once.

A command is one module ``fyan/commands/<name>.py`` owning its arguments, its handler and its
rendering; this registry lists, for each, its name, its module and the one-line summary
``fyan --help`` shows, so the top-level help is built without importing any command (a
command's module, and what it imports, is loaded only when that command runs). The same specs
drive the command line (``fyan.cli``), the Python API (``fyan.api``) and the MCP server
(``fyan mcp``).

A command module defines:

* ``DESCRIPTION`` — what the command does (the first lines of its ``--help``);
* ``EXIT_CODES`` — ``{code: meaning}`` of the exit codes it uses besides 0, 1 and 2;
* ``add_arguments(parser)`` — its arguments (``argparse``);
* ``run(args) -> CommandResult`` — its handler: exit code, JSON payload, human text
  (``fyan.command_result``); nothing is printed but progress lines a person watches;
* ``Payload`` — the pydantic model of its ``--json`` payload, published as a JSON Schema
  (``fyan/commands/schemas/<name>.json``, ``fyan.commands.schemas``).
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class CommandSpec:
    """One command: ``name`` (``fyan <name>``), ``module`` (its implementation, imported when it
    runs) and ``summary`` (its line in ``fyan --help``)."""

    name: str
    module: str
    summary: str


COMMANDS: tuple[CommandSpec, ...] = tuple(CommandSpec(name, f"fyan.commands.{module}", summary) for name, module, summary in (
    ("init", "init", "create a project from a source document and split it into theorem units"),
    ("adopt", "adopt", "adopt an existing Lake package: units whose \\lean declarations are proved in its compiled "
     "environment become complete by adoption"),
    ("drift", "drift", "compare the blueprint's \\lean, \\leanok and \\uses with the adopted package's compiled "
     "environment (exit 3 when they disagree)"),
    ("run", "run", "run every stage of every unit to quiescence (foreground, resumable)"),
    ("resume", "resume", "explain what resuming will do (interrupted attempts, stale units, ...), then run"),
    ("daemon", "daemon", "start, stop or inspect the background daemon of a project"),
    ("dashboard", "dashboard", "serve the project's dashboard on 127.0.0.1 (foreground)"),
    ("status", "status", "summary first: units by state and chapter, the failed units and why; filters list units"),
    ("accept-source", "accept_source", "accept a change of the source: the stale units (changed statements and what "
     "depends on them) start over; the others keep their work"),
    ("gate", "gate", "run the completion gate on a unit now and print every check"),
    ("setup", "setup", "fetch the project's Lake dependencies now (lake update, Mathlib's cache get; resumable); "
     "the first `fyan run` does the same"),
    ("upgrade", "upgrade", "move the project to another Mathlib tag and the toolchain it names: fetch, re-check every "
     "complete unit on the new pair, reopen those that no longer reproduce"),
    ("verify", "verify", "re-run the completion gate of every complete unit from scratch; list those whose "
     "completion does not reproduce (exit 3)"),
    ("doctor", "doctor", "which model providers are usable here, and whether a Lean toolchain is present"),
    ("selftest", "selftest", "prove the gate on this machine's Lean toolchain: run every known cheat and the honest "
     "controls through the real gate (the gate trusts a toolchain only after this passed)"),
    ("shadow", "shadow", "SA-Pass: evaluate statements against shadow theorems; check and draft shadow sets"),
    ("audit", "audit", "show a unit's semantic audit: slots, evidence record, grade, routing, staleness"),
    ("export", "export", "write the project's units and DAG in another format (blueprint: leanblueprint TeX)"),
    ("mcp", "mcp", "serve a project to outside agents over the Model Context Protocol (stdio or streamable HTTP)"),
))

BY_NAME: dict[str, CommandSpec] = {c.name: c for c in COMMANDS}


#: Exit codes every command may use (listed once, in ``fyan --help``)
COMMON_EXIT_CODES = {
    0: "success",
    1: "internal error (a bug): one line, and the details in a crash report (its path is printed)",
    2: "bad command line (unknown option, value out of range, unknown unit id)",
}


def load(name: str) -> ModuleType:
    """The module of command ``name`` (``KeyError`` for an unknown command)."""
    return importlib.import_module(BY_NAME[name].module)


def exit_codes_text(codes: dict[int, str]) -> str:
    """The ``exit codes:`` block of a command's help: its own codes, then 1 and 2 in one line."""
    lines = ["exit codes:", "  0  success"]
    lines += [f"  {code}  {meaning}" for code, meaning in codes.items()]
    lines.append("  1  internal error (a bug; a crash report is written)   2  bad command line or unknown unit id")
    return "\n".join(lines)


def add_command(sub: argparse._SubParsersAction, spec: CommandSpec, *, full: bool) -> argparse.ArgumentParser:
    """Add ``spec``'s sub-parser to ``sub``: with its description, exit codes and arguments when
    ``full`` (this imports the command's module), else only its summary (for ``fyan --help``)."""
    if not full:
        return sub.add_parser(spec.name, help=spec.summary)
    module = load(spec.name)
    p = sub.add_parser(spec.name, help=spec.summary, description=module.DESCRIPTION,
                       epilog=exit_codes_text(module.EXIT_CODES), formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(p)
    return p
