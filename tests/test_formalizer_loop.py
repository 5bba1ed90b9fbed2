"""The Formalizer's compile loop: a candidate a lint rejects is never
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
    """The compiles of ``module``: cold (plain ``lean``: its source file is the last argument) and
    warm (an elaboration on a warm language server: ``lean --server elaborate <module>``)."""
    path = module.replace(".", "/") + ".lean"
    return [c for c in fake_lake.calls() if c["argv"][:1] == ["lean"] and (
        c["argv"][-1].endswith(path) or c["argv"][1:3] == ["--server", "elaborate"] and c["argv"][-1] == module)]


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


# -- warm language servers --------------------------------------------------------------
SORRY = "def IsNice (n : Int) : Prop := ∃ k : Int, n = 2 * k\n\ntheorem four_nice : IsNice 4 := sorry"


def server_starts(fake_lake) -> list[dict]:
    return [c for c in fake_lake.calls() if c["argv"][:2] == ["lean", "--server"] and c["argv"][2:3] != ["elaborate"]]


def test_iterations_run_on_one_warm_server_by_default_with_goals_fed_back(tmp_path, fake_lake):
    model = Scripted(prove=[json.dumps({"plan": "p", "lean": SORRY, "done": True}),
                            json.dumps({"plan": "p", "lean": HONEST, "done": True})])
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 3\n")
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert [(it["compiled"], it["checked"]) for it in log] == [(True, "warm"), (True, "warm")]
    assert log[1]["review"] == "clean"
    # both iterations went to one server (started once); no cold compile of the unit
    assert len(server_starts(fake_lake)) == 1
    assert len([c for c in builds_of(fake_lake, "T.DefA.Basic") if c["argv"][1] == "--server"]) == 2
    assert not [c for c in builds_of(fake_lake, "T.DefA.Basic") if c["argv"][1] != "--server"]
    second = model.sent("prove")[1].messages[-1].content
    assert "lean (warm language server) reported 0 error(s) and 1 sorry warning(s)" in second
    assert "goal at line" in second and "⊢ IsNice 4" in second  # the goal at the `sorry`
    warm = json.loads((project.paths.root / run.attempt_dir / "iteration-1-warm.json").read_text())
    assert warm["goals"][0]["at"] == "sorry" and warm["restarts"] == 0
    gateway.close()


def test_warm_servers_0_compiles_every_iteration_cold(tmp_path, fake_lake):
    model = Scripted(prove=[json.dumps({"plan": "p", "lean": SORRY, "done": True}),
                            json.dumps({"plan": "p", "lean": HONEST, "done": True})])
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 3\n[lean]\nwarm_servers = 0\n")
    run = engine.step("def-a", Stage.PROVE)
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert [it["checked"] for it in log] == ["cold", "cold"]
    assert server_starts(fake_lake) == []
    assert len(builds_of(fake_lake, "T.DefA.Basic")) == 2
    gateway.close()


def test_a_server_crash_restarts_it_and_retries_once_never_charged_to_the_proof(tmp_path, fake_lake):
    crash = fake_lake.instruments / "crash-once"  # the confined double removes it: its instrument folder
    crash.write_text("1")
    fake_lake.scenario({"server": {"crash_file": str(crash)}})
    model = Scripted(prove=json.dumps({"plan": "p", "lean": HONEST, "done": True}))
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 2\n")
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert len(log) == 1 and log[0]["review"] == "clean" and log[0]["checked"] == "warm"
    assert log[0]["restarts"] == 1 and "restarted" in log[0]["notes"][0]
    assert len(server_starts(fake_lake)) == 2 and not crash.exists()
    gateway.close()


def test_a_server_failing_twice_falls_back_to_the_cold_compile(tmp_path, fake_lake):
    fake_lake.scenario({"server": {"elaborate_s": 5}, "build": {}})
    model = Scripted(prove=json.dumps({"plan": "p", "lean": HONEST, "done": True}))
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 2\n[lean]\nbuild_timeout = 1\n")
    run = engine.step("def-a", Stage.PROVE)
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert log[0]["checked"] == "cold" and log[0]["review"] == "clean"
    assert log[0]["warm_unavailable"].count("ServerTimeout") == 2
    assert len(server_starts(fake_lake)) == 2
    gateway.close()


def test_a_proof_the_warm_server_accepted_and_the_gate_rejected_is_reported_as_such(tmp_path, fake_lake):
    model = Scripted(prove=json.dumps({"plan": "p", "lean": HONEST, "done": True}))
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 2\n")
    assert engine.step("def-a", Stage.PROVE).status is RunStatus.SUCCEEDED
    # the gate never uses a warm server: its own cold compile fails (the running server never sees this)
    fake_lake.scenario({"build": {"exit": 1, "output": "error: T/DefA/Basic.lean:9:0: (kernel) declaration has "
                                                      "metavariables"}, "build_only": ["T.DefA.Basic"]})
    elaborations = len([c for c in builds_of(fake_lake, "T.DefA.Basic") if c["argv"][1] == "--server"])
    gate = engine.step("def-a", Stage.GATE)
    assert gate.status is RunStatus.FAILED and gate.rewind_to is Stage.PROVE
    assert len([c for c in builds_of(fake_lake, "T.DefA.Basic") if c["argv"][1] == "--server"]) == elaborations
    assert [c for c in builds_of(fake_lake, "T.DefA.Basic") if c["argv"][1] != "--server"]  # cold, at the gate
    fake_lake.scenario({})
    engine.step("def-a", Stage.PROVE)
    feedback = model.sent("prove")[-1].messages[-1].content
    assert "The warm language server accepted the previous proof (iteration 1), but the completion gate's cold, " \
           "trusted compile rejected it" in feedback
    assert "(kernel) declaration has metavariables" in feedback
    gateway.close()


def test_a_header_the_warm_server_cannot_load_is_left_to_the_cold_compile(tmp_path, fake_lake):
    fake_lake.scenario({"server": {"header_error": "unknown module prefix 'Gone'"}})
    model = Scripted(prove=json.dumps({"plan": "p", "lean": HONEST, "done": True}))
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 1\n")
    run = engine.step("def-a", Stage.PROVE)
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert log[0]["checked"] == "cold" and "could not load the header: unknown module prefix 'Gone'" in \
        log[0]["warm_unavailable"]
    assert log[0]["review"] == "clean"  # decided by the cold compile, not by the server's header failure
    gateway.close()
