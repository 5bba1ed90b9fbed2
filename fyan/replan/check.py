"""The deterministic check of a prove attempt's verdict (``fyan.replan``), run by the prove
check (``fyan.gates.stages.check_prove``) before anything else when the attempt left one.

Decided only from the attempt's files, the unit's published plan (``lemma_dag.json``,
``Statement.lean``, recorded by the gateway) and Fyan's own programs; no model is asked and no
claim of the model is taken as evidence:

* the verdict validates (``Verdict``) and names a node of the plan; a ``lemma_false`` verdict on
  a root is refused (a frozen root is the audited statement of the document; a re-plan never
  changes it);
* ``lemma_false`` with a Lean proof: Fyan renders ``theorem <lemma>_refuted : ¬ (∀ binders,
  type) := <proof>`` from the planned lemma's declaration (``verdict.negation``), after the plan's
  definitions only — never the plan's ``sorry`` lemmas, from which anything follows; a negation
  the model stated differently is refused; the text must pass the lints with no
  ``sorry``/``admit`` (code they refuse is never compiled); then it is compiled confined in the
  unit's workspace (``fyan.lakepackage.workspace.compile_candidate``, plain ``lean`` as the gate does)
  and must build with no error and no sorry warning. No toolchain: not checked, refused;
* ``lemma_false`` with a counterexample program: run by the refutation runner
  (``fyan.refute.run_refutation``), which must report the counterexample found;
* ``step_too_hard``: the attempt's iteration log (``iterations.json``, written by Fyan's agent
  code, not the model) shows its last candidate still had problems, and ``tried`` says what
  was tried;
* the bound: the unit's re-plans since it last started over are fewer than ``[scheduler]
  max_replans``; otherwise the verdict blocks the unit for a human (a ``replan`` failure
  without a rewind, ``fyan.state.lifecycle``).

A refutation that checks only sends the unit back to the Planner (bounded); it can never make
anything complete, which the completion gate alone decides.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fyan.models.replies import LemmaDag
from fyan.lean import declarations
from fyan.sandbox import safefile
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.lakepackage.package import model_part, render_unit_file, unit_module, unit_namespace
from fyan.replan.carry import helper_lemmas, helpers_file
from fyan.replan.verdict import ACCEPTED, HELPERS, REFUSED, VERDICT_FILE, Verdict, negation, proposition, refutation_theorem
from fyan.state.gateway import CheckContext, CheckOutcome
from fyan.state.models import FailureKind, RunStatus, Stage

#: the module part the refutation is compiled as (``<Lib>.<Unit>.Refutation``, never published)
REFUTATION_PART = "Refutation"


def replans_so_far(ctx: CheckContext) -> int:
    """Re-plans of the unit since it last started over (a restart marker)."""
    n = 0
    for r in ctx.store.runs(ctx.unit.id):
        if r.failure_kind is FailureKind.RESTART:
            n = 0
        elif r.status is RunStatus.FAILED and r.failure_kind is FailureKind.REPLAN and r.rewind_to is not None:
            n += 1
    return n


def check_verdict(ctx: CheckContext) -> CheckOutcome | None:
    """The outcome of the attempt's verdict (module docstring), or None when it left none."""
    path = ctx.attempt_dir / VERDICT_FILE
    if not path.exists() and not path.is_symlink():
        return None
    if not safefile.is_regular(path):
        return _refused(ctx, None, f"{VERDICT_FILE} is not a regular file (never read)")
    try:
        verdict = Verdict.model_validate_json(safefile.read_text(path, limit=1 << 20))
    except ValidationError as e:
        return _refused(ctx, None, f"{VERDICT_FILE} does not validate: " + "; ".join(
            f"{'.'.join(map(str, x['loc'])) or 'verdict'}: {x['msg']}" for x in e.errors()[:3]))
    except (ValueError, OSError) as e:
        return _refused(ctx, None, f"{VERDICT_FILE} is unreadable: {str(e).splitlines()[0]}")
    unit_dir = ctx.project.paths.unit(ctx.unit.id)
    try:
        dag = LemmaDag.model_validate_json(safefile.read_text(unit_dir / "lemma_dag.json"))
        statement = safefile.read_text(unit_dir / "Statement.lean")
    except (ValidationError, ValueError, OSError) as e:
        return _refused(ctx, verdict, f"the unit's plan is unreadable: {str(e).splitlines()[0]}")
    if verdict.lemma not in {n.name for n in dag.nodes}:
        return _refused(ctx, verdict, f"{verdict.lemma!r} is not a lemma of the plan (nodes: "
                                      f"{', '.join(n.name for n in dag.nodes)})")
    frozen_roots = {f.decl.split(".")[-1] for f in ctx.store.freezes(ctx.unit.id) if f.role == "root"}
    if verdict.kind == "lemma_false" and (verdict.lemma in dag.roots or verdict.lemma in frozen_roots):
        return _refused(ctx, verdict, f"{verdict.lemma} is a frozen root, the audited statement of the document: "
                                      "a re-plan never changes it")
    ns = unit_namespace(ctx.project, ctx.unit)
    decl = declarations.find(declarations.scan(statement), f"{ns}.{verdict.lemma}")
    if decl is None or decl.kind not in ("theorem", "lemma") and verdict.kind == "lemma_false":
        return _refused(ctx, verdict, f"Statement.lean states no theorem {verdict.lemma}")
    if verdict.kind == "lemma_false" and verdict.negation_proof.strip():
        ok, how, kind = *_check_negation(ctx, statement, decl, verdict), "lean_negation"
    elif verdict.kind == "lemma_false":
        ok, how, kind = *_check_counterexample(ctx, decl, verdict), "counterexample"
    else:
        ok, how, kind = *_check_stuck(ctx), "step_too_hard"
    if not ok:
        return _refused(ctx, verdict, how)
    done, bound = replans_so_far(ctx), ctx.project.config.scheduler.max_replans
    record: dict[str, Any] = {"verdict": verdict.model_dump(), "accepted": True, "evidence": kind, "how": how,
                              "run": ctx.run.id, "replan": done + 1, "bound": bound}
    what = f"{verdict.kind} {verdict.lemma} ({how})"
    if done >= bound:
        record.update(accepted=True, blocked=True)
        return CheckOutcome(
            False, f"the Formalizer asks for a re-plan: {what}; the unit was re-planned {done} time(s), the bound "
                   "([scheduler] max_replans): a human decides (revise the document or the plan, then give guidance)",
            derived={REFUSED: _json(record)}, failure_kind=FailureKind.REPLAN,
            event_data={"replan": {k: record[k] for k in ("evidence", "replan", "bound", "blocked")} | {
                "kind": verdict.kind, "lemma": verdict.lemma}})
    basic = safefile.read_text(ctx.attempt_dir / "Basic.lean") if safefile.is_regular(ctx.attempt_dir / "Basic.lean") else ""
    kept = helper_lemmas(model_part(basic), {n.name for n in dag.nodes}, verdict.lemma)
    record["helpers"] = [name for name, _ in kept]
    return CheckOutcome(
        False, f"re-plan {done + 1} of {bound}: {what}",
        derived={ACCEPTED: _json(record), HELPERS: helpers_file(kept).encode("utf-8")},
        rewind_to=Stage.PLAN, failure_kind=FailureKind.REPLAN,
        event_data={"replan": {"kind": verdict.kind, "lemma": verdict.lemma, "evidence": kind, "replan": done + 1,
                               "bound": bound, "helpers": record["helpers"]}})


def _json(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def _refused(ctx: CheckContext, verdict: Verdict | None, why: str) -> CheckOutcome:
    """A verdict whose evidence does not check: recorded (``replan/refused.json``, the event),
    worth nothing — the attempt is an ordinary failed prove attempt."""
    record = {"verdict": verdict.model_dump() if verdict else None, "accepted": False, "why": why, "run": ctx.run.id}
    what = f"{verdict.kind} {verdict.lemma}" if verdict else "verdict"
    return CheckOutcome(False, f"the Formalizer's {what} was not accepted: {why}", derived={REFUSED: _json(record)},
                        event_data={"verdict_refused": {"kind": verdict.kind if verdict else None,
                                                        "lemma": verdict.lemma if verdict else None, "why": why}})


def _definitions(statement: str) -> str:
    """The plan's definitions (model-written part of ``Statement.lean``), in order, as written."""
    text = model_part(statement)
    lines = text.splitlines()
    return "\n\n".join("\n".join(lines[d.line_start - 1 : d.line_end]).strip() for d in declarations.scan(text)
                       if d.kind in declarations.DEFINITION_KINDS)


def _check_negation(ctx: CheckContext, statement: str, decl: declarations.Declaration,
                    verdict: Verdict) -> tuple[bool, str]:
    from fyan.lean.toolchain import discover
    from fyan.lakepackage.trusted import GateEnvironmentError, resolve_setup
    from fyan.lakepackage.workspace import clear_build, compile_candidate, prepare_workspace

    expected = negation(decl)
    stated = declarations.normalize(verdict.negation_statement)
    if stated and stated.replace("¬(", "¬ (") != expected:
        return False, f"the negation stated, `{stated}`, is not the planned lemma's as Fyan renders it: `{expected}`"
    body = "\n\n".join(p for p in (_definitions(statement), refutation_theorem(decl, verdict.negation_proof)) if p)
    findings = lint(body)
    refused = lint_errors(findings) + [f for f in findings if f.rule == "sorry"]
    if refused:
        return False, "the refutation was not compiled: " + "; ".join(map(str, refused[:3]))
    disc = discover(ctx.project.config.lean, cwd=ctx.project.paths.lean)
    if disc.toolchain is None:
        return False, f"the refutation could not be compiled (not checked): {disc.problem or 'no Lean toolchain'}"
    text = render_unit_file(ctx.project, ctx.store, ctx.unit, body, REFUTATION_PART)
    ws = prepare_workspace(ctx.project, ctx.unit, {REFUTATION_PART: text}, store=ctx.store)
    module = unit_module(ctx.project, ctx.unit, REFUTATION_PART)
    try:
        clear_build(ws)  # nothing an agent left in its workspace's build folder is on the search path
        setup = resolve_setup(ctx.project, disc.toolchain, ctx.attempt_dir)
        result = compile_candidate(ctx.project, ws, setup, module, ctx.attempt_dir, "refutation-build")
    except (GateEnvironmentError, OSError) as e:
        return False, f"the refutation could not be compiled (not checked): {e}"
    finally:
        ws.module_file(module).unlink(missing_ok=True)  # never part of the unit's module set
    (ctx.attempt_dir / "refutation.lean").write_text(text, encoding="utf-8")
    problems = [d for d in result.diagnostics if d.severity == "error" or d.is_sorry]
    if not result.ok or problems:
        detail = "; ".join(f"line {d.line}: {d.text.splitlines()[0] if d.text else d.severity}" for d in problems[:3])
        return False, f"the refutation does not compile: {result.reason}{'; ' + detail if detail else ''}"
    return True, f"Lean proof of `{expected}` compiled with no sorry (refutation.lean)"


def _check_counterexample(ctx: CheckContext, decl: declarations.Declaration, verdict: Verdict) -> tuple[bool, str]:
    """Run the verdict's counterexample search with the refutation runner (``fyan.refute``),
    confined, in ``<attempt>/refutation/``, with the project folder hidden from it. Its target is
    set by Fyan (the lemma's name and the proposition the plan states); only a confirmed
    refutation (executed, the witness re-checked by a second run) counts. What links the
    program's predicate to the Lean lemma is the model's reading: such a verdict costs at most a
    bounded re-plan, and a Lean refutation (``negation_proof``) is the stronger evidence."""
    from fyan.refute import RefutationLimits, RefutationProgram, run_refutation

    search = dict(verdict.counterexample or {})
    if search.get("language", "python") != "python":
        return False, "a counterexample program is a python search; a Lean refutation goes in negation_proof"
    try:
        program = RefutationProgram.model_validate({
            **{k: v for k, v in search.items() if k in ("predicate_source", "domain")}, "language": "python",
            "origin": "model", "target": {"id": verdict.lemma, "text": proposition(decl)}})
    except ValidationError as e:
        return False, "the counterexample program does not validate: " + "; ".join(x["msg"] for x in e.errors()[:3])
    outcome = run_refutation(program, workdir=ctx.attempt_dir / "refutation", limits=RefutationLimits(),
                             hidden=(ctx.project.paths.root,))
    if not outcome.refutes:
        return False, f"the counterexample did not refute the lemma: {outcome.summary()}"
    return True, f"counterexample executed by the refutation runner: false at {outcome.witness} " \
                 f"({outcome.cases_checked} case(s); refutation/outcome.json)"


def _check_stuck(ctx: CheckContext) -> tuple[bool, str]:
    path: Path = ctx.attempt_dir / "iterations.json"
    try:
        log = json.loads(safefile.read_text(path)) if safefile.is_regular(path) else []
        last = log[-1]
    except (ValueError, OSError, IndexError, KeyError, TypeError):
        return False, "the attempt left no iteration log: nothing shows the step was tried"
    if not isinstance(last, dict) or last.get("review") == "clean":
        return False, "the attempt's last candidate passed the review: no step is too hard"
    return True, f"{len(log)} iteration(s) tried, the last still refused by the review"
