"""The minimal command agent of docs/command-agent.md (``examples/command-agent/agent.py``) runs
every stage of the example project: the Specifier's check, Reasoner and its review, Planner,
semantic audit, Formalizer (it edits the Lean file in the workspace), Curator and Auditor.

The agent answers from the example's prepared answers (``replay/authored/``) instead of a model
— the part a user replaces with their model call; everything else (stdin, environment,
stdout, the workspace edit) is the real contract, run by Fyan's real command provider. The
Lean toolchain is the test double ``tests/fakes/fake_lake.py`` (it follows docs/lean-contract.md,
sections "Compiling a module (plain `lean`)" and "Lake"); the sandbox is off as for every test
using it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import shutil
import sys

from fyan.cli import main
from fyan.project import Project
from fyan.state.store import Store
from tests.conftest import ROOT

AGENT = ROOT / "examples" / "command-agent" / "agent.py"


def _use_the_agent(example, monkeypatch, fake_lake=None) -> None:
    toml = example / "fyan.toml"
    text = toml.read_text()
    text = text.replace('provider = "replay"\nmodel = "example-authored"',
                        f'provider = "command"\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(AGENT))}]')
    assert 'provider = "command"' in text
    toml.write_text(text)
    (example / "replay" / "cassette.jsonl").unlink()  # nothing is replayed
    answers = example / "replay" / "authored"
    if fake_lake is not None:  # the agent runs confined, where the project folder is hidden: the
        # answers go where the test's instruments are (bound into every confinement)
        answers = Path(shutil.copytree(answers, fake_lake.instruments / "authored"))
    monkeypatch.setenv("FYAN_AGENT_ANSWERS", str(answers))  # FYAN_* reaches the agent


def test_the_documented_minimal_agent_runs_every_stage(example, fake_lake, monkeypatch, capsys):
    _use_the_agent(example, monkeypatch, fake_lake)
    code = main(["run", str(example), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["counts"] == {"complete": 11}, summary.get("blocked")
    store = Store(Project.open(example).paths.db)
    calls = store.model_calls()
    assert {c.provider for c in calls} == {"command"} and not any(c.replay for c in calls)
    assert {c.stage for c in calls} == {"specify", "reason", "plan", "audit", "prove", "curate", "review"}
    post = store.post_runs()
    assert sorted((p.task, p.status.value) for p in post) == sorted(
        [("curate", "succeeded"), ("review", "succeeded")] * 11)
    # the Reasoner's reply is its stdout; the Formalizer's is the file it edited in the workspace
    authored = example / "replay" / "authored" / "theorem-7"
    assert authored.joinpath("reason.md").read_text().strip() in (example / "units" / "theorem-7" / "proof.md").read_text()
    lean = json.loads(authored.joinpath("prove.json").read_text())["lean"].strip()
    assert lean.splitlines()[-1].strip() in (example / "units" / "theorem-7" / "Basic.lean").read_text()
    store.close()


def test_a_structured_reply_that_is_not_json_fails_the_call_with_the_reason(example, fake_lake, monkeypatch, capsys):
    """What the page warns about: when FYAN_REPLY_SCHEMA is set, stdout must be one JSON object."""
    _use_the_agent(example, monkeypatch, fake_lake)
    plan = Path(os.environ["FYAN_AGENT_ANSWERS"]) / "definition-1" / "plan.json"  # what the agent reads
    plan.write_text("Here is my plan: " + plan.read_text())
    assert main(["run", str(example), "--unit", "definition-1", "--json"]) == 3
    summary = json.loads(capsys.readouterr().out)
    [blocked] = [b for b in summary["blocked"] if b["unit"] == "definition-1"]
    assert "plan" in blocked["reason"]
