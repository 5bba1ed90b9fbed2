"""``fyan dashboard``: serve the project's dashboard on 127.0.0.1 in the foreground."""

from __future__ import annotations

import argparse
import json
import sys

from pydantic import BaseModel

from fyan import arguments
from fyan.command_result import CommandResult
from fyan.dashboard.server import make_server
from fyan.errors import ExitCode
from fyan.project import Project


DESCRIPTION = """Serve the project's dashboard (units, DAG, stage history, guidance) on 127.0.0.1 in the
foreground; saving guidance needs the write token it prints. Ctrl-C stops it."""


EXIT_CODES = {
    4: "bad input: configuration, project folder, a port that is taken",
    130: "stopped by Ctrl-C (SIGINT); 143 by SIGTERM",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--port", type=arguments.port, help="port (default: [dashboard] port; 0 = any free port)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object when serving starts (url, token) and one when it stops")


class Payload(BaseModel):
    """``fyan dashboard --json``: ``event`` "serving" (with the write ``token``) on one line when
    it starts; "stopped" when the server ends by itself. Ctrl-C (SIGINT) or SIGTERM ends it as they
    end every command: with the interrupt's payload (the ``error`` schema, ``signal``; exit 130/143)."""

    event: str
    project: str
    url: str
    token: str | None = None


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    port = project.config.dashboard.port if args.port is None else args.port
    server, sock, url, token = make_server(project, port)
    if server.port_note:
        print(f"fyan: {server.port_note}", file=sys.stderr, flush=True)
    if args.json:  # one JSON object when serving starts (the URL and the write token), one at the stop
        print(json.dumps({"event": "serving", "project": project.name, "url": url, "token": token}), flush=True)
    else:
        print(f"Fyan dashboard for {project.name}: {url}\nWrite token (needed to save guidance): {token}\n"
              "Ctrl-C stops it.", flush=True)
    server.run(sockets=[sock])
    return CommandResult(ExitCode.OK, {"event": "stopped", "project": project.name, "url": url}, "dashboard stopped")

