"""The project's declaration index wired in: ``fyan setup`` builds it once per toolchain and
dependency set and reuses it, the Formalizer's tool loop searches it (building it when it is
missing), and without a toolchain it is skipped with the reason.

The trusted inspector is the double ``tests/fakes/fake_inspector.py`` (``--declarations FILE``:
docs/lean-contract.md, "The trusted inspector", the ``--declarations FILE`` row), run by the Lake
double (``fake_lake``) as the real one runs under ``lake env``."""

from __future__ import annotations

import json

from fyan.cli import main
from fyan.lean.toolchain import TOOLCHAIN_MISSING
from fyan.project import Project
from fyan.prover.environment import current_index, declaration_key
from fyan.prover.search import DeclarationIndex
from fyan.state.models import RunStatus, Stage
from tests.test_mathlib import _source
from tests.test_prover_stage import anthropic_provider, final, rounds
from tests.test_prover_loop import Server, anthropic_msg, use
from tests.test_stages import to_prove


def inspector_lists(fake) -> list[list[str]]:
    """The inspector runs that wrote a declaration list."""
    return [c["argv"] for c in fake.calls() if c["argv"][0] == "fyan-inspector" and "--declarations" in c["argv"]]


def test_setup_builds_the_index_once_and_reuses_it(tmp_path, fake_lake, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(_source(tmp_path))]) == 0
    capsys.readouterr()
    assert main(["setup", str(tmp_path / "p"), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["index"]
    assert first["state"] == "built" and "4 declarations" in first["reason"], first
    [argv] = inspector_lists(fake_lake)
    imports = [argv[i + 1] for i, a in enumerate(argv) if a == "--import"]
    assert imports == ["Init", "Mathlib"]  # Lean core and the library the units import ([lean] extra_imports)
    project = Project.open(tmp_path / "p")
    index = DeclarationIndex(project.paths.state / "declarations.sqlite", expect=declaration_key(project))
    assert index.search("add comm").hits[0].name == "Nat.add_comm"
    index.close()
    assert main(["setup", str(tmp_path / "p")]) == 0
    assert "declaration index: reused (4 declarations of" in capsys.readouterr().out
    assert len(inspector_lists(fake_lake)) == 1  # the same key: the inspector did not run again


def test_the_tool_loop_searches_the_projects_own_index(tmp_path, fake_lake, monkeypatch):
    server = Server(anthropic_msg([use(1, "search_declarations", {"query": "add comm"})]), final())
    project, gateway, engine = to_prove(tmp_path, anthropic_provider(server, monkeypatch),
                                        "[agents]\nprove_iterations = 2\n")
    assert not project.config.prover.declarations and current_index(project) is None
    run = engine.step("def-a", Stage.PROVE)
    gateway.close()
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert [r["status"] for r in rounds(project, run)] == ["ok"]
    answer = json.loads(server.bodies[1]["messages"][-1]["content"][0]["content"])
    assert answer["hits"][0]["name"] == "Nat.add_comm"  # from the index the inspector's list built
    # built by the trusted inspector once, in the copy of the project the attempt ran on
    assert len(inspector_lists(fake_lake)) == 1


def test_a_failed_inspector_leaves_search_unavailable_with_the_reason(tmp_path, fake_lake, monkeypatch):
    server = Server(anthropic_msg([use(1, "search_declarations", {"query": "add comm"})]), final())
    project, gateway, engine = to_prove(tmp_path, anthropic_provider(server, monkeypatch),
                                        "[agents]\nprove_iterations = 2\n")
    fake_lake.scenario({"inspector_process": {"exit": 3}})  # the inspector crashes: no list, no index
    run = engine.step("def-a", Stage.PROVE)
    gateway.close()
    answer = json.loads(server.bodies[1]["messages"][-1]["content"][0]["content"])
    assert answer["status"] == "unavailable" and answer["hits"] == [], answer
    assert "could not be built: the trusted inspector could not list the declarations" in answer["note"]
    assert run.status is RunStatus.SUCCEEDED, run.reason  # the attempt itself did not fail
    assert len(inspector_lists(fake_lake)) == 1


def test_without_a_toolchain_setup_skips_the_index_with_the_reason(tmp_path, no_lake, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(_source(tmp_path))]) == 0
    capsys.readouterr()
    assert main(["setup", str(tmp_path / "p"), "--json"]) == 3
    index = json.loads(capsys.readouterr().out)["index"]
    assert index["state"] == "skipped" and TOOLCHAIN_MISSING in index["reason"]
    assert not (tmp_path / "p" / ".fyan" / "declarations.sqlite").exists()
