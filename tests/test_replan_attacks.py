"""Attacks on the re-plan verdicts (``fyan.replan``) by a prover that wants a re-plan, or a cheat
carried into its next attempt, that Fyan's own check would not give it. Each attack has its
honest control. Where a refutation is compiled the toolchain is the test double
``tests/fakes/fake_lake.py`` (the "Compiling a module" rows of docs/lean-contract.md); what the
real Lean does with a search path is shown on the real core Lean 4.35.0 (``tests/lean_core.py``)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.replan.carry import helper_lemmas
from fyan.replan.check import check_verdict
from fyan.state.models import FailureKind, Stage
from tests.test_replan import REFUTE, give, planned

# -- a build folder the agent filled -----------------------------------------------------------


@pytest.mark.lean_core
def test_real_lean_reads_init_from_the_first_search_path_folder(core_lean, tmp_path):
    """Real Lean 4.35.0: a file without ``prelude`` imports ``Init``, found in the *first*
    ``LEAN_PATH`` folder that holds it; an ``Init.olean`` planted there declares an axiom the
    file then uses with no error and no ``sorry`` warning. So any folder an agent can write
    must never be on the search path of a compile Fyan decides on (control: the other order)."""
    for name, extra in (("planted", "axiom cheat : False\n"), ("real", "")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "Init.lean").write_text("prelude\ninductive False : Prop\n" + extra)
        subprocess.run([str(core_lean), "-o", "Init.olean", "Init.lean"], cwd=folder, check=True, timeout=120)
    (tmp_path / "f.lean").write_text("theorem x : False := cheat\n")
    results = {}
    for order in (("planted", "real"), ("real", "planted")):
        env = {**os.environ, "LEAN_PATH": os.pathsep.join(str(tmp_path / o) for o in order)}
        proc = subprocess.run([str(core_lean), "--json", "f.lean"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        results[order[0]] = (proc.returncode, "sorry" in proc.stdout, "error" in proc.stdout)
    assert results == {"planted": (0, False, False), "real": (1, False, True)}


@pytest.mark.parametrize("how", ["folder", "symlink"])
def test_an_olean_the_agent_left_in_the_workspace_build_folder_is_never_on_the_refutation_s_path(
        tmp_path, fake_lake, monkeypatch, how):
    """A command agent works in the unit workspace, so it can leave ``.fyan-build/upstream/Init.olean``
    (first on the compile's search path) there, or make ``.fyan-build`` a link to a folder of its
    own. The refutation Fyan compiles must see neither; the link's target is left untouched."""
    import fyan.lakepackage.workspace as workspace

    project, _, ctx = planned(tmp_path)
    build = project.paths.workspace("def-a") / ".fyan-build"
    outside = tmp_path / "agent-own"
    planted = (outside if how == "symlink" else build) / "upstream" / "Init.olean"
    planted.parent.mkdir(parents=True)
    planted.write_text("agent-made olean")
    if how == "symlink":
        build.parent.mkdir(parents=True, exist_ok=True)
        build.symlink_to(outside, target_is_directory=True)
    seen = []
    real = workspace.compile_module

    def spy(setup, **kw):
        seen.append([str(p) for p in kw["search_path"] if (p / "Init.olean").exists()] +
                    [str(p) for p in kw["search_path"] if p.is_symlink() or p.parent.is_symlink()])
        return real(setup, **kw)

    monkeypatch.setattr(workspace, "compile_module", spy)
    give(ctx, REFUTE)
    out = check_verdict(ctx)
    assert out is not None and (out.failure_kind, out.rewind_to) == (FailureKind.REPLAN, Stage.PLAN), out.reason
    assert seen and seen == [[]] * len(seen), seen  # the control: it still compiled, with nothing planted in reach
    assert (outside / "upstream" / "Init.olean").exists() or how == "folder"


# -- helpers carried into the next attempt -----------------------------------------------------

HELPERS = """theorem helper_ok (n : Nat) : n + 0 = n := by
  simp

theorem by_full_name (n : Nat) : twice 1 = 1 := T.DefA.false_lemma 1 (by decide)

theorem by_guillemets (n : Nat) : twice 1 = 1 := «false_lemma» 1 (by decide)

theorem by_root (n : Nat) : twice 1 = 1 := _root_.T.DefA.false_lemma 1 (by decide)

theorem through_a_dropped_helper : twice 1 = 1 := by_full_name 0

theorem through_a_kept_helper (n : Nat) : n + 0 = n := helper_ok n

theorem false_lemma_like (n : Nat) : n = n := rfl

theorem uses_a_similar_name (n : Nat) : n = n := false_lemma_like n
"""


def test_a_helper_proved_from_the_refuted_lemma_is_dropped_however_it_names_it():
    """Kept: only helpers that do not rest on the refuted lemma, by any spelling of its name
    (namespace-qualified, ``_root_``, guillemets) or through another dropped helper. The controls:
    a helper using a kept helper, a lemma whose name merely starts like the refuted one."""
    kept = [name for name, _ in helper_lemmas(HELPERS, {"false_lemma", "root_thm", "twice"}, "false_lemma")]
    assert kept == ["helper_ok", "through_a_kept_helper", "false_lemma_like", "uses_a_similar_name"]


def test_a_helper_that_is_a_cheat_is_never_carried():
    """The carried helpers go into the next attempt's starting file: a cheat there would still be
    refused by the gate, but it must not get there. A helper may rest on the attempt's ``macro``
    or ``axiom`` without naming a refused word, so an attempt holding one keeps no helper."""
    cheats = {
        "macro_sorry": "macro \"cheat_tac\" : term => `(sorry)\n\ntheorem h1 : 1 = 2 := by\n  exact cheat_tac",
        "axiom": "axiom bad : 1 = 2\n\ntheorem h2 : 1 = 2 := bad",
        "open_in_axiom": "open Nat in\naxiom bad2 : False\n\ntheorem h3 : False := bad2",
        "native": "theorem h4 : 10 = 10 := by native_decide",
        "sorry_ax": "theorem h5 : 1 = 2 := _root_.sorryAx _ false",
        "warn_off": "set_option warn.sorry false in\ntheorem h6 : 1 = 2 := by\n  exact sorry",
        "exit": "theorem h7 : 1 = 1 := rfl\n#exit",
    }
    honest = "theorem planned_step : 1 = 1 := by\n  sorry\n\ntheorem honest_control : 2 = 2 := rfl\n"
    for name, text in cheats.items():  # beside a refused construct, nothing of the attempt is carried
        kept = [n for n, _ in helper_lemmas(text + "\n\n" + honest, {"planned_step"}, "nothing")]
        # a sorry (however qualified) only drops its own helper, as the planned lemmas' sorry must
        assert kept == (["honest_control"] if name == "sorry_ax" else []), (name, kept)
    # the control: an attempt whose planned lemma is still sorry keeps its honest helper
    assert [n for n, _ in helper_lemmas(honest, {"planned_step"}, "nothing")] == ["honest_control"]


# -- the negation proof ------------------------------------------------------------------------

TRICKS = {
    "sorry": "by sorry",
    "root_sorry_ax": "fun h => _root_.sorryAx _ false",
    "macro_sorry": "by trivial\n\nmacro \"x\" : term => `(sorry)",
    "axiom_after": "bad\n\naxiom bad : False",
    "open_in_axiom": "by exact bad\n\nopen Nat in\naxiom bad : False",
    "native_decide": "by native_decide",
    "decide_native": "by decide +native",
    "reduce_bool": "fun h => Lean.ofReduceBool _ _ rfl",
    "exit": "by\n  exact h\n#exit",
    "csimp": "by trivial\n\n@[csimp] theorem x : @id = @id := rfl",
    "implemented_by": "by trivial\n\n@[implemented_by id] def f (n : Nat) : Nat := n",
    "extern": "by trivial\n\n@[extern \"f\"] def f (n : Nat) : Nat := n",
    "warn_off": "by\n  set_option warn.sorry false in\n  exact sorry",
    "skip_kernel": "by\n  set_option debug.skipKernelTC true in exact h",
    "eval": "by trivial\n\n#eval IO.println \"x\"",
    "comment_hidden": "by\n  /- native_decide -/ exact sorry",
    "string_hidden": "by\n  exact (fun _ => sorry) \"-/\"",
}


@pytest.mark.parametrize("trick", list(TRICKS), ids=list(TRICKS))
def test_a_negation_proof_with_a_cheat_is_refused_and_never_compiled(tmp_path, fake_lake, trick):
    _, _, ctx = planned(tmp_path)
    before = len(fake_lake.compiles())
    give(ctx, {**REFUTE, "negation_proof": TRICKS[trick]})
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and out.rewind_to is None, out.reason
    assert "the refutation was not compiled" in out.reason, out.reason
    assert len(fake_lake.compiles()) == before


@pytest.mark.parametrize("statement", [
    "¬ (∀ (n : Nat), twice n = n)",                      # a binder dropped: a different (true) negation
    "¬ (∀ (m : Nat) (h : 0 < m), twice m = m + 1)",      # a different claim under renamed binders
    "¬ (∀ (n : Nat) (h : 0 < n), twice n = n) ∨ True",   # weakened
])
def test_a_negation_the_model_states_differently_is_refused(tmp_path, fake_lake, statement):
    _, _, ctx = planned(tmp_path)
    give(ctx, {**REFUTE, "negation_statement": statement})
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and "as Fyan renders it" in out.reason
    give(ctx, {**REFUTE, "negation_statement": "¬ (∀ (n : Nat) (h : 0 < n), twice n = n)"})  # control
    assert check_verdict(ctx).failure_kind is FailureKind.REPLAN


def test_the_lints_refuse_sorry_ax_however_it_is_qualified():
    for text in ("_root_.sorryAx _ false", "@_root_.sorryAx _ false", "(_root_.sorryAx False true)"):
        findings = lint(f"theorem t : False := {text}")
        assert "sorry" in {f.rule for f in findings}, text
    for honest in ("theorem t : True := Foo.sorry_lemma", "theorem t : True := h.admit_x"):
        assert not [f for f in lint(honest) if f.rule == "sorry"] and lint_errors(lint(honest)) == [], honest


# -- the verdict file and the lemma it names ---------------------------------------------------

def test_a_verdict_on_a_frozen_root_is_refused_even_when_the_plan_no_longer_lists_it_as_a_root(tmp_path, fake_lake):
    """The freeze, not the Planner's lemma DAG, says what is a root (control: the planned lemma)."""
    project, _, ctx = planned(tmp_path)
    dag_file = project.paths.unit("def-a") / "lemma_dag.json"
    dag = json.loads(dag_file.read_text())
    dag_file.write_text(json.dumps({**dag, "roots": ["twice"]}))
    give(ctx, {**REFUTE, "lemma": "root_thm", "negation_proof": "fun h => absurd (h 0) (by decide)"})
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and "root_thm is a frozen root" in out.reason
    give(ctx, REFUTE)
    assert check_verdict(ctx).failure_kind is FailureKind.REPLAN


@pytest.mark.parametrize("lemma", ["../../Statement", "false_lemma/../root_thm", "T.DefA.false_lemma", "false_lemma "])
def test_a_lemma_name_that_is_not_a_node_of_the_plan_is_refused(tmp_path, fake_lake, lemma):
    _, _, ctx = planned(tmp_path)
    give(ctx, {**REFUTE, "lemma": lemma})
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and "is not a lemma of the plan" in out.reason


def test_a_verdict_file_that_is_a_link_is_never_read(tmp_path, fake_lake):
    _, _, ctx = planned(tmp_path)
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps(REFUTE))
    (ctx.attempt_dir / "verdict.json").symlink_to(real)
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and "not a regular file" in out.reason
