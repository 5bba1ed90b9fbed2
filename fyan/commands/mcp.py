"""``fyan mcp project PROJECT``: serve a project to outside agents over the Model Context
Protocol (``fyan.mcp_server``), on stdio (the default) or streamable HTTP; ``fyan mcp prover
PROJECT UNIT`` (or ``--config FILE``): serve one unit's prover tools to a prover agent over stdio
(``fyan.prover.mcp_server``)."""

from __future__ import annotations

import argparse
import sys

from pydantic import BaseModel

from fyan import arguments
from fyan.command_result import CommandResult
from fyan.commands._shared import require_unit
from fyan.errors import ExitCode, UsageError
from fyan.mcp_server import TOKEN_VAR, TOOLS, ProjectServer, serve_http, serve_stdio, write_token
from fyan.project import Project
from fyan.prover.mcp_server import main as serve_prover
from fyan.state.store import Store


DESCRIPTION = f"""Serve a project to outside agents over the Model Context Protocol: tools {', '.join(t.name for t in TOOLS)}.
Reading is open; guidance, run, stop and resume need the write token (printed on stderr at start, or
{TOKEN_VAR}). stdio by default; --http serves streamable HTTP on 127.0.0.1.
`fyan mcp prover PROJECT UNIT` (or --config FILE) serves one unit's prover tools (lean_check,
lean_goals, lean_try, lean_lookup, lean_axioms, search_declarations) on stdio."""


EXIT_CODES = {
    4: "bad input: configuration, project folder, a port that is taken",
    130: "stopped by Ctrl-C (SIGINT); 143 by SIGTERM",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=["project", "prover"],
                   help="what to serve: a Fyan project, or the prover tools of one of its units")
    p.add_argument("dir", nargs="?", help="project folder")
    p.add_argument("unit", nargs="?", help="with prover: the unit whose workspace the tools run in")
    p.add_argument("--config", help="with prover: a prover configuration (JSON) instead of PROJECT UNIT")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 (path /mcp) instead of stdio")
    p.add_argument("--port", type=arguments.port, default=0, help="with --http: the port (default: any free port)")
    p.add_argument("--json", action="store_true", help="print the end of serving as JSON")


class Payload(BaseModel):
    """``fyan mcp ... --json``: printed when serving ends."""

    project: str
    transport: str


def run(args: argparse.Namespace) -> CommandResult:
    if args.what == "prover":  # stdout is the protocol's: nothing else is printed there
        if args.dir and args.unit:  # an unknown unit exits 2 before any server starts
            store = Store(Project.open(args.dir).paths.db)
            require_unit(args.dir, store, args.unit)
            store.close()
        argv = ([args.dir] if args.dir else []) + ([args.unit] if args.unit else [])
        argv += ["--config", args.config] if args.config else []
        code = serve_prover(argv)
        return CommandResult(ExitCode(code), {"project": args.dir or "", "transport": "stdio"}, "")
    if not args.dir or args.unit or args.config:
        raise UsageError("fyan mcp project takes one project folder: fyan mcp project DIR [--http]")
    token = write_token()
    server = ProjectServer(args.dir, token)
    name = server.project.name
    # stdout is the protocol's on stdio: everything a person reads goes to stderr
    if not args.http:
        print(f"fyan mcp: serving {name} on stdio; write token: {token}", file=sys.stderr, flush=True)
        serve_stdio(server)
        return CommandResult(ExitCode.OK, {"project": name, "transport": "stdio"}, "")

    def ready(url: str) -> None:
        print(f"fyan mcp: serving {name} at {url}; write token: {token}", file=sys.stderr, flush=True)

    serve_http(server, args.port, ready)
    return CommandResult(ExitCode.OK, {"project": name, "transport": "http"}, "MCP server stopped")
