"""The model-driven stages: Reasoner, Planner, semantic auditor, Formalizer.

Each stage function reads the unit's published artifacts (read-only), asks its model through a
``StageSession`` and writes its outputs into the attempt folder — nothing else. Provenance
blocks, imports, namespaces and file layout are written by code. Whether the attempt counts is
decided afterwards by the gateway's deterministic check (``fyan.gates.stages``).

* **Reasoner** — ``proof.md``, then a review pass (``reason_review``) that tries to refute its
  steps, in words and with counterexample searches the worker runs confined (``fyan.refute``);
  a critical objection, or ``[refute] threshold`` executed refutations standing against the
  proof, sends it back for revision (``[agents] review_rounds`` times); if one still stands, the
  attempt fails (the agent declines; nothing is published). The last review is kept as
  ``proof_review.json``, the searches under ``refutations/`` with ``refutations.json``.
* **Planner** — lemma DAG, blueprint, scaffold; the existing lemmas a node ``cites`` are looked
  up in the environment (``fyan.lakepackage.names``) before the plan is accepted: a missing name is a
  form repair with the names quoted, and the gateway's check looks them up again.
* **Formalizer** — first the frozen statements are tried on small instances (``fyan.refute.
  frozen``): a refutation ends the attempt before any proving, and the prove check decides; then
  up to ``[agents] prove_iterations`` iterations of plan → prove → review: the
  model states its plan and writes the proofs (or, for a command agent, edits ``Basic.lean`` in
  the unit workspace, confined); the review is code: frozen declarations intact, source lints,
  and with a toolchain the build's diagnostics (errors, ``sorry``), fed back into the next
  iteration. A candidate the lints reject is not compiled (its compile-time code never runs),
  and a candidate already rejected in this attempt is not compiled again. The model's ``done``
  is only a request, recorded in ``iterations.json``: iterations stop when the review finds
  nothing, and the completion gate decides. The model may instead end the attempt with a
  verdict asking for a re-plan (``fyan.replan``: a planned lemma refuted, or a step too hard),
  written as ``verdict.json`` and checked by the prove check; helper lemmas a checked re-plan
  kept start the next attempt's ``Basic.lean``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import hashlib
import json

from pydantic import ValidationError

from fyan.sandbox import safefile
from fyan.models.replies import LemmaDag
from fyan.agents.schemas import PlanReply, ProveReply, ReasonReview
from fyan.agents.session import StageSession
from fyan.errors import ModelOutputError
from fyan.audit.record import AuditResult
from fyan.models.gate_report import GateReport
from fyan.gates.stages import frozen_problems, provenance_block
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.lakepackage.package import model_part, render_unit_file, unit_module, unit_namespace, upstream
from fyan.lean.toolchain import Toolchain, discover
from fyan.lakepackage.trusted import GateEnvironmentError, resolve_setup
from fyan.lakepackage.workspace import compile_candidate, prepare_workspace
from fyan.project import Project
from fyan.agents.replan import attempt_verdict, carried_helpers, record_reply_verdict, record_workspace_verdict, replan_request
from fyan.replan.carry import with_helpers
from fyan.replan.verdict import VERDICT_FILE
from fyan.state.models import Stage, StageRun, UnitRecord
from fyan.state.store import Store

NONE = "(none)"


@dataclass
class UnitContext:
    """Read-only view of a unit for stage code."""

    project: Project
    store: Store
    unit: UnitRecord
    run: StageRun

    @property
    def attempt_dir(self) -> Path:
        return self.project.paths.root / self.run.attempt_dir

    def read(self, name: str) -> str | None:
        path = self.project.paths.unit(self.unit.id) / name
        return safefile.read_text(path) if path.is_file() else None

    def write(self, name: str, text: str) -> None:
        path = self.attempt_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    @property
    def provenance(self) -> str:
        return provenance_block(self.read("problem.tex") or "") or ""

    @property
    def statement_tex(self) -> str:
        return (self.read("problem.tex") or "").replace(self.provenance, "").strip()

    @property
    def namespace(self) -> str:
        return unit_namespace(self.project, self.unit)

    def upstream(self) -> str:
        parts = []
        adoptions = self.store.adoptions()
        for dep in upstream(self.store, self.unit.id):
            problem = (self.project.paths.unit(dep.id) / "problem.tex")
            text = safefile.read_text(problem) if problem.is_file() else ""
            block = provenance_block(text) or ""
            adopted = adoptions.get(dep.id)
            if adopted is not None and adopted.outcome == "adopted":  # proved in the adopted package: use it as is
                lean = [f"    {x.get('name')} : {x.get('type_pp') or '?'}   (module {x.get('module')})"
                        for x in adopted.evidence.get("decls", [])]
                parts.append(
                    f"- `{dep.id}` ({dep.kind}), proved in the adopted Lake package (imported):\n"
                    + "\n".join("    " + line for line in text.replace(block, "").strip().splitlines())
                    + "\n  Lean (existing, proved):\n" + "\n".join(lean))
                continue
            lean = [f"    {f.normalized_signature}" for f in self.store.freezes(dep.id)]
            parts.append(
                f"- `{dep.id}` ({dep.kind}), Lean namespace `{unit_namespace(self.project, dep)}`:\n"
                + "\n".join("    " + line for line in text.replace(block, "").strip().splitlines())
                + ("\n  Lean (frozen):\n" + "\n".join(lean) if lean else "")
            )
        return "\n".join(parts) if parts else NONE

    def guidance(self) -> str:
        """Advice for this attempt as a quoted comment block (``fyan.agents.guidance``)."""
        from fyan.agents.guidance import advice_block

        return advice_block(self.project, self.store, self.unit.id)

    def last_failure(self, stage: Stage) -> StageRun | None:
        runs = [r for r in self.store.runs(self.unit.id) if r.stage is stage and r.status.value == "failed"]
        return runs[-1] if runs else None


def reason(s: StageSession, u: UnitContext) -> None:
    """The Reasoner: a proof, a review that tries to refute it (objections in words and
    counterexample searches, which Fyan runs confined: ``fyan.refute.review``), revisions. The
    proof goes back for revision on a critical objection, or when ``[refute] threshold`` executed
    refutations stand against it (``fyan.refute.record.standing``; worthless searches never
    count); the revision is told to keep the steps the refutations do not touch."""
    from fyan.refute.record import RefutationLog, describe, standing
    from fyan.refute.review import revision_request, run_review_searches

    values = {
        "unit": u.unit.id, "kind": u.unit.kind, "problem": u.statement_tex,
        "source_proof": (u.read("source_proof.tex") or "(the document gives no proof)").strip(),
        "upstream": u.upstream(), "guidance": u.guidance(), "review": NONE,
    }
    rounds = u.project.config.agents.review_rounds
    threshold = u.project.config.refute.threshold
    log = RefutationLog()
    refuted: list = []
    for round_ in range(rounds + 1):
        text = s.ask("reason", values).text.strip()
        review = s.ask_json("reason_review", {
            "unit": u.unit.id, "kind": u.unit.kind, "problem": u.statement_tex, "proof": text, "upstream": u.upstream(),
        }, ReasonReview, check=_review_form)
        log = run_review_searches(u.project, u.attempt_dir, round_ + 1, text, review.counterexamples, log)
        refuted = standing(log, text)
        u.write("proof_review.json", json.dumps({"round": round_ + 1, **review.model_dump(),
                                                 "refutations_standing": [e.folder for e in refuted]}, indent=2) + "\n")
        forced = len(refuted) >= threshold
        if not review.critical and not forced:
            u.write("proof.md", f"{u.provenance}\n\n{text}\n")
            return
        parts = []
        if review.critical:
            parts.append("A reviewer tried to refute your previous proof and objected:\n" + "\n".join(
                f"- step {o.step}: {o.objection}" for o in review.critical))
        if forced:
            parts.append(revision_request(refuted, threshold))
        elif refuted:  # below the threshold: evidence for the revision the objections ask for
            parts.append("Fyan's counterexample searches also refuted: " + "; ".join(describe(e) for e in refuted))
        values = {**values, "review": "\n\n".join(parts) + "\n\nYour previous proof:\n\n" + text}
    if len(refuted) >= threshold:
        raise ModelOutputError(
            f"{len(refuted)} executed refutation(s) still stand against the proof after {rounds} revision(s): "
            + "; ".join(e.outcome.summary() for e in refuted[:3]))
    raise ModelOutputError(
        f"the review pass refuted the proof after {rounds} revision(s): "
        + "; ".join(f"step {o.step}: {o.objection}" for o in review.critical[:3])
    )


def _review_form(review: ReasonReview) -> list[str]:
    problems = []
    if review.verdict == "sound" and review.critical:
        problems.append("verdict is `sound` but there are critical objections: say `refuted`, or make them minor")
    if review.verdict == "refuted" and not review.critical:
        problems.append("verdict is `refuted` but no objection is critical: name the step that fails")
    for i, c in enumerate(review.counterexamples):
        try:
            c.program()
        except ValidationError as e:
            problems.append(f"counterexamples[{i}]: " + "; ".join(str(err["msg"]) for err in e.errors()))
    return problems


def _repair_request(u: UnitContext) -> str:
    audit = u.last_failure(Stage.AUDIT)
    if audit is None or audit.rewind_to is not Stage.PLAN:
        return NONE
    result_path = u.project.paths.unit(u.unit.id) / "audit" / "result.json"
    if result_path.is_file():
        result = AuditResult.model_validate_json(safefile.read_text(result_path))
        if result.repairs:
            return "\n".join(f"- {r}" for r in result.repairs)
    return audit.reason or NONE


def _library(u: UnitContext) -> str:
    """The "Library in scope" section (``fyan.lean.mathlib.library_prompt``), with the library
    definitions the unit's plan maps its definition nodes to and the existing lemmas it cites —
    only names the plan's check found (``lemma_names.json``, ``fyan.audit.citations``), never a
    name as a model wrote it: a dropped name is in no prompt."""
    from fyan.audit import citations
    from fyan.lean.mathlib import library_prompt

    text = library_prompt(u.project.config.lean, u.project.config.adopt.package_name)
    try:
        dag = LemmaDag.model_validate_json(u.read("lemma_dag.json") or "")
    except (ValueError, OSError):
        return text
    check = citations.read(u.project.paths.unit(u.unit.id))
    found = check.found if check is not None else {}
    mapped = [f"- `{n.name}` is the library's `{found[n.library]}`" for n in dag.nodes
              if n.library and n.library in found]
    if mapped:
        text += "\n\nThe plan's definitions that are library definitions (found in the compiled environment):\n" \
                + "\n".join(mapped)
    lemmas = citations.prompt_lines(dag, check)
    if lemmas:
        text += "\n\nExisting lemmas the plan cites (looked up " + (check.describe() if check else "") + "):\n" \
                + "\n".join(lemmas)
    return text


def _blueprint(u: UnitContext) -> str:
    """``blueprint.md`` for a prompt: without its provenance block, and with every name the plan
    check dropped replaced by a note (``fyan.audit.citations.scrub``)."""
    from fyan.audit import citations

    text = (u.read("blueprint.md") or "").replace(u.provenance, "").strip()
    return citations.scrub(text, citations.read(u.project.paths.unit(u.unit.id)))


def plan(s: StageSession, u: UnitContext) -> None:
    from fyan.audit.citations import cited
    from fyan.gates import citations

    asked_once: set[str] = set()

    def names(reply: PlanReply) -> list[str]:
        """Form errors of the citations, and once per name, the names that do not exist (looked
        up as the check does): the model may fix them; what it keeps is dropped by the check."""
        problem = citations.form_problem(reply.lemma_dag)
        if problem is not None:
            return [f"lemma_dag.nodes: {problem}"]
        fresh = [n for n in cited(reply.lemma_dag) if n not in asked_once]
        if not fresh:
            return []
        asked_once.update(fresh)
        check = citations.look_up(u.project, u.store, u.unit, fresh, log_dir=u.attempt_dir)
        if not check.dropped:
            return []
        return [f"lemma_dag.nodes: not found {check.describe()}: {', '.join(check.dropped)}. Cite only declarations "
                "that exist (upstream units' names as listed, Lean core, imported libraries), or add the lemma as a "
                "node of the DAG and prove it; names that do not exist are dropped from the plan"]

    problem = u.statement_tex
    adoption = u.store.adoptions().get(u.unit.id)
    if adoption is not None and adoption.outcome == "candidate":  # the humans' statement is the candidate
        problem += ("\n\nThe adopted Lake package already states this (its proof is unfinished: " + adoption.reason
                    + "). State the Lean statement exactly as this existing declaration does, so the audit compares it "
                    "with the text above:\n" + "\n".join(f"    {x.get('name')} : {x.get('type_pp') or '?'}   (module "
                                                          f"{x.get('module')})" for x in adoption.evidence.get("decls", [])))
    reply = s.ask_json("plan", {
        "unit": u.unit.id, "kind": u.unit.kind, "namespace": u.namespace, "problem": problem,
        "proof": (u.read("proof.md") or "").replace(u.provenance, "").strip(),
        "library": _library(u), "upstream": u.upstream(), "repair": _repair_request(u), "guidance": u.guidance(),
        "replan": replan_request(u),
    }, PlanReply, check=names)
    u.write("lemma_dag.json", reply.lemma_dag.model_dump_json(indent=2) + "\n")
    u.write("blueprint.md", f"{u.provenance}\n\n{reply.blueprint.strip()}\n")
    u.write("Statement.lean", render_unit_file(u.project, u.store, u.unit, reply.lean, "Statement"))


def audit(s: StageSession, u: UnitContext) -> None:
    """The semantic audit's model calls (``fyan.audit.judge``): source extraction, its
    independent check, the evidence record (and S0 for a bridge). A valid verdict below the
    threshold on the same inputs is reused, never resampled."""
    from fyan.audit.judge import prior_files, run_judge
    from fyan.audit.unit import unit_inputs

    inputs = unit_inputs(u.project, u.store, u.unit)
    earlier = [u.project.paths.root / r.attempt_dir for r in u.store.runs(u.unit.id)
               if r.stage is Stage.AUDIT and r.id != u.run.id]
    prior = prior_files(earlier, inputs.key())
    run_judge(s, inputs, u.attempt_dir, repairs=u.project.config.audit.form_repairs, prior=prior[0] if prior else None)


def _frozen(u: UnitContext) -> str:
    freezes = u.store.freezes(u.unit.id)
    return "\n".join(f"- `{f.decl}`: `{f.normalized_signature}`" for f in freezes) or NONE


def _gate_feedback(u: UnitContext) -> str:
    gate = u.last_failure(Stage.GATE)
    if gate is None or gate.rewind_to is not Stage.PROVE:
        return NONE
    path = u.project.paths.unit(u.unit.id) / "gate" / "report.json"
    if not path.is_file():
        return _warm_then_rejected(u) + (gate.reason or NONE) if gate.reason else NONE
    report = GateReport.model_validate_json(safefile.read_text(path))
    return _warm_then_rejected(u) + "The completion gate rejected the previous proof:\n" + "\n".join(
        f"- {c.name}: {c.reason}" for c in report.failures
    )


def _warm_then_rejected(u: UnitContext) -> str:
    """A line saying the warm language server had accepted the proof the gate then rejected
    (the last iteration of the published ``iterations.json``, the log of the proof the gate
    judged, was clean on a warm server), else "". The gate's cold, trusted compile decides; the
    warm answer was only feedback."""
    try:
        log = json.loads(u.read("iterations.json") or "[]")
        last = log[-1]
    except (OSError, ValueError, IndexError, KeyError, TypeError):
        return ""
    if isinstance(last, dict) and last.get("review") == "clean" and last.get("checked") == "warm":
        return (f"The warm language server accepted the previous proof (iteration {last.get('iteration')}), but the "
                "completion gate's cold, trusted compile rejected it — trust the gate's findings below.\n")
    return ""


def prove(s: StageSession, u: UnitContext) -> None:
    values = {
        "unit": u.unit.id, "kind": u.unit.kind, "namespace": u.namespace, "problem": u.statement_tex,
        "proof": (u.read("proof.md") or "").replace(u.provenance, "").strip(),
        "blueprint": _blueprint(u),
        "statement": model_part(u.read("Statement.lean") or ""), "frozen": _frozen(u),
        "library": _library(u), "upstream": u.upstream(), "feedback": _gate_feedback(u), "guidance": u.guidance(),
        "previous": NONE,
    }
    iterations = u.project.config.agents.prove_iterations
    discovery = discover(u.project.config.lean)
    helpers = carried_helpers(u)
    text = render_unit_file(u.project, u.store, u.unit, with_helpers(values["statement"], helpers), "Basic")
    if helpers.strip():  # the helper lemmas a re-plan kept start this attempt
        values["previous"] = f"```lean\n{model_part(text)}\n```"
    if _frozen_refuted(u):  # never proved: the check blocks the unit with the evidence
        u.write("Basic.lean", text)
        return
    log: list[dict] = []
    rejected: dict[str, tuple[int, list[str]]] = {}  # sha256 of a rejected candidate -> (iteration, review)
    tooling = _tool_loop(s, u)
    for i in range(1, iterations + 1):
        if s.edits_files:
            text, plan_text, done = _prove_in_workspace(s, u, values, text)
        elif tooling is not None:  # the prover tools through the API's tool calls
            from fyan.agents.prove_tools import ask_prove

            tool_reply = ask_prove(s, tooling, values, i, ProveReply)
            if tool_reply is None:  # a budget ran out before a reply: the last candidate stands
                if not log:
                    raise ModelOutputError(
                        "the Formalizer's tool loop used up its budget before replying ("
                        + tooling.iterations[-1]["stop"] + "; tool_loop.json in the attempt)",
                        hint="raise [prover] tokens or wall_time, or lower tool use")
                log.append({"iteration": i, "stopped": tooling.iterations[-1]["stop"], "review": "not reached"})
                u.write("iterations.json", json.dumps(log, indent=2, ensure_ascii=False) + "\n")
                break
            text = render_unit_file(u.project, u.store, u.unit, tool_reply.lean, "Basic")
            plan_text, done = tool_reply.plan, tool_reply.done
        else:
            reply = s.ask_json("prove", values, ProveReply)
            text = render_unit_file(u.project, u.store, u.unit, reply.lean, "Basic")
            plan_text, done = reply.plan, reply.done
            record_reply_verdict(u, reply.verdict)
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        checked: dict = {}
        if key in rejected:  # never compiled again in this attempt
            first, earlier = rejected[key]
            problems = [f"- the same candidate as iteration {first}, which was rejected (not compiled again):"] + earlier
            compiled = False
        else:
            problems, compiled = review_candidate(u, text, discovery.toolchain, i, checked)
            if problems:
                rejected[key] = (i, problems)
        entry = {"iteration": i, "plan": plan_text, "model_says_done": done, "review": problems or "clean",
                 "compiled": compiled}
        if checked:
            entry["checked"] = checked.get("how")
            entry.update({k: v for k, v in checked.items() if k != "how" and v})
        verdict = attempt_verdict(u)
        if verdict is not None:
            entry["verdict"] = verdict  # the attempt ends with it; fyan.replan.check decides
        log.append(entry)
        u.write("iterations.json", json.dumps(log, indent=2, ensure_ascii=False) + "\n")
        if not problems or verdict is not None:
            break
        said = "You said the proof was done, but the review found problems.\n" if done else ""
        values = {**values, "feedback": f"{said}Review of iteration {i}:\n" + "\n".join(problems),
                  "previous": f"```lean\n{model_part(text)}\n```"}
    u.write("Basic.lean", text)


def _tool_loop(s: StageSession, u: UnitContext):
    """The attempt's tool loop (``fyan.agents.prove_tools.ToolLoop``) when its provider runs one
    (``tools_enabled``), else None: the Formalizer then asks as it always did."""
    from fyan.agents.prove_tools import ToolLoop, tools_enabled

    return ToolLoop.for_attempt(u) if tools_enabled(s) else None


#: worthless reasons of a frozen-statement check that another run may not meet (``fyan.refute.runner``)
_TRANSIENT_WORTHLESS = ("not run", "did not run", "hangs", "ran out of memory")


def _frozen_refuted(u: UnitContext) -> bool:
    """Try to refute the unit's frozen statements on small instances before proving
    (``fyan.refute.frozen``; ``[refute] frozen_check``): True when a check refuted one (its
    evidence is in the attempt's ``frozen-refutation/``). A check an earlier attempt of this unit
    already ran without refuting (the same program; unless it was not run, hung or ran out of
    memory) is not run again; without a toolchain none runs."""
    from fyan.refute.frozen import frozen_programs, run_frozen_checks
    from fyan.refute.models import RefutationOutcome
    from fyan.refute.record import FROZEN_FOLDER
    from fyan.refute.review import lean_check, lean_header, limits_of

    cfg = u.project.config.refute
    if not cfg.frozen_check:
        return False
    programs, _ = frozen_programs(u.store.freezes(u.unit.id), cfg.frozen_bound, lean_header(u.project))
    done = set()
    for r in u.store.runs(u.unit.id):
        if r.stage is Stage.PROVE and r.id != u.run.id:
            for path in (u.project.paths.root / r.attempt_dir / FROZEN_FOLDER).glob("*/outcome.json"):
                try:
                    earlier = RefutationOutcome.model_validate_json(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                transient = (earlier.worthless_reason or "").startswith(_TRANSIENT_WORTHLESS)
                if not earlier.refutes and not transient:  # the same check on the same statement: same answer
                    done.add(earlier.program_sha256)
    programs = [p for p in programs if p.sha256() not in done]
    if not programs:
        return False
    lean = lean_check(u.project, u.attempt_dir)
    if lean is None:
        return False
    outcomes = run_frozen_checks(programs, u.attempt_dir, limits_of(cfg), lean, hidden=(u.project.paths.root,))
    return any(o.refutes for o in outcomes)


def _prove_in_workspace(s: StageSession, u: UnitContext, values: dict[str, str], current: str) -> tuple[str, str, bool]:
    """One command-agent iteration: the agent edits Basic.lean in the unit workspace; its
    change is the candidate (the model-written part, re-rendered by Fyan)."""
    from fyan.prover import agent_mcp

    ws = prepare_workspace(u.project, u.unit, {"Basic": current}, store=u.store)
    rel = ws.module_file(unit_module(u.project, u.unit, "Basic")).relative_to(ws.root).as_posix()
    (ws.root / VERDICT_FILE).unlink(missing_ok=True)  # an earlier attempt's verdict is not this one's
    tools = agent_mcp.prepare(u.project, u.store, u.unit, ws.root)  # the prover tools over MCP, if a toolchain
    response = s.ask("prove_agent", {**values, "file": rel}, workspace=ws.root)
    _keep_tool_log(u, ws.root / agent_mcp.CONFIG_DIR / "tools.jsonl", tools)
    record_workspace_verdict(u, response.files)
    changed = response.files.get(rel)
    if changed is None:
        return current, response.text.strip(), False
    return render_unit_file(u.project, u.store, u.unit, model_part(changed), "Basic"), response.text.strip(), False


def _keep_tool_log(u: UnitContext, log: Path, tools) -> None:
    """Move the prover server's call log of one command-agent iteration (written inside the
    agent's sandbox, so the agent could have changed it: a record for people, never evidence)
    into the attempt folder's ``tools.jsonl``; note in it why there were no tools, if so."""
    lines = ""
    if log.is_file() and not log.is_symlink():
        try:
            lines = safefile.read_text(log, limit=4 * 1024 * 1024, errors="replace")
        except OSError:
            lines = ""
        log.unlink(missing_ok=True)
    if not tools.files and tools.note:
        lines += json.dumps({"tool": None, "status": "unavailable", "note": tools.note}) + "\n"
    if lines:
        path = u.attempt_dir / "tools.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(lines if lines.endswith("\n") else lines + "\n")


def review_candidate(u: UnitContext, text: str, toolchain: Toolchain | None, iteration: int,
                     checked: dict | None = None) -> tuple[list[str], bool]:
    """The Formalizer's review step (code only): frozen declarations, lints, and with a
    toolchain the build's errors and ``sorry``: (problems, whether it was compiled). A
    candidate with a lint error is not compiled: code the lints refuse (``#eval``, ``run_cmd``,
    macros, ...) must never run, sandbox or not — on a warm server neither.
    ``checked``, when given, receives how it was checked (``_compile_feedback``)."""
    problems = [f"- {p} (frozen statements are read-only: copy them exactly)" for p in frozen_problems(u.store, u.unit.id, text)]
    findings = lint(model_part(text))
    refused = lint_errors(findings)
    problems += [f"- lint {f}" for f in refused]
    problems += [f"- line {f.line}: the proof is unfinished (`sorry`/`admit`): {f.text}" for f in findings if f.rule == "sorry"]
    if refused:
        problems.append("- not compiled: fix the lint errors first (code they refuse is never built)")
        return problems, False
    if toolchain is not None:
        feedback = _compile_feedback(u, text, toolchain, iteration, checked if checked is not None else {})
        if feedback is not None:
            problems.append(feedback)
        return problems, True
    return problems, False


def _compile_feedback(u: UnitContext, text: str, toolchain: Toolchain, iteration: int, checked: dict) -> str | None:
    """Check the candidate: on a warm language server of the pool (``fyan.lakepackage.pool``, unless
    ``[lean] warm_servers = 0``: the same toolchain and search path, the diagnostics and the goals
    at each ``sorry`` and error), else — pool off, full or failing twice — compiled as the gate
    does (``fyan.lakepackage.workspace.compile_candidate``: plain ``lean``, the gate's search path). None
    when there are no errors and no sorry, else the feedback. ``checked`` receives ``how``
    (``warm``/``cold``), and for a warm check ``restarts`` and ``notes``. Neither is a decision:
    the completion gate compiles cold."""
    ws = prepare_workspace(u.project, u.unit, {"Basic": text}, store=u.store)
    module = unit_module(u.project, u.unit, "Basic")
    try:
        setup = resolve_setup(u.project, toolchain, u.attempt_dir)
    except GateEnvironmentError as e:
        return f"- not compiled (the environment, not the proof): {e}"
    if u.project.config.lean.warm_servers > 0 and not ws.legacy:
        from fyan.lakepackage import pool

        try:
            warm = pool.check_unit(u.project, setup, text, unit=u.unit.id)
        except pool.WarmUnavailable as e:
            checked["warm_unavailable"] = str(e)
        else:
            if not warm.elaboration.fatal:
                checked.update(how="warm", restarts=warm.restarts, notes=warm.notes)
                return _warm_feedback(u, warm, iteration)
            # the header failed (an import missing): the cold compile tells the environment from the proof
            checked["warm_unavailable"] = "the warm server could not load the header: " + "; ".join(
                d.text.splitlines()[0] for d in warm.elaboration.errors[:1])
    checked["how"] = "cold"
    result = compile_candidate(u.project, ws, setup, module, u.attempt_dir, f"iteration-{iteration}-build")
    problems = [d for d in result.diagnostics if d.severity == "error" or d.is_sorry]
    if result.ok and not problems:
        return None
    lines = [f"- lean {'compiled' if result.ok else 'failed'}: {result.reason}"]
    lines += [f"- line {d.line}:{d.column} {d.severity}: {d.text}" for d in problems[:30]]
    return "\n".join(lines)


def _warm_feedback(u: UnitContext, warm, iteration: int) -> str | None:
    """The feedback of a warm check (``fyan.lakepackage.pool.WarmCheck``), kept as
    ``iteration-<i>-warm.json`` in the attempt: None without errors and sorry."""
    e = warm.elaboration
    u.write(f"iteration-{iteration}-warm.json", json.dumps({
        "version": e.version, "duration_s": e.duration_s, "restarts": warm.restarts, "reused": warm.reused,
        "sandboxed": warm.sandboxed, "notes": warm.notes, "header_failed": e.fatal,
        "diagnostics": [d.model_dump(mode="json") for d in e.diagnostics],
        "goals": [{"line": g.line, "column": g.column, "at": g.at, "kind": g.kind, "goals": g.goals} for g in e.goals],
    }, indent=2, ensure_ascii=False) + "\n")
    problems = [d for d in e.diagnostics if d.severity == "error" or d.is_sorry]
    if not problems and not e.fatal:
        return None
    errors = sum(d.severity == "error" for d in problems)
    lines = [f"- lean (warm language server) reported {errors} error(s) and {len(problems) - errors} sorry warning(s)"]
    lines += [f"- line {d.line}:{d.column} {d.severity}: {d.text}" for d in problems[:30]]
    for g in e.goals[:10]:
        lines.append(f"- goal at line {g.line}:{g.column} ({g.at}):\n" + "\n".join("    " + x for x in
                                                                              "\n".join(g.goals).splitlines()))
    return "\n".join(lines)
