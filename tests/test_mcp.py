"""``fyan mcp project PROJECT``: the project's tools, listed and called by the official MCP SDK's
client, over stdio and over streamable HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from fyan.mcp_server import TOOLS
from tests.helpers import ingested

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "test-write-token"


def _project(tmp_path: Path) -> Path:
    project, gateway = ingested(tmp_path / "p")
    gateway.close()
    return project.paths.root


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "FYAN_MCP_TOKEN": TOKEN}


async def _session(client: Client, root: Path) -> dict:
    """Everything the tests check, from one connection."""
    seen: dict = {}
    tools = (await client.list_tools()).tools
    seen["tools"] = {t.name: t for t in tools}
    seen["units"] = (await client.call_tool("units", {})).structured_content
    seen["dag"] = (await client.call_tool("dag", {})).structured_content
    seen["status"] = await client.call_tool("status", {"cost": True})
    seen["audit_unknown"] = await client.call_tool("audit", {"unit": "nope"})
    seen["resume"] = (await client.call_tool("resume", {"dry_run": True})).structured_content
    unit = seen["units"]["payload"]["units"][0]["id"]
    seen["guidance_refused"] = await client.call_tool("guidance", {"unit": unit, "text": "try induction", "token": "x"})
    seen["guidance_unknown_unit"] = await client.call_tool("guidance", {"unit": "nope", "text": "t", "token": TOKEN})
    seen["guidance"] = await client.call_tool("guidance", {"unit": unit, "text": "try induction", "token": TOKEN})
    seen["run_refused"] = await client.call_tool("run", {})
    seen["unit"] = unit
    return seen


def _check(seen: dict, root: Path) -> None:
    assert set(seen["tools"]) == {t.name for t in TOOLS} >= {
        "status", "units", "audit", "gate", "dag", "drift", "verify", "guidance", "run", "stop", "resume"}
    # input schemas come from the commands' parsers
    verify = seen["tools"]["verify"].input_schema
    assert verify["properties"]["unit"]["type"] == "array" and verify["required"] == []
    assert seen["tools"]["audit"].input_schema["required"] == ["unit"]
    assert "token" in seen["tools"]["guidance"].input_schema["required"]
    units = seen["units"]["payload"]["units"]
    assert seen["units"]["exit_code"] == 0 and {u["status"] for u in units} <= {"ready", "waiting"} and len(units) >= 2
    edges = seen["dag"]["payload"]["edges"]
    assert edges and {e["unit"] for e in edges} <= {u["id"] for u in units}
    assert {(e["unit"], e["depends_on"]) for e in edges} == {(u["id"], d) for u in units for d in u["depends_on"]}
    status = seen["status"]
    assert not status.is_error and status.structured_content["payload"]["project"] == "t"
    assert "cost" in status.structured_content["payload"]
    unknown = seen["audit_unknown"]
    assert unknown.is_error and unknown.structured_content["exit_code"] == 2
    assert "nope" in unknown.content[0].text
    assert seen["resume"]["exit_code"] == 0 and seen["resume"]["payload"]["dry_run"] is True
    refused = seen["guidance_refused"]
    assert refused.is_error and "token" in refused.content[0].text
    assert seen["guidance_unknown_unit"].is_error
    assert not seen["guidance"].is_error
    assert (root / "guidance" / f"{seen['unit']}.md").read_text() == "try induction\n"
    assert seen["run_refused"].is_error and "token" in seen["run_refused"].content[0].text


def test_an_mcp_client_lists_and_calls_the_project_tools_over_stdio(tmp_path):
    root = _project(tmp_path)
    params = StdioServerParameters(command=sys.executable, args=["-m", "fyan", "mcp", "project", str(root)], env=_env())

    async def main() -> dict:
        async with Client(params) as client:
            return await _session(client, root)

    _check(anyio.run(main), root)


def test_an_mcp_client_calls_the_project_tools_over_streamable_http(tmp_path):
    root = _project(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "fyan", "mcp", "project", str(root), "--http"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        line = proc.stderr.readline()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/mcp);", line).group(1)

        async def main() -> dict:
            async with Client(url) as client:
                return await _session(client, root)

        _check(anyio.run(main), root)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
