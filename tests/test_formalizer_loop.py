"""The Formalizer's compile loop (issue 11, finding 3): a candidate a lint rejects is never
compiled, and a candidate already rejected in an attempt is never compiled again. The model is
``Scripted`` (stands in for a model API); the toolchain is the Lake double, whose call log shows
every build Fyan ran."""

from __future__ import annotations

import json

from fyan.state.models import RunStatus, Stage
from tests.test_stages import Scripted, to_prove

EVAL = ("def IsNice (n : Int) : Prop := ∃ k : Int, n = 2 * k\n\n"
        "#eval IO.FS.writeFile \"forged.txt\" \"written at compile time\"")
HONEST = "def IsNice (n : Int) : Prop := ∃ k : Int, n = 2 * k\n\ntheorem four_nice : IsNice 4 := ⟨2, rfl⟩"


def builds_of(fake_lake, module: str) -> list[dict]:
    """The compiles of ``module`` (plain ``lean``: its source file is the last argument)."""
    path = module.replace(".", "/") + ".lean"
    return [c for c in fake_lake.calls() if c["argv"][:1] == ["lean"] and c["argv"][-1].endswith(path)]


def test_a_candidate_the_lints_reject_is_never_compiled(tmp_path, fake_lake):
    model = Scripted(prove=json.dumps({"plan": "p", "lean": EVAL, "done": True}))
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 3\n")
    before = len(builds_of(fake_lake, "T.DefA.Basic"))
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.FAILED and "eval (runs code" in run.reason
    assert len(builds_of(fake_lake, "T.DefA.Basic")) == before  # three iterations, no build
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert [it["compiled"] for it in log] == [False, False, False]
    assert "not compiled: fix the lint errors first" in "\n".join(log[0]["review"])
    assert "the same candidate as iteration 1, which was rejected (not compiled again)" in log[1]["review"][0]
    assert not list(project.paths.root.rglob("forged.txt"))
    gateway.close()


def test_a_rejected_candidate_is_not_compiled_again_in_the_attempt(tmp_path, fake_lake):
    fake_lake.scenario({"build": {"exit": 1, "output": "error: T/DefA/Basic.lean:14:0: unknown identifier 'x'\n"
                                                      "error: build failed"}, "build_only": ["T.DefA.Basic"]})
    model = Scripted(prove=json.dumps({"plan": "p", "lean": HONEST, "done": True}))
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 3\n")
    before = len(builds_of(fake_lake, "T.DefA.Basic"))
    run = engine.step("def-a", Stage.PROVE)
    assert len(builds_of(fake_lake, "T.DefA.Basic")) == before + 1  # compiled once, not three times
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert [it["compiled"] for it in log] == [True, False, False]
    gateway.close()
    # control: a changed candidate is compiled again
    model2 = Scripted(prove=[json.dumps({"plan": "p", "lean": HONEST, "done": True}),
                             json.dumps({"plan": "p", "lean": HONEST + "\n\ntheorem two_nice : IsNice 2 := ⟨1, rfl⟩",
                                         "done": True})])
    project, gateway, engine = to_prove(tmp_path / "b", model2, "[agents]\nprove_iterations = 3\n")
    before = len(builds_of(fake_lake, "T.DefA.Basic"))
    run = engine.step("def-a", Stage.PROVE)
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert [it["compiled"] for it in log] == [True, True, False]
    assert len(builds_of(fake_lake, "T.DefA.Basic")) == before + 2
    gateway.close()
