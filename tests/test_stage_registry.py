"""The stage registry (``fyan.stages``): every stage declared once, read by the gateway, the
executor, the agents and the gates; a stage added by another package runs end to end.

The toolchain is the test double ``tests/fakes/fake_lake.py`` (``fake_lake``); the model is the
replay provider over the example's cassette, extended with the added stage's responses.
"""

from __future__ import annotations

import ast
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fyan import stages
from fyan.agents.providers.base import Message, ModelRequest
from fyan.project import Project
from fyan.state.models import RunStatus, Stage

ROOT = Path(__file__).resolve().parents[1]
UNIT = "definition-1"  # an example unit without dependencies


def test_the_stage_enum_is_the_registry_in_order():
    specs = stages.stage_specs()
    assert [s.value for s in Stage] == [s.name for s in specs] == ["reason", "plan", "audit", "prove", "gate"]
    assert [s.order for s in specs] == sorted(s.order for s in specs)
    assert [s.name for s in specs if s.completes] == ["gate"]
    assert stages.post_task_names() == ("curate", "review")
    # a value read back from an existing store is the same member
    assert Stage("prove") is Stage.PROVE and Stage.PROVE.next is Stage.GATE


def test_the_type_checkers_view_of_stage_lists_exactly_the_built_in_stages():
    """``fyan.state.models`` declares the built-in members for type checkers only; they must be
    the registry's (``fyan/stages/*.py``), or a stage renamed there would type-check but fail."""
    tree = ast.parse((ROOT / "fyan/state/models.py").read_text())
    stub = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Stage")
    declared = {t.targets[0].id: t.value.value for t in stub.body if isinstance(t, ast.Assign)}  # type: ignore[attr-defined]
    assert declared == {s.name.upper(): s.name for s in stages.stage_specs()}


def test_every_reference_resolves_to_a_function():
    for spec in (*stages.stage_specs(), *stages.post_specs()):
        for ref in (spec.check, spec.agent, getattr(spec, "inputs", None)):
            if ref is not None:
                assert callable(stages.resolve(ref)), ref


def test_the_registry_refuses_inconsistent_declarations():
    ok = stages.StageSpec(name="x", order=1, summary="", check="m:f")
    last = stages.StageSpec(name="g", order=9, summary="", check="m:f", completes=True)
    stages._validate([ok, last])
    for bad in (
        [ok, last, stages.StageSpec(name="x", order=2, summary="", check="m:f")],  # name twice
        [ok, last, stages.StageSpec(name="y", order=1, summary="", check="m:f")],  # order taken
        [stages.StageSpec(name="Bad-Name", order=1, summary="", check="m:f"), last],
        [stages.StageSpec(name="y", order=1, summary="", check="not a reference"), last],
        [ok, stages.StageSpec(name="g", order=0, summary="", check="m:f", completes=True)],  # completes, not last
        [ok],  # nothing completes a unit
    ):
        with pytest.raises(stages.RegistryError):
            stages._validate(bad)


def test_nothing_outside_the_registry_lists_the_stages():
    """The tables each layer kept of its own are gone: no module names the stage set again."""
    gone = ("STAGE_OUTPUTS", "STAGE_EXTRA_OUTPUTS", "STAGE_AGENTS", "LEAN_STAGES", "standard_checks",
            "POST_TASKS", "POST_AGENTS", "post_checks")
    found = [(p.relative_to(ROOT).as_posix(), name) for p in (ROOT / "fyan").rglob("*.py")
             for name in gone if name in p.read_text(encoding="utf-8")]
    assert found == []


PLUGIN = '''
"""A stage added outside Fyan: a one-paragraph summary of the unit, between prove and gate."""

from fyan.stages import StageSpec

SPEC = StageSpec(
    name="summarize",
    order=45,
    summary="a one-paragraph summary of the unit",
    outputs=("summary.md",),
    agent="fyan_extra_stage.summarize:agent",
    check="fyan_extra_stage.summarize:check",
)


def messages(unit: str):
    from fyan.agents.providers.base import Message

    return [Message(role="system", content="Summarize a theorem unit."),
            Message(role="user", content=f"Summarize unit {unit}.")]


def agent(session, ctx) -> None:
    reply = session.ask_messages("summarize", messages(ctx.unit.id))
    ctx.write("summary.md", reply.text)


def check(ctx):
    from fyan.state.gateway import CheckOutcome

    text = (ctx.attempt_dir / "summary.md").read_text()
    if ctx.unit.id not in text:
        return CheckOutcome(False, "the summary does not name its unit")
    return CheckOutcome(True, "summary names its unit")
'''


def _install_plugin(root: Path) -> Path:
    """A package ``fyan_extra_stage`` with its distribution metadata naming the stage module
    under the ``fyan.stages`` entry-point group, as ``pip install`` would leave it."""
    pkg = root / "fyan_extra_stage"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "summarize.py").write_text(textwrap.dedent(PLUGIN))
    dist = root / "fyan_extra_stage-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fyan-extra-stage\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[fyan.stages]\nsummarize = fyan_extra_stage.summarize\n")
    return root


def _add_responses(example: Path, text: str) -> None:
    agent = Project.open(example).config.agents.for_stage("summarize")
    request = ModelRequest(stage="summarize", unit=UNIT, prompt="summarize", model=agent.model,
                           messages=[Message(role="system", content="Summarize a theorem unit."),
                                     Message(role="user", content=f"Summarize unit {UNIT}.")],
                           max_tokens=agent.max_tokens, temperature=agent.temperature, json_output=False)
    entry = {"key": request.key(), "stage": "summarize", "unit": UNIT, "model": agent.model,
             "label": "authored example response", "text": text}
    with (example / "replay" / "cassette.jsonl").open("a") as f:
        f.write(json.dumps(entry) + "\n")


def _run(example: Path, plugin: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "fyan", *argv, str(example), "--unit", UNIT, "--json"],
                          env=env, capture_output=True, text=True, timeout=600)


def _runs(example: Path) -> list[dict]:
    """The unit's stage runs, read from the store directly: this process has no ``summarize``
    stage (the added package is on the run's path only), so ``Store`` would refuse the rows."""
    with sqlite3.connect(example / ".fyan" / "state.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM stage_runs WHERE unit = ? ORDER BY id", (UNIT,))]


def test_a_stage_from_another_package_runs_end_to_end(example, fake_lake, tmp_path):
    plugin = _install_plugin(tmp_path / "plugin")
    _add_responses(example, f"Unit {UNIT} defines divisibility of integers.\n")
    done = _run(example, plugin, "run")
    summary = json.loads(done.stdout)  # the other units were not asked for: they stay ready/waiting
    assert summary["counts"]["complete"] == 1 and summary["blocked"] == [], done.stdout + done.stderr
    runs = _runs(example)
    assert [r["stage"] for r in runs] == ["reason", "plan", "audit", "prove", "summarize", "gate"]
    assert {r["status"] for r in runs} == {RunStatus.SUCCEEDED.value}
    assert (example / "units" / UNIT / "summary.md").read_text() == f"Unit {UNIT} defines divisibility of integers.\n"
    with sqlite3.connect(example / ".fyan" / "state.db") as db:
        artifacts = {kind for (kind,) in db.execute("SELECT kind FROM artifacts WHERE unit = ?", (UNIT,))}
    assert "summary.md" in artifacts  # published by the gateway with its hash


def test_an_added_stage_is_checked_by_its_own_check(example, fake_lake, tmp_path):
    plugin = _install_plugin(tmp_path / "plugin")
    _add_responses(example, "A summary that does not say which unit it is about.\n")
    done = _run(example, plugin, "run")
    assert json.loads(done.stdout)["counts"].get("complete", 0) == 0, done.stdout + done.stderr
    runs = _runs(example)
    failed = [r for r in runs if r["stage"] == "summarize"]
    assert failed and {r["status"] for r in failed} == {RunStatus.FAILED.value}
    assert failed[-1]["reason"] == "the summary does not name its unit"
    assert "gate" not in {r["stage"] for r in runs}  # the unit never reached the completion gate
    assert not (example / "units" / UNIT / "summary.md").exists()


def test_a_store_with_a_stage_not_installed_here_is_refused_with_the_reason(tmp_path, capsys):
    """A project run with a stage an installed package added, opened where that package is
    missing: a clear error naming the stage (exit 4), not an internal error."""
    from fyan.cli import main
    from fyan.errors import ProjectError
    from fyan.state.gateway import Gateway
    from tests.helpers import ingested

    project, gateway = ingested(tmp_path / "p")
    unit = gateway.store.units()[0].id
    run = gateway.begin(unit, Stage.REASON, 3)
    gateway.close()
    with sqlite3.connect(project.paths.db) as db:
        db.execute("UPDATE stage_runs SET stage = 'summarize' WHERE id = ?", (run.id,))
    assert main(["status", str(project.paths.root)]) == 4
    err = capsys.readouterr().err
    assert "records stage 'summarize', which no installed stage module declares" in err, err
    assert "internal error" not in err
    reopened = Gateway(project)
    try:
        with pytest.raises(ProjectError, match="summarize"):
            reopened.recover()  # the gateway reads the same rows the same way
    finally:
        reopened.close()
