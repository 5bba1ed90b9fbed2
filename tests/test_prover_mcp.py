"""``fyan mcp prover`` over stdio: an MCP client of the official SDK (``mcp.client.client.Client``
with ``StdioServerParameters``) starts the server, lists its tools and calls them; the tools run
on the real core Lean 4.35.0 (``tests/lean_core.py``), the search on a small declaration index."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from fyan.prover.mcp_server import ProverConfig, main
from fyan.prover.models import Limits
from fyan.prover.search import DeclarationList, DeclarationRecord, build_index, write_declarations
from tests.test_prover_tools import HEADER, build_library

pytestmark = pytest.mark.lean_core

TOOLS = {"lean_check", "lean_goals", "lean_try", "lean_lookup", "lean_axioms", "search_declarations"}


def write_config(core_lean, tmp_path: Path, *, sandbox: str = "off") -> Path:
    out = build_library(Path(core_lean), tmp_path / "pkg")
    decls = tmp_path / "declarations.jsonl"
    records = [DeclarationRecord(name="Lib.keep", kind="theorem", module="Lib", signature="Lib.keep (p : Prop) (h : p) : p",
                                 docstring="Every proof of a proposition is a proof of it.")]
    write_declarations(decls, DeclarationList(toolchain="core", dependencies="none", count=1), records)
    build_index(decls, tmp_path / "index.sqlite")
    config = ProverConfig(unit="u", lean=str(core_lean), search_path=[str(out)], header=HEADER,
                          scratch=tmp_path / "servers", extra_env={"LEAN_PATH": str(out)}, sandbox=sandbox,
                          readable=[Path(core_lean).parent.parent, out], limits=Limits(timeout_s=60),
                          log=tmp_path / "attempt" / "tools.jsonl", index=tmp_path / "index.sqlite")
    path = tmp_path / "prover.json"
    path.write_text(config.model_dump_json())
    return path


async def session(config: Path, calls: list[tuple[str, dict]]) -> tuple[set[str], list]:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "fyan", "mcp", "prover", "--config", str(config)],
                                   env={"PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    async with Client(params) as client:
        listed = await client.list_tools()
        results = [await client.call_tool(name, args) for name, args in calls]
    return {t.name for t in listed.tools}, results


def structured(result) -> dict:
    if getattr(result, "structured_content", None):
        return result.structured_content
    return json.loads(result.content[0].text)


def run_session(core_lean, tmp_path, sandbox: str):
    config = write_config(core_lean, tmp_path, sandbox=sandbox)
    text = "theorem t (p q : Prop) (hp : p) (hq : q) : p := sorry\n"
    names, results = asyncio.run(session(config, [
        ("lean_check", {"text": text}),
        ("lean_try", {"text": text, "line": 1, "scripts": ["hq", "hp"]}),
        ("lean_lookup", {"name": "Lib.keep"}),
        ("search_declarations", {"query": "keep proof"}),
        ("lean_axioms", {"name": "Lib.gap"}),
    ]))
    return names, [structured(r) for r in results], tmp_path


def test_an_mcp_client_lists_and_calls_the_prover_tools(core_lean, tmp_path):
    names, (check, trial, lookup, search, axioms), root = run_session(core_lean, tmp_path, "off")
    assert TOOLS <= names
    assert check["status"] == "ok" and check["sorries"] == 1 and check["goals"][0]["goals"] == ["p q : Prop\nhp : p\nhq : q\n⊢ p"]
    assert trial["first_closing"] == 1 and trial["trials"][1]["closes"] and not trial["trials"][0]["closes"]
    assert lookup["exists"] and lookup["module"] == "Lib"
    assert search["hits"][0]["name"] == "Lib.keep"
    assert axioms["uses_sorry"]
    logged = [json.loads(x)["tool"] for x in (root / "attempt" / "tools.jsonl").read_text().splitlines()]
    assert logged == ["lean_check", "lean_try", "lean_lookup", "lean_axioms"]


def test_the_prover_server_runs_its_lean_in_the_sandbox(core_lean, tmp_path):
    from fyan.sandbox.runner import bwrap_status

    if bwrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status()[1]}")
    names, (check, *_), _ = run_session(core_lean, tmp_path, "require")
    assert TOOLS <= names and check["status"] == "ok" and check["sorries"] == 1, check


def test_bad_arguments_are_a_clear_error(tmp_path, capsys):
    from fyan.cli import main as fyan_main

    assert fyan_main(["mcp", "prover", "--config", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"lean": 1}')
    assert main(["--config", str(tmp_path / "bad.json")]) == 2
    with pytest.raises(SystemExit):
        main([])
