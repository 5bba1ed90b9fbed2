"""The stages through their real code: the Specifier's model part, the Reasoner's review
pass, the Planner's checks and name lookups, the Formalizer's iterations, the command agent,
and the stage checks' refusals.

Model replies come from ``Scripted``, a provider that stands in for a model API and serves
scripted replies per prompt; the Lean toolchain is absent (``no_lake``) or the test double
(``fake_lake``). The problem.tex lints are replaced by stand-ins passed to the
Specifier (its call site is ``fyan.agents.specify.problem_lints``).
"""

from __future__ import annotations

import json
import sys

import pytest

from fyan.agents.providers.base import ModelResponse, Provider, Usage
from fyan.agents.providers.command import CommandAgentProvider
from fyan.agents.schemas import SpecFinding, SpecifyReply
from fyan.agents.specify import ModelSpecifier, UnitFinding, apply_proposal, model_specifier
from fyan.errors import InputError
from fyan.stages import stage_checks
from fyan.lean import declarations
from fyan.orchestrator.engine import Engine
from fyan.specifier.ingest import ingest
from fyan.state.gateway import CheckOutcome, FreezeSpec, Gateway
from fyan.state.models import RunStatus, Stage
from tests.helpers import CHAIN_TEX, make_project
from tests.sandboxing import needs_bwrap

SOUND = json.dumps({"verdict": "sound", "objections": []})
PROOF = "Let n be nice. By the definition there is k with n = 2k, so n is even; that is the claim."
DEF_SCAFFOLD = "def IsNice (n : Int) : Prop := ∃ k : Int, n = 2 * k"


def plan_reply(lean: str = DEF_SCAFFOLD, name: str = "IsNice", kind: str = "def", cites=(), extra_nodes=()) -> str:
    nodes = [{"name": name, "kind": kind, "statement": "s", "uses": [], "cites": list(cites)}, *extra_nodes]
    return json.dumps({"lemma_dag": {"roots": [name], "nodes": nodes}, "blueprint": "## plan", "lean": lean})


class Scripted(Provider):
    """Stands in for a model API: serves, per prompt name, the next scripted reply (the last
    one repeats) and keeps every request."""

    name = "scripted"

    def __init__(self, **replies: list[str] | str) -> None:
        self.replies = {k: list(v) if isinstance(v, list) else [v] for k, v in replies.items()}
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        queue = self.replies[request.prompt]
        text = queue.pop(0) if len(queue) > 1 else queue[0]
        return ModelResponse(text=text, usage=Usage(tokens_in=10, tokens_out=2), provider=self.name,
                             model=request.model, key=request.key())

    def sent(self, prompt: str):
        return [r for r in self.requests if r.prompt == prompt]


def project_with(tmp_path, toml: str = ""):
    project = make_project(tmp_path / "p", CHAIN_TEX, toml)
    return project, Gateway(project, stage_checks())


# -- Specifier -------------------------------------------------------------------------------

def test_specifier_refuses_an_edge_that_closes_a_cycle_and_names_it(tmp_path):
    # statements: 0 definition def:a, 1 lemma lem:b (mentions "nice" -> def-a), 2 theorem thm:c (refs lem:b)
    project, gateway = project_with(tmp_path, '[intake]\nspecifier = "model"\n')
    proposal = {"groups": [], "edges": [
        {"unit": 0, "depends_on": 2, "in_proof": True, "reason": "the definition needs the theorem"},
        {"unit": 2, "depends_on": 0, "in_proof": False, "reason": "the theorem is about nice integers"}]}
    model = Scripted(specify=json.dumps(proposal), specify_check=json.dumps({"findings": []}))
    report = ingest(project, gateway, specifier=model_specifier(project, gateway, lambda stage: model))
    deps = {(d.unit, d.depends_on, d.origin) for d in gateway.store.deps()}
    assert ("thm-c", "def-a", "proposed") in deps and ("def-a", "thm-c", "proposed") not in deps
    refused = [n for n in report.notes if "edge refused" in n]
    assert refused == ["specifier: edge refused: def-a -> thm-c would close the dependency cycle "
                       "def-a -> thm-c -> lem-b -> def-a"]
    spec = json.loads(gateway.store.meta("specification"))
    assert spec["rounds"][0]["refused_edges"][0]["reason"].endswith("def-a -> thm-c -> lem-b -> def-a")
    # the proposed edge is in problem.tex's provenance block, written by code
    assert "% depends on: def-a (proposed, statement; proposed by the Specifier: the theorem is about nice integers)" in (
        project.paths.unit("thm-c") / "problem.tex").read_text()
    # one validation call per unit, each accounted to its unit; the proposal to the project
    calls = gateway.store.model_calls()
    assert [(c.stage, c.unit) for c in calls] == [("specify", None), ("specify", "def-a"), ("specify", "lem-b"),
                                                 ("specify", "thm-c")]
    check = model.sent("specify_check")[0].messages[-1].content
    assert "% --- fyan provenance" in check and "An integer is \\textbf{nice} if it is even." in check
    gateway.close()


def test_specifier_groups_statements_and_rejects_malformed_proposals(tmp_path):
    project, gateway = project_with(tmp_path, '[intake]\nspecifier = "model"\n')
    bad = {"groups": [{"statements": [1, 7], "reason": "x"}], "edges": []}
    good = {"groups": [{"statements": [1, 2], "reason": "the theorem restates the lemma"}], "edges": []}
    model = Scripted(specify=[json.dumps(bad), json.dumps(good)], specify_check=json.dumps({"findings": []}))
    ingest(project, gateway, specifier=model_specifier(project, gateway, lambda stage: model))
    repair = model.sent("specify")[1].messages[-1].content
    assert "groups.0: statement [7] is not a statement of a unit kind" in repair
    units = {u.id: u.statements for u in gateway.store.units()}
    assert units == {"def-a": [0], "lem-b": [1, 2]}
    assert "By Lemma~\\ref{lem:b}, 4 is even." in (project.paths.unit("lem-b") / "problem.tex").read_text()
    gateway.close()


def undeclared_dependency_lint(catalogue, units, edges, files, mentions=None) -> list[UnitFinding]:
    """A stand-in lint (the real ones are tested in test_lints.py): thm-c mentions evenness,
    defined in def-a, so it must declare that dependency."""
    text = files.get("thm-c", {}).get("problem.tex", b"").decode()
    if "depends on: def-a" in text:
        return []
    return [UnitFinding(unit="thm-c", source="lint", finding=SpecFinding(
        aspect="dependencies", severity="critical", detail="uses a term of def-a without declaring the dependency"))]


def test_specifier_regenerates_on_critical_findings(tmp_path):
    project, gateway = project_with(tmp_path, '[intake]\nspecifier = "model"\n')
    first = {"groups": [], "edges": []}
    second = {"groups": [], "edges": [{"unit": 2, "depends_on": 0, "in_proof": False, "reason": "evenness"}]}
    model = Scripted(specify=[json.dumps(first), json.dumps(second)], specify_check=json.dumps({"findings": []}))
    specifier = ModelSpecifier(project, gateway, lambda stage: model, lints=undeclared_dependency_lint)
    from fyan.specifier.ingest import plan_ingest

    dag, files, meta, report = plan_ingest(project, specifier)
    assert ("thm-c", "def-a") in {(e.unit, e.depends_on) for e in dag.edges}
    feedback = model.sent("specify")[1].messages[-1].content
    assert "thm-c (lint, dependencies): uses a term of def-a without declaring the dependency" in feedback
    # units whose problem.tex did not change are not checked again
    assert [r.unit for r in model.sent("specify_check")] == ["def-a", "lem-b", "thm-c", "thm-c"]
    assert len(json.loads(meta["specification"])["rounds"]) == 2
    gateway.close()


def test_specifier_fails_closed_when_critical_findings_remain(tmp_path):
    project, gateway = project_with(tmp_path, '[intake]\nspecifier = "model"\n[agents]\nspecify_rounds = 1\n')
    critical = {"findings": [{"aspect": "conclusions", "severity": "critical", "detail": "iff became if"}]}
    model = Scripted(specify=json.dumps({"groups": [], "edges": []}), specify_check=json.dumps(critical))
    with pytest.raises(InputError, match=r"critical problems after 1 regeneration\(s\):\n  def-a: conclusions: iff became if"):
        ingest(project, gateway, specifier=model_specifier(project, gateway, lambda stage: model))
    assert len(model.sent("specify")) == 2  # the proposal and one regeneration, no more
    assert gateway.store.units() == []  # nothing registered
    gateway.close()


def test_apply_proposal_refuses_self_edges_and_keeps_document_edges(tmp_path):
    from fyan.intake.tex import read_tex
    from fyan.specifier.dag import extract_edges
    from fyan.specifier.units import build_units

    project = make_project(tmp_path / "q", CHAIN_TEX)
    catalogue = read_tex(project.source_main)
    units = build_units(catalogue, project.config.intake.unit_kinds)
    edges = extract_edges(catalogue, units).edges
    reply = SpecifyReply.model_validate({"groups": [{"statements": [1, 2], "reason": "r"}],
                                         "edges": [{"unit": 1, "depends_on": 2, "reason": "inside"}]})
    new_units, new_edges, accepted, refused = apply_proposal(catalogue, units, edges, reply)
    assert [u.id for u in new_units] == ["def-a", "lem-b"] and accepted == []
    assert refused[0].reason == "lem-b -> lem-b: both statements are in one unit"
    assert {(e.unit, e.depends_on) for e in new_edges} == {("lem-b", "def-a")}


# -- Reasoner ------------------------------------------------------------------------------------

def reason_with(tmp_path, review: list[str], toml: str = ""):
    project, gateway = project_with(tmp_path, toml)
    ingest(project, gateway)
    model = Scripted(reason=[PROOF + " (first)", PROOF + " (revised)"], reason_review=review)
    engine = Engine(project, gateway, providers=lambda stage: model)
    return project, gateway, model, engine.step("def-a", Stage.REASON)


def test_reasoner_review_refutes_a_step_and_the_proof_is_revised(tmp_path, no_lake):
    refuted = json.dumps({"verdict": "refuted", "objections": [
        {"step": "2", "severity": "critical", "objection": "n = 2k does not follow without k an integer"}]})
    project, gateway, model, run = reason_with(tmp_path, [refuted, SOUND])
    assert run.status is RunStatus.SUCCEEDED
    revision = model.sent("reason")[1].messages[-1].content
    assert "step 2: n = 2k does not follow without k an integer" in revision and PROOF + " (first)" in revision
    proof = (project.paths.unit("def-a") / "proof.md").read_text()
    assert proof.rstrip().endswith("(revised)") and proof.startswith("% --- fyan provenance")
    assert json.loads((project.paths.unit("def-a") / "proof_review.json").read_text())["round"] == 2
    gateway.close()


def test_reasoner_attempt_fails_while_the_review_still_refutes(tmp_path, no_lake):
    refuted = json.dumps({"verdict": "refuted", "objections": [{"step": "1", "severity": "critical", "objection": "false"}]})
    project, gateway, model, run = reason_with(tmp_path, [refuted], "[agents]\nreview_rounds = 1\n")
    assert run.status is RunStatus.FAILED and "the review pass refuted the proof after 1 revision(s): step 1: false" in run.reason
    assert len(model.sent("reason")) == 2 and not (project.paths.unit("def-a") / "proof.md").exists()
    gateway.close()


def test_review_verdict_must_agree_with_its_objections(tmp_path, no_lake):
    inconsistent = json.dumps({"verdict": "sound", "objections": [{"step": "1", "severity": "critical", "objection": "x"}]})
    project, gateway, model, run = reason_with(tmp_path, [inconsistent, SOUND])
    assert run.status is RunStatus.SUCCEEDED
    assert "verdict is `sound` but there are critical objections" in model.sent("reason_review")[1].messages[-1].content
    gateway.close()


# -- Planner -------------------------------------------------------------------------------------

def planned(tmp_path, plan: list[str], toml: str = ""):
    project, gateway = project_with(tmp_path, toml)
    ingest(project, gateway)
    model = Scripted(reason=PROOF, reason_review=SOUND, plan=plan)
    engine = Engine(project, gateway, providers=lambda stage: model)
    engine.step("def-a", Stage.REASON)
    return project, gateway, model, engine.step("def-a", Stage.PLAN)


def test_planner_cited_lemma_missing_without_toolchain_gets_a_repair(tmp_path, no_lake):
    project, gateway, model, run = planned(tmp_path, [plan_reply(cites=["Int.emod_two_eq"]), plan_reply()])
    assert run.status is RunStatus.SUCCEEDED
    repair = model.sent("plan")[1].messages[-1].content
    assert "not found among the upstream units' declarations (no Lean toolchain" in repair and "Int.emod_two_eq" in repair
    gateway.close()


def test_a_cited_name_that_does_not_exist_is_dropped_and_reaches_no_later_prompt(tmp_path, no_lake):
    """The model keeps a made-up name after its one repair turn: the plan check accepts the plan,
    drops the name (``lemma_names.json`` and the reason say which and why), and the prove prompt
    shows neither the name in the blueprint nor in the library section."""
    made_up = "Int.emod_two_eq_made_up"
    reply = json.loads(plan_reply(cites=[made_up]))
    reply["blueprint"] = f"## plan\nUse `{made_up}` and then {made_up} again."
    project, gateway = project_with(tmp_path)
    ingest(project, gateway)
    gateway.checks[Stage.AUDIT] = freeze_root
    model = Scripted(reason=PROOF, reason_review=SOUND, plan=json.dumps(reply),
                     prove=json.dumps({"plan": "p", "lean": DEF_SCAFFOLD, "done": True}))
    engine = Engine(project, gateway, providers=lambda stage: model)
    engine.step("def-a", Stage.REASON)
    run = engine.step("def-a", Stage.PLAN)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert len(model.sent("plan")) == 2  # one repair turn naming it, then the check decides
    assert f"dropped 1 name(s) that do not exist (never shown to a later prompt): {made_up} (not found" in run.reason
    names = json.loads((project.paths.unit("def-a") / "lemma_names.json").read_text())
    assert names["method"] == "upstream" and list(names["dropped"]) == [made_up] and names["found"] == {}
    assert made_up in (project.paths.unit("def-a") / "blueprint.md").read_text()  # the plan as written is kept
    audit = gateway.begin("def-a", Stage.AUDIT, 3)
    (project.paths.root / audit.attempt_dir / "audit").mkdir(parents=True)
    (project.paths.root / audit.attempt_dir / "audit" / "record.json").write_text("{}")
    assert gateway.finish(audit).status is RunStatus.SUCCEEDED
    engine.step("def-a", Stage.PROVE)
    prompt = "\n".join(m.content for m in model.sent("prove")[0].messages)
    assert made_up not in prompt and "(a name that does not exist, removed by Fyan)" in prompt
    gateway.close()


def test_planner_cited_lemma_checked_in_the_environment_with_a_toolchain(tmp_path, fake_lake):
    """With a toolchain: ``lean_lookup`` on a warm server of the unit (the double answers
    ``#check`` from its constants), resolving a short name through the namespaces the unit opens."""
    fake_lake.scenario({"constants": ["Int.emod_two_eq"]})
    project, gateway, model, run = planned(tmp_path, [plan_reply(cites=["Int.emod_two_eq"])])
    assert run.status is RunStatus.SUCCEEDED, run.reason
    names = json.loads((project.paths.unit("def-a") / "lemma_names.json").read_text())
    assert names["method"] == "warm" and names["found"] == {"Int.emod_two_eq": "Int.emod_two_eq"}
    assert "found in the unit's environment (Lean, warm language server)" in run.reason
    probes = [json.loads(x) for x in (project.paths.root / run.attempt_dir / "names-lookup.jsonl").read_text().splitlines()]
    assert {(p["tool"], p["input"]["name"], p["status"]) for p in probes} == {("lean_lookup", "Int.emod_two_eq", "ok")}
    gateway.close()


def test_without_a_warm_server_the_trusted_inspector_looks_cited_names_up(tmp_path, fake_lake):
    fake_lake.scenario({"constants": ["Int.emod_two_eq"]})
    project, gateway, model, run = planned(tmp_path, [plan_reply(cites=["Int.emod_two_eq"])],
                                           "[lean]\nwarm_servers = 0\n")
    assert run.status is RunStatus.SUCCEEDED, run.reason
    names = json.loads((project.paths.unit("def-a") / "lemma_names.json").read_text())
    assert names["method"] == "lean" and names["found"] == {"Int.emod_two_eq": "Int.emod_two_eq"}
    assert "no warm language server ([lean] warm_servers = 0)" in names["problem"]
    # looked up by the trusted inspector (`<inspector> … --name …`) in a gate workspace
    lookups = [c for c in fake_lake.calls() if c["argv"][:1] == ["fyan-inspector"] and "--name" in c["argv"]]
    assert lookups and "Int.emod_two_eq" in lookups[0]["argv"] and "/.fyan/gate/def-a/names" in lookups[0]["cwd"]
    gateway.close()


@pytest.mark.parametrize("reply,reason", [
    (plan_reply(extra_nodes=[{"name": "aux", "kind": "theorem", "statement": "s", "uses": ["aux2"]}]),
     "lemma aux uses aux2, which is not a node (dangling edge)"),
    (plan_reply(name="t", kind="theorem", lean="theorem t : True := by sorry\ntheorem u : True := by sorry",
                extra_nodes=[{"name": "u", "kind": "theorem", "statement": "s", "uses": ["t"]}]).replace(
        '"uses": [], "cites": []', '"uses": ["u"], "cites": []'),
     "lemma DAG has a cycle: (t -> u -> t|u -> t -> u)"),
])
def test_plan_check_refuses_bad_lemma_dags(tmp_path, no_lake, reply, reason):
    import re

    project, gateway, model, run = planned(tmp_path, [reply])
    assert run.status is RunStatus.FAILED and re.search(reason.replace("(dangling edge)", r"\(dangling edge\)"), run.reason)
    gateway.close()


def test_plan_check_refuses_a_true_root(tmp_path, no_lake):
    project, gateway = project_with(tmp_path)
    ingest(project, gateway)
    model = Scripted(reason=PROOF, reason_review=SOUND,
                     plan=plan_reply(name="nice_even", kind="theorem", lean="theorem nice_even : True := by sorry"))
    engine = Engine(project, gateway, providers=lambda stage: model)
    engine.step("def-a", Stage.REASON)
    run = engine.step("def-a", Stage.PLAN)
    assert run.status is RunStatus.FAILED
    assert "root nice_even is vacuous: the claim `⊤` holds by itself" in run.reason
    assert "a vacuous root is refused" in run.reason
    gateway.close()


# -- Formalizer ----------------------------------------------------------------------------------

def freeze_root(ctx):
    """Stand-in for the semantic audit (the audit stage): freezes the scaffold's root."""
    statement = (ctx.project.paths.unit(ctx.unit.id) / "Statement.lean").read_text()
    d = declarations.find(declarations.scan(statement), "T.DefA.IsNice")
    assert d is not None
    return CheckOutcome(True, "frozen (test audit)", freezes=[FreezeSpec(
        decl=d.full_name, normalized_signature=d.frozen_signature,
        signature_hash=declarations.signature_hash(d.frozen_signature), bound_inputs={})])


def to_prove(tmp_path, prove_provider: Provider, toml: str = ""):
    project, gateway = project_with(tmp_path, toml)
    ingest(project, gateway)
    gateway.checks[Stage.AUDIT] = freeze_root
    model = Scripted(reason=PROOF, reason_review=SOUND, plan=plan_reply())
    engine = Engine(project, gateway, providers=lambda stage: prove_provider if stage == "prove" else model)
    engine.step("def-a", Stage.REASON)
    assert engine.step("def-a", Stage.PLAN).status is RunStatus.SUCCEEDED
    audit = gateway.begin("def-a", Stage.AUDIT, 3)
    (project.paths.root / audit.attempt_dir / "audit").mkdir(parents=True)
    (project.paths.root / audit.attempt_dir / "audit" / "record.json").write_text("{}")
    assert gateway.finish(audit).status is RunStatus.SUCCEEDED
    return project, gateway, engine


def test_formalizer_attempt_that_edits_a_frozen_statement_fails(tmp_path, no_lake):
    edited = json.dumps({"plan": "p", "lean": "def IsNice (n : Int) : Prop := ∃ k : Int, n = 4 * k", "done": True})
    model = Scripted(prove=edited)
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 2\n")
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.FAILED
    assert run.reason.startswith("T.DefA.IsNice: signature changed in Basic.lean")
    # the review fed the edit back, and the model's "done" did not stop the iterations
    second = model.sent("prove")[1].messages[-1].content
    assert "You said the proof was done, but the review found problems." in second
    assert "T.DefA.IsNice: signature changed in Basic.lean" in second
    log = json.loads((project.paths.root / run.attempt_dir / "iterations.json").read_text())
    assert [i["model_says_done"] for i in log] == [True, True] and all(i["review"] != "clean" for i in log)
    gateway.close()


def test_formalizer_stops_when_the_review_is_clean(tmp_path, no_lake):
    sorry = json.dumps({"plan": "p", "lean": DEF_SCAFFOLD + "\ntheorem aux : 1 = 1 := by sorry", "done": True})
    good = json.dumps({"plan": "p", "lean": DEF_SCAFFOLD + "\ntheorem aux : 1 = 1 := rfl", "done": False})
    model = Scripted(prove=[sorry, good, "never asked"])
    project, gateway, engine = to_prove(tmp_path, model, "[agents]\nprove_iterations = 3\n")
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert len(model.sent("prove")) == 2
    assert "the proof is unfinished (`sorry`/`admit`)" in model.sent("prove")[1].messages[-1].content
    assert "theorem aux : 1 = 1 := rfl" in (project.paths.unit("def-a") / "Basic.lean").read_text()
    gateway.close()


AGENT = r'''
import os, sys
prompt = sys.stdin.read()
path = [line for line in prompt.splitlines() if line.startswith("# Unit")][0].split("`")[-2]
text = open(path).read()
text = text.replace("-- fyan: end model-written declarations",
                    "theorem nice_two : IsNice 2 := ⟨1, rfl⟩\n-- fyan: end model-written declarations")
text = text.replace("import", "-- the agent tried to change the imports\nimport")
open(path, "w").write(text)
print("added nice_two")
'''


@needs_bwrap
def test_formalizer_command_agent_edits_the_workspace_file(tmp_path, no_lake):
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = CommandAgentProvider([sys.executable, str(script)], timeout_s=60, readable=[str(script)])  # /tmp is private
    project, gateway, engine = to_prove(tmp_path, agent)
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    basic = (project.paths.unit("def-a") / "Basic.lean").read_text()
    assert "theorem nice_two : IsNice 2 := ⟨1, rfl⟩" in basic  # the agent's change is the output ...
    assert "the agent tried" not in basic  # ... inside the model-written part only
    calls = sorted((project.paths.root / run.attempt_dir / "calls").glob("*.files.json"))
    assert calls and "DefA/Basic.lean" in calls[0].read_text()
    gateway.close()
