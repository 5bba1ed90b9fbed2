"""The prover tools for a ``command`` agent (``fyan.prover.agent_mcp``): the MCP configurations
written into its workspace, and the server started from them *inside* the agent's bubblewrap
sandbox — an agent run by ``CommandAgentProvider`` (the confinement every command agent gets) is
an MCP client of the official SDK that reads ``.mcp.json``, starts ``fyan mcp prover``, lists and
calls its tools on the real core Lean 4.35.0 (``tests/lean_core.py``), and tries to write outside
its workspace; a second server whose call log points outside the workspace cannot write it."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from fyan.agents.providers.base import Message, ModelRequest
from fyan.agents.providers.command import SKIP_DIRS, CommandAgentProvider, snapshot
from fyan.prover import agent_mcp
from fyan.prover.mcp_server import ProverConfig
from fyan.prover.models import Limits
from fyan.prover.search import DeclarationList, DeclarationRecord, build_index, write_declarations
from tests.sandboxing import needs_bwrap
from tests.test_prover_mcp import TOOLS
from tests.test_prover_tools import HEADER, build_library

#: the agent: an MCP client that starts the server each configuration names, calls its tools,
#: then tries to write each path given on its command line
AGENT = r'''
import asyncio, json, os, sys
from pathlib import Path

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


def structured(r):
    if getattr(r, "structured_content", None):
        return r.structured_content
    return {"error": r.is_error, "text": r.content[0].text if r.content else ""}


async def serve(entry, calls):
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env"))
    async with Client(params) as client:
        listed = await client.list_tools()
        out = []
        for name, args in calls:
            r = await client.call_tool(name, args)
            out.append({"is_error": bool(r.is_error), **structured(r)})
    return sorted(t.name for t in listed.tools), out


async def main():
    ws = Path(os.environ["FYAN_WORKSPACE"])
    entry = json.loads((ws / ".mcp.json").read_text())["mcpServers"]["fyan-prover"]
    generic = json.loads(Path(os.environ["FYAN_MCP_CONFIG"]).read_text())["mcpServers"]["fyan-prover"]
    text = "theorem t (p q : Prop) (hp : p) (hq : q) : p := sorry\n"
    names, (check, lookup, search) = await serve(entry, [
        ("lean_check", {"text": text}), ("lean_lookup", {"name": "Lib.keep"}),
        ("search_declarations", {"query": "keep proof"})])
    escape = dict(entry, args=entry["args"][:-1] + [str(ws / "escape.json")])
    _, (logged,) = await serve(escape, [("lean_lookup", {"name": "Lib.keep"})])
    writes = {}
    for target in sys.argv[1:]:
        try:
            Path(target).write_text("escaped")
            writes[target] = "written"
        except OSError as e:
            writes[target] = type(e).__name__
    print(json.dumps({"tools": names, "same": entry == generic, "check": check, "lookup": lookup, "search": search,
                      "logged_outside": logged, "writes": writes}))


asyncio.run(main())
'''


def test_client_configurations_name_the_same_stdio_server(tmp_path):
    command = agent_mcp.server_command(tmp_path / ".fyan-prover" / "prover.json")
    texts = agent_mcp.client_configs(command, tmp_path)
    assert set(texts) == set(agent_mcp.CLIENT_FILES)
    claude = json.loads(texts[".mcp.json"])["mcpServers"]["fyan-prover"]
    gemini = json.loads(texts[".gemini/settings.json"])["mcpServers"]["fyan-prover"]
    codex = tomllib.loads(texts[".codex/config.toml"])["mcp_servers"]["fyan-prover"]
    for entry in (claude, gemini, codex):
        assert [entry["command"], *entry["args"]] == command
        assert entry["env"] == {"PYTHONDONTWRITEBYTECODE": "1"}
    assert command[1:6] == ["-m", "fyan", "mcp", "prover", "--config"] and command[0] == sys.executable
    assert gemini["cwd"] == str(tmp_path.resolve())
    assert json.loads(texts[".fyan-prover/mcp.json"]) == json.loads(texts[".mcp.json"])


def test_inside_the_sandbox_the_server_writes_only_its_workspace_and_runs_lean_under_the_agents_confinement(tmp_path):
    config = ProverConfig(lean="/x/lean", header=HEADER, scratch=tmp_path / "project" / ".fyan" / "s", sandbox="require",
                          hidden=[tmp_path / "project"], readable=[tmp_path / "lib"],
                          log=tmp_path / "project" / ".fyan" / "attempts" / "u" / "tools.jsonl")
    inside = agent_mcp.inside_sandbox(config, tmp_path / "ws")
    folder = (tmp_path / "ws").resolve() / ".fyan-prover"
    assert inside.scratch == folder / "servers" and inside.log == folder / "tools.jsonl"
    assert inside.sandbox == "off" and inside.hidden == [] and inside.readable == []  # a sandbox is not nested
    assert ".fyan-prover" in SKIP_DIRS  # its scratch and log are never response files


def test_written_files_replace_what_the_agent_left_and_are_not_response_files(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".gemini").mkdir(parents=True)
    (tmp_path / "elsewhere").write_text("keep")
    (ws / ".mcp.json").symlink_to(tmp_path / "elsewhere")  # never written through
    (ws / ".gemini" / "settings.json").mkdir()
    config = ProverConfig(lean="/x/lean", header=HEADER, scratch=tmp_path / "s")
    before = snapshot(ws)
    out = agent_mcp.write(ws, agent_mcp.inside_sandbox(config, ws))
    assert (tmp_path / "elsewhere").read_text() == "keep"
    assert not (ws / ".mcp.json").is_symlink() and json.loads((ws / ".mcp.json").read_text())["mcpServers"]
    assert (ws / ".gemini" / "settings.json").is_file()
    assert ProverConfig.model_validate_json((ws / ".fyan-prover" / "prover.json").read_text()).sandbox == "off"
    assert set(out.files) == set(agent_mcp.CLIENT_FILES) and out.generic == ws / ".fyan-prover" / "mcp.json"
    changed = set(snapshot(ws)) - set(before)
    assert not any(p.startswith(".fyan-prover/") for p in changed)


def test_without_a_toolchain_nothing_is_written_and_the_reason_is_kept(tmp_path, monkeypatch):
    from fyan.prover import mcp_server

    def no_toolchain(project, store, unit):
        raise ValueError("no Lean toolchain: lean not found")

    monkeypatch.setattr(mcp_server, "unit_config", no_toolchain)
    out = agent_mcp.prepare(None, None, None, tmp_path)
    assert not out.files and "no Lean toolchain" in out.note and not any(tmp_path.iterdir())


@needs_bwrap
@pytest.mark.lean_core
def test_an_agent_in_its_sandbox_starts_the_server_lists_and_calls_tools_and_nothing_writes_outside(core_lean, tmp_path):
    project = tmp_path / "project"
    (project / ".fyan" / "attempts" / "u").mkdir(parents=True)
    out = build_library(Path(core_lean), project / "lean" / "pkg")  # the project's package: read-only inside
    records = [DeclarationRecord(name="Lib.keep", kind="theorem", module="Lib", signature="Lib.keep (p : Prop) (h : p) : p",
                                 docstring="Every proof of a proposition is a proof of it.")]
    write_declarations(tmp_path / "decls.jsonl", DeclarationList(toolchain="core", dependencies="none", count=1), records)
    build_index(tmp_path / "decls.jsonl", project / ".fyan" / "declarations.sqlite")  # hidden; bound back read-only
    ws = tmp_path / "workspaces" / "u"
    ws.mkdir(parents=True)
    config = ProverConfig(unit="u", lean=str(core_lean), search_path=[str(out)], header=HEADER,
                          scratch=project / ".fyan" / "servers", extra_env={"LEAN_PATH": str(out)}, sandbox="require",
                          limits=Limits(timeout_s=60), log=project / ".fyan" / "attempts" / "u" / "tools.jsonl",
                          index=project / ".fyan" / "declarations.sqlite")
    written = agent_mcp.write(ws, agent_mcp.inside_sandbox(config, ws))
    inside = ProverConfig.model_validate_json((ws / ".fyan-prover" / "prover.json").read_text())
    # the same server but for its call log, which is outside the workspace: the one difference
    escape = inside.model_copy(update={"log": project / "lean" / "tools.jsonl"})
    (ws / "escape.json").write_text(escape.model_dump_json())
    script = tmp_path / "agent_bin" / "agent.py"
    script.parent.mkdir()
    script.write_text(AGENT)
    targets = [project / "lean" / "escaped.txt", project / ".fyan" / "escaped.txt", Path(core_lean).parent / "escaped.txt"]
    provider = CommandAgentProvider([sys.executable, str(script), *map(str, targets)], timeout_s=240, sandbox="require",
                                    project_root=project, readable=[str(Path(core_lean).parent.parent), str(script.parent)])
    response = provider.complete(ModelRequest(stage="prove", unit="u", prompt="prove_agent", model="agent",
                                              messages=[Message(role="user", content="prove")], max_tokens=10,
                                              workspace=str(ws)))
    reply = json.loads(response.text.strip().splitlines()[-1])
    assert TOOLS <= set(reply["tools"]) and reply["same"]
    check = reply["check"]
    assert check["status"] == "ok" and check["sorries"] == 1 and check["goals"][0]["goals"] == ["p q : Prop\nhp : p\nhq : q\n⊢ p"]
    assert reply["lookup"]["exists"] and reply["lookup"]["module"] == "Lib"
    assert reply["search"]["hits"][0]["name"] == "Lib.keep"  # the hidden index, bound back read-only
    # the server's own write outside the workspace failed, and nothing reached the host
    assert reply["logged_outside"]["is_error"], reply["logged_outside"]
    assert not (project / "lean" / "tools.jsonl").exists()
    assert all(v != "written" for v in reply["writes"].values()), reply["writes"]
    assert not any(t.exists() for t in targets)
    # its call log stayed in the workspace and is not a response file; the real attempt folder is untouched
    assert [json.loads(x)["tool"] for x in (ws / ".fyan-prover" / "tools.jsonl").read_text().splitlines()] == \
        ["lean_check", "lean_lookup"]
    assert not any(p.startswith(".fyan-prover/") for p in response.files) and not list((project / ".fyan" / "attempts" / "u").iterdir())
    assert written.files and all(p.is_file() for p in written.files.values())
