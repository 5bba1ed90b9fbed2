"""Run ``tests/cheats/agents/escape_sandbox.sh`` as a ``command`` agent of a project, as the user
running this script (the test runs it as root and, through ``setpriv``, as an ordinary user):

    python tests/sandbox_attack.py BASE SANDBOX

``BASE`` holds ``project/`` (with ``.fyan/state.db`` and ``workspaces/u/``) and ``prompt.txt``,
the agent's prompt. While the agent runs this process holds the state store open twice, as Fyan
does (a SQLite connection, and an fd marked inheritable, as a careless library might leave it):
``close_fds`` must keep both from the agent. Prints the agent's reply, or ``ERROR: <message>``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fyan.agents.providers.base import Message, ModelRequest  # noqa: E402
from fyan.agents.providers.command import CommandAgentProvider  # noqa: E402
from fyan.errors import ProviderError  # noqa: E402

AGENT = ROOT / "tests" / "cheats" / "agents" / "escape_sandbox.sh"


def main(base: Path, sandbox: str) -> None:
    project = base / "project"
    workspace = project / "workspaces" / "u"
    held = sqlite3.connect(project / ".fyan" / "state.db")
    held.execute("SELECT count(*) FROM stage_runs").fetchall()
    leaked = os.open(project / ".fyan" / "state.db", os.O_RDWR)
    os.set_inheritable(leaked, True)
    agent = CommandAgentProvider([str(AGENT)], timeout_s=60, sandbox=sandbox, project_root=project,
                                 pass_env=["ANTHROPIC_API_KEY"])
    request = ModelRequest(stage="prove", unit="u", prompt="prove", model="m", max_tokens=10,
                           workspace=str(workspace),
                           messages=[Message(role="user", content=(base / "prompt.txt").read_text())])
    try:
        print(agent.complete(request).text)
    except ProviderError as e:
        print(f"ERROR: {e.message}")
    os.close(leaked)
    held.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
