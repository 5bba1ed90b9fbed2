"""Fyan as an MCP server for outside agents (``fyan mcp project PROJECT``), on the official
``mcp`` SDK's low-level server, over stdio or streamable HTTP (127.0.0.1 only).

Every tool is a command of ``fyan.commands`` run through ``fyan.api.call`` — the same arguments,
handler and payload as on the command line — or a view of one (``units`` and ``dag`` are the
``status`` payload's units and their dependency edges). A tool's input schema is derived from
the command's parser (``--unit`` repeatable → an array of strings, a flag → a boolean, ...); the
project is fixed when the server starts, so no tool takes a folder. A tool answers with the
command's text and, as structured content, ``{"exit_code": ..., "payload": ...}`` (the payload
follows the command's published schema, ``fyan/schemas/<command>.json``).

Reading is open to whoever holds the connection; a tool that writes (``guidance``, ``run``,
``stop``, ``resume`` unless ``dry_run``) needs the write ``token``, compared in constant time:
``FYAN_MCP_TOKEN`` when set, else one made when the server starts and printed on stderr. Like the
dashboard's, the only file a write tool writes itself is ``guidance/<unit>.md``; runs are the
background daemon's (``fyan daemon start``/``stop``), so no tool call blocks for a whole run.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from fyan import __version__, api, arguments
from fyan.command_result import CommandResult
from fyan.errors import ExitCode, FyanError, UsageError
from fyan.agents.guidance import MAX_CHARS, write_human
from fyan.project import Project

TOKEN_VAR = "FYAN_MCP_TOKEN"
TOKEN_SCHEMA = {"type": "string", "description": "the write token (printed on stderr when the server started, "
                "or FYAN_MCP_TOKEN)"}


@dataclass(frozen=True)
class ToolSpec:
    """One tool: ``command`` (whose parser gives the input schema, ``options`` of it exposed),
    ``call`` (what it does with the project folder and the arguments), ``writes`` (needs the
    token)."""

    name: str
    description: str
    command: str | None
    options: tuple[str, ...] = ()
    writes: bool = False
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    call: Callable[[str, dict[str, Any]], CommandResult] | None = None


def _units(root: str, args: dict[str, Any]) -> CommandResult:
    status = api.status(root)
    keys = ("id", "kind", "layer", "label", "title", "status", "stage", "short_reason", "depends_on", "adopted")
    units = [{k: u.get(k) for k in keys if k in u} for u in status.payload.get("units") or []]
    text = "\n".join(f"{u['id']}: {u.get('status')} ({u.get('stage') or '-'}) {u.get('short_reason', '')}".rstrip()
                     for u in units)
    return CommandResult(status.code, {"project": status.payload.get("project"), "units": units}, text)


def _dag(root: str, args: dict[str, Any]) -> CommandResult:
    status = api.status(root)
    units = status.payload.get("units") or []
    nodes = [{"id": u["id"], "layer": u.get("layer"), "status": u.get("status")} for u in units]
    edges = [{"unit": u["id"], "depends_on": d} for u in units for d in u.get("depends_on") or []]
    text = "\n".join(f"{e['unit']} -> {e['depends_on']}" for e in edges) or "no dependency edges"
    return CommandResult(status.code, {"project": status.payload.get("project"), "nodes": nodes, "edges": edges}, text)


def write_guidance(project: Project, unit: str, text: str) -> Path:
    """Replace ``guidance/<unit>.md`` with ``text`` (``fyan.agents.guidance.write_human``);
    ``UsageError`` for an unknown unit or advice over ``MAX_CHARS``."""
    known = {u["id"] for u in api.status(project.paths.root).payload.get("units") or []}
    if unit not in known:
        raise UsageError(f"no unit {unit!r}", hint="the units tool lists them")
    if len(text) > MAX_CHARS:
        raise UsageError(f"guidance is limited to {MAX_CHARS} characters")
    return write_human(project, unit, text)


def _guidance(root: str, args: dict[str, Any]) -> CommandResult:
    path = write_guidance(Project.open(root), args["unit"], args["text"])
    return CommandResult(ExitCode.OK, {"unit": args["unit"], "path": str(path)},
                         f"guidance for {args['unit']} saved; the next attempt reads it")


def _daemon(action: str) -> Callable[[str, dict[str, Any]], CommandResult]:
    def call(root: str, args: dict[str, Any]) -> CommandResult:
        return api.call("daemon", action=action, project=root, **args)
    return call


def _resume(root: str, args: dict[str, Any]) -> CommandResult:
    if args.get("dry_run", True):
        return api.resume(root, dry_run=True)
    return api.call("daemon", action="start", project=root)  # the daemon resumes the project


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("status", "Where every unit stands (status, stage, reason), blocked units grouped by cause, provider "
             "outages, whether a run is alive; cost adds model usage.", "status", ("cost",)),
    ToolSpec("units", "The theorem units: id, kind, layer, status, stage, short reason, dependencies.", None, call=_units),
    ToolSpec("dag", "The dependency DAG: units (nodes) and their dependency edges (unit depends_on another).", None,
             call=_dag),
    ToolSpec("audit", "A unit's semantic audit: slots, evidence record, grade, routing, staleness.", "audit", ("unit",)),
    ToolSpec("gate", "Run the completion gate on a unit now and report every check (changes no state).", "gate",
             ("unit",)),
    ToolSpec("drift", "The blueprint's \\lean, \\leanok and \\uses against the adopted package's compiled "
             "environment.", "drift", ("lean_project",)),
    ToolSpec("verify", "Re-run the completion gate of every complete unit (or of the given units) from scratch; list "
             "those whose completion does not reproduce.", "verify", ("unit",)),
    ToolSpec("guidance", "Save advice for a unit (guidance/<unit>.md): its next attempt's prompt quotes it, and it "
             "resets the unit's attempt budget. Needs the write token.", None, writes=True,
             extra={"unit": {"type": "string", "description": "unit id"},
                    "text": {"type": "string", "description": "the advice (Markdown)"}},
             required=("unit", "text"), call=_guidance),
    ToolSpec("run", "Start the background daemon on the project: it runs every stage of every unit and keeps "
             "watching. Needs the write token.", "daemon", ("parallelism",), writes=True, call=_daemon("start")),
    ToolSpec("stop", "Stop the project's background daemon (attempts in progress are recorded as interrupted). "
             "Needs the write token.", "daemon", ("timeout",), writes=True, call=_daemon("stop")),
    ToolSpec("resume", "What resuming will do (interrupted attempts, stale units, a lock held); with dry_run false, "
             "resume in the background daemon (needs the write token).", None,
             extra={"dry_run": {"type": "boolean", "default": True, "description": "only explain; change nothing"}},
             call=_resume),
)


def _schema_of(action: argparse.Action) -> dict[str, Any]:
    """The JSON Schema of one command-line argument."""
    description = (action.help or "").replace("%(default)s", str(action.default))
    if isinstance(action, argparse._StoreTrueAction):
        schema: dict[str, Any] = {"type": "boolean", "default": False}
    elif isinstance(action, argparse._AppendAction):
        schema = {"type": "array", "items": {"type": "string"}}
    elif action.type is arguments.seconds:
        schema = {"type": "number", "exclusiveMinimum": 0}
    elif action.type is arguments.port or getattr(action.type, "__qualname__", "").startswith("at_least."):
        schema = {"type": "integer"}
    else:
        schema = {"type": "string"}
    if action.choices:
        schema["enum"] = list(action.choices)
    if action.default not in (None, False, argparse.SUPPRESS) and "default" not in schema:
        schema["default"] = action.default
    return {**schema, "description": description}


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """A tool's input schema: its command's options (from the command's parser), its own extra
    arguments, and ``token`` for a tool that writes."""
    properties: dict[str, Any] = {}
    required = list(spec.required)
    if spec.command is not None:
        actions = api.arguments(spec.command)
        for name in spec.options:
            action = actions[name]
            properties[name] = _schema_of(action)
            if action.required or (not action.option_strings and action.nargs is None):
                required.append(name)
    properties.update(spec.extra)
    if spec.writes or spec.name == "resume":
        properties["token"] = TOKEN_SCHEMA
        if spec.writes:
            required.append("token")
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


class ProjectServer:
    """The tools of one project (``root``), with the write ``token``."""

    def __init__(self, root: str | Path, token: str) -> None:
        self.project = Project.open(root)  # bad input fails before serving
        self.root = str(self.project.paths.root)
        self.token = token
        self.tools = {t.name: t for t in TOOLS}

    def list(self) -> list[types.Tool]:
        return [types.Tool(name=t.name, description=t.description, input_schema=input_schema(t)) for t in TOOLS]

    def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Run tool ``name`` (blocking; ``serve`` runs it in a worker thread)."""
        spec = self.tools.get(name)
        if spec is None:
            return _error(f"unknown tool {name!r}; known: {', '.join(self.tools)}", None, ExitCode.USAGE)
        args = dict(arguments or {})
        token = args.pop("token", None)
        writes = spec.writes or (spec.name == "resume" and args.get("dry_run") is False)
        if writes and not (isinstance(token, str) and token
                           and hmac.compare_digest(token.encode(), self.token.encode())):
            return _error("refused: a valid write token is required (printed on stderr when the server started, or "
                          f"{TOKEN_VAR})", None, ExitCode.STATE)
        allowed = set(spec.options) | set(spec.extra)
        unknown = sorted(set(args) - allowed)
        if unknown:
            return _error(f"{name} takes no argument {unknown[0]!r}", None, ExitCode.USAGE)
        try:
            if spec.call is not None:
                result = spec.call(self.root, args)
            else:
                assert spec.command is not None
                result = api.call(spec.command, project=self.root, **args)
        except FyanError as e:
            return _error(e.message, e.hint, e.exit_code)
        payload = {"exit_code": int(result.code), "payload": result.payload}
        return types.CallToolResult(content=[types.TextContent(type="text", text=result.text or json.dumps(payload))],
                                    structured_content=payload, is_error=False)

    def server(self) -> Server:
        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.list())

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            return await anyio.to_thread.run_sync(self.call, params.name, dict(params.arguments or {}))

        return Server("fyan", version=__version__, instructions=f"Fyan project {self.project.name}: theorem units, "
                      "their dependency DAG, audits and completion gate reports; writes need the write token.",
                      on_list_tools=list_tools, on_call_tool=call_tool)


def _error(message: str, hint: str | None, code: ExitCode | int) -> types.CallToolResult:
    payload = {"exit_code": int(code), "payload": {"error": message, "hint": hint, "exit_code": int(code)}}
    text = message + (f"\nhint: {hint}" if hint else "")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=payload,
                                is_error=True)


def write_token() -> str:
    """``FYAN_MCP_TOKEN`` when set, else a new random token."""
    return os.environ.get(TOKEN_VAR) or secrets.token_urlsafe(24)


def serve_stdio(project_server: ProjectServer) -> None:
    """Serve over stdin/stdout until the client closes them."""
    server = project_server.server()

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def serve_http(project_server: ProjectServer, port: int, on_ready: Callable[[str], None]) -> None:
    """Serve streamable HTTP on 127.0.0.1:``port`` (0: any free port) at ``/mcp``;
    ``on_ready(url)`` once the socket is bound."""
    import socket

    import uvicorn

    app = project_server.server().streamable_http_app(host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    on_ready(url)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])
