"""Deterministic checks of each stage's artifacts, run by the gateway before it advances.

No check calls a model. Each returns a ``CheckOutcome``: pass/fail, the reason, files it
derives (reports), statements to freeze, and where to go back to after a failure.

* reason — ``proof.md`` carries the unit's provenance block unchanged and has content; fewer
  than ``[refute] threshold`` executed refutations stand against it, counted again from each
  counterexample search's own files (``refutation_evidence``, docs/refutation.md);
* plan — a re-plan keeps every frozen root with its frozen signature and every definition of the
  previous scaffold unchanged (``fyan.replan.plan_check``); ``lemma_dag.json`` validates, has no
  dangling edge, self-loop or cycle, every node is reachable from a root; no node is an assertion
  an executed search refuted (``refuted_plan_problem``); ``Statement.lean`` is Fyan's rendering
  around the model's part, passes
  the source lints, declares every lemma-DAG node, every theorem body is ``by sorry``, no root
  is ``True``, definition units' roots are definitions, the semantic audit can read the roots'
  statements; it compiles when a toolchain exists; every existing declaration a node ``cites``
  or names as its ``library`` is looked up (``fyan.gates.citations``: a warm server's
  ``lean_lookup`` with a toolchain, else the trusted inspector; without one the upstream units'
  declarations and the declaration index): what does not exist is dropped and named in the
  reason, and the derived ``lemma_names.json`` says which source answered;
* audit — ``fyan.audit.decide`` re-derives the verdict from the attempt's files (source
  extraction and its check, the evidence record, S0 for a bridge); grade ≥ threshold freezes
  the roots with ``fyan.lakepackage.signatures.freeze_specs`` (normalized signature, bound files
  ``problem.tex`` and the upstream unit files, and with a toolchain the elaborated statement,
  the local definitions it uses and the toolchain, read by the trusted inspector); a statement
  whose elaborated form depends on an upstream declaration no audit certified goes back to the
  Planner; a grade-1 statement under the bridge policy
  freezes the roots and ``<root>_faithful`` (role ``bridge``); below → back to the Planner;
  rejected → retry;
* prove — a frozen statement the attempt refuted on a small instance, confirmed by the check's
  own run, blocks the unit (``frozen_refutation_outcome``: failure kind ``refuted``, back to the
  audit after guidance); otherwise ``Basic.lean`` is Fyan's rendering around the model's part,
  passes the lints, and every frozen declaration is there with its frozen signature (an edit
  fails the attempt); an attempt that ended with a verdict is decided by ``fyan.replan.check``
  (a checked verdict rewinds to the Planner: a re-plan);
* gate — the completion gate (``fyan.gates.completion``); a missing toolchain, a broken Lake
  package, a refused sandbox or a missing inspector blocks the unit (``environment`` failure:
  no proof can fix it), any other failure goes back to the Formalizer.
"""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

from pathlib import Path

from pydantic import ValidationError

from fyan import logs
from fyan.models.replies import LemmaDag
from fyan.gates.completion import GateReport, run_gate
from fyan.models.gate_report import report_json
from fyan.lean import declarations
from fyan.sandbox import safefile
from fyan.lakepackage import trusted
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.lakepackage.package import model_part, render_unit_file, unit_module, unit_namespace
from fyan.lakepackage.signatures import freeze_specs, signature_change
from fyan.lean.toolchain import TOOLCHAIN_MISSING, check_pin, discover
from fyan.specifier.problem import BEGIN as PROV_BEGIN
from fyan.specifier.problem import END as PROV_END
from fyan.state.gateway import CheckContext, CheckOutcome
from fyan.state.models import FailureKind, Stage


def provenance_block(text: str) -> str | None:
    """The provenance block (markers included) in ``text``, or None."""
    start = text.find(PROV_BEGIN)
    end = text.find(PROV_END)
    if start < 0 or end < start:
        return None
    return text[start : end + len(PROV_END)]


def _problem_text(ctx: CheckContext) -> str:
    return safefile.read_text(ctx.project.paths.unit(ctx.unit.id) / "problem.tex")


def check_reason(ctx: CheckContext) -> CheckOutcome:
    text = safefile.read_text(ctx.attempt_dir / "proof.md")
    expected = provenance_block(_problem_text(ctx))
    if provenance_block(text) != expected:
        return CheckOutcome(False, "proof.md does not carry the unit's provenance block unchanged")
    body = text.replace(expected or "", "").strip()
    if len(body) < 40:
        return CheckOutcome(False, "proof.md has no proof text")
    derived, problem = refutation_evidence(ctx, body)
    if problem:
        return CheckOutcome(False, problem, derived=derived)
    return CheckOutcome(True, f"proof.md written ({len(body.split())} words)", derived=derived)


def refutation_evidence(ctx: CheckContext, proof_text: str) -> tuple[dict[str, bytes], str | None]:
    """The reason stage's count of executed refutations (``fyan.refute.record``): the attempt's
    ``refutations.json`` re-read from each search's own ``outcome.json`` and ``program.json``
    (written by the runner outside what the program could write; an entry that disagrees is
    dropped), worthless outcomes never counted. Returns (derived files, failure reason or None):
    the unit's published ``refutations.json`` holds the entries of this attempt and of every
    earlier reason attempt of the unit, failed ones included, re-read the same way (the plan
    check reads it), and the proof is refused when ``[refute] threshold`` executed refutations
    still stand against it (``standing``)."""
    from fyan.refute import record

    try:
        log = record.read_log(ctx.attempt_dir / record.LOG)
    except ValueError as e:
        return {}, f"the attempt's refutation log is unreadable: {e}"
    log = record.reread(ctx.attempt_dir, log)
    ours = [e.model_copy(update={"attempt": ctx.run.attempt_dir}) for e in log.entries]
    earlier = []  # every earlier reason attempt of the unit, failed ones included, re-read the same way
    for r in ctx.store.runs(ctx.unit.id) if ours else []:
        if r.stage is Stage.REASON and r.id != ctx.run.id and r.attempt_dir:
            folder = ctx.project.paths.root / r.attempt_dir
            try:
                theirs = record.reread(folder, record.read_log(folder / record.LOG))
            except ValueError:
                continue
            earlier += [e.model_copy(update={"attempt": r.attempt_dir}) for e in theirs.entries]
    derived = {}
    if ours:
        merged = record.RefutationLog(entries=[*earlier, *ours])
        derived[record.LOG] = merged.model_dump_json(indent=2).encode() + b"\n"
    threshold = ctx.project.config.refute.threshold
    standing = record.standing(record.RefutationLog(entries=ours), proof_text)
    if len(standing) >= threshold:
        return derived, (f"{len(standing)} executed refutation(s) (threshold {threshold}) still stand against "
                         "proof.md: " + "; ".join(record.describe(e) for e in standing[:3]))
    return derived, None


def _lemma_dag(path: Path) -> tuple[LemmaDag | None, list[str]]:
    import networkx as nx  # here: not needed before a plan is checked (restart path)

    try:
        dag = LemmaDag.model_validate_json(safefile.read_text(path))
    except (ValidationError, ValueError) as e:
        return None, [f"lemma_dag.json does not validate: {e}"]
    problems: list[str] = []
    names = [n.name for n in dag.nodes]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        problems.append(f"lemma DAG names used twice: {dup}")
    known = set(names)
    g = nx.DiGraph()
    g.add_nodes_from(known)
    for n in dag.nodes:
        for u in n.uses:
            if u == n.name:
                problems.append(f"lemma {n.name} uses itself")
            elif u not in known:
                problems.append(f"lemma {n.name} uses {u}, which is not a node (dangling edge)")
            else:
                g.add_edge(n.name, u)
    for r in dag.roots:
        if r not in known:
            problems.append(f"root {r} is not a node of the lemma DAG")
    try:
        cycle = nx.find_cycle(g)
        problems.append("lemma DAG has a cycle: " + " -> ".join([a for a, _ in cycle] + [cycle[0][0]]))
    except nx.NetworkXNoCycle:
        pass
    reachable = set()
    for r in dag.roots:
        if r in g:
            reachable |= {r} | nx.descendants(g, r)
    orphans = sorted(known - reachable)
    if orphans and not problems:
        problems.append(f"lemma(s) not reachable from a root: {orphans}")
    return dag, problems


def _rendered(ctx: CheckContext, text: str, part: str) -> bool:
    return text == render_unit_file(ctx.project, ctx.store, ctx.unit, model_part(text), part)


def _compile(ctx: CheckContext, part: str, text: str, log_name: str) -> tuple[bool | None, str]:
    """Build the unit's ``part`` module in a gate workspace (``fyan.lakepackage.trusted``: upstream
    units from their recorded files, built first and then read-only): (ok, reason); ok None =
    it could not be built for a reason that is not the model's (no toolchain, a refused
    sandbox, a wrong pin, a broken package)."""
    disc = discover(ctx.project.config.lean, cwd=ctx.project.paths.lean)
    if disc.toolchain is None:
        return None, disc.problem or TOOLCHAIN_MISSING
    module = unit_module(ctx.project, ctx.unit, part)
    ws = None
    try:
        ws = trusted.prepare(ctx.project, ctx.store, ctx.unit, {part: text.encode("utf-8")}, purpose="plan",
                             toolchain=disc.toolchain, log_dir=ctx.attempt_dir)
        pin = check_pin(disc.toolchain, ws.root)
        if not pin.ok:
            return None, pin.reason
        first, build = trusted.build(ws, ctx.project.config.lean, ctx.attempt_dir,
                                     trusted=ws.upstream_modules, candidate=[module], name=log_name.removesuffix(".log"))
    except (trusted.RecordedInputError, trusted.GateEnvironmentError) as e:
        return None, f"{module} not built: {e}"
    finally:
        if ws is not None:
            ws.remove()
    failed = build if build is not None else first
    if failed is None:
        return None, f"{module} not built"
    if failed.environment_error or build is None:
        return None, failed.reason
    if build.ok:
        return True, f"{module} compiles"
    return False, f"{module} does not compile: {build.reason} (see {log_name})"


def _model_file_problem(ctx: CheckContext, text: str, part: str) -> str | None:
    """Why a model-written unit file (``part`` = Statement or Basic) is refused: changed
    outside its model-written part, or a forbidden construct (``fyan.lean.lints``)."""
    if not _rendered(ctx, text, part):
        return f"{part}.lean was changed outside the model-written part (imports/namespace are Fyan's)"
    errs = lint_errors(lint(model_part(text)))
    return f"{part}.lean: " + "; ".join(map(str, errs)) if errs else None


def check_plan(ctx: CheckContext) -> CheckOutcome:
    dag, problems = _lemma_dag(ctx.attempt_dir / "lemma_dag.json")
    if dag is None or problems:
        return CheckOutcome(False, "; ".join(problems))
    refuted = refuted_plan_problem(ctx, dag)
    if refuted:
        return CheckOutcome(False, refuted)
    text = safefile.read_text(ctx.attempt_dir / "Statement.lean")
    problem = _model_file_problem(ctx, text, "Statement")
    if problem:
        return CheckOutcome(False, problem)
    from fyan.replan.plan_check import replan_problems

    problems = replan_problems(ctx, dag, text)
    if problems:
        return CheckOutcome(False, "a re-plan changes what is frozen: " + "; ".join(problems))
    decls = declarations.scan(text)
    ns = unit_namespace(ctx.project, ctx.unit)
    for node in dag.nodes:
        d = declarations.find(decls, f"{ns}.{node.name}")
        if d is None:
            return CheckOutcome(False, f"Statement.lean has no declaration for lemma-DAG node {node.name}")
        if d.kind == "theorem" and not d.body_is_sorry:
            return CheckOutcome(False, f"{node.name}: scaffold bodies must be `by sorry`, found `{declarations.normalize(d.body)[:60]}`")
    from fyan.audit.vacuity import vacuous_roots

    for r in dag.roots:
        d = declarations.find(decls, f"{ns}.{r}")
        assert d is not None
        vacuous = vacuous_roots(text, ns, [r])  # a claim true by itself, contradictory premises, an empty definition
        if vacuous:
            return CheckOutcome(False, f"{vacuous}: a vacuous root is refused")
        if ctx.unit.kind == "definition" and d.kind not in declarations.DEFINITION_KINDS:
            return CheckOutcome(False, f"root {r} of a definition unit must be a definition, found {d.kind}")
        if ctx.unit.kind != "definition" and d.kind != "theorem":
            return CheckOutcome(False, f"root {r} of a {ctx.unit.kind} unit must be a theorem, found {d.kind}")
    problem = _audit_readable(ctx, text, dag.roots)
    if problem:
        return CheckOutcome(False, problem)
    ok, reason = _compile(ctx, "Statement", text, "statement-build.log")
    if ok is False:
        return CheckOutcome(False, reason)
    note = reason if ok else f"not compiled ({reason})"
    derived, problem, cited = check_plan_citations(ctx, dag)
    if problem:
        return CheckOutcome(False, problem, derived=derived)
    return CheckOutcome(True, f"scaffold with {len(dag.nodes)} node(s), root(s) {', '.join(dag.roots)}; {note}{cited}",
                        derived=derived)


def refuted_plan_problem(ctx: CheckContext, dag: LemmaDag) -> str | None:
    """Why a plan still contains an assertion an executed search refuted (None: it does not). The
    refuted assertions are the unit's published ``refutations.json`` (``fyan.refute.record.
    refuted_assertions``); a lemma-DAG node matches one by its name (the lemma id the search
    targeted) or by its informal statement (normalized: ``normalize_statement``)."""
    from fyan.refute.record import normalize_statement, refuted_assertions

    refuted = refuted_assertions(ctx.project.paths.unit(ctx.unit.id))
    if not refuted:
        return None
    by_id = {r.target.id: r for r in refuted}
    by_text = {normalize_statement(r.target.text): r for r in refuted}
    found = []
    for node in dag.nodes:
        hit = by_id.get(node.name) or by_text.get(normalize_statement(node.statement))
        if hit is not None:
            found.append(f"{node.name} is the assertion {hit.target.id!r} refuted at {hit.witness} (evidence "
                         f"{hit.evidence}/)")
    if not found:
        return None
    return ("the plan still contains assertion(s) refuted by executed counterexamples: " + "; ".join(found)
            + ". Drop or correct these lemmas; keep the others")


def check_plan_citations(ctx: CheckContext, dag: LemmaDag) -> tuple[dict[str, bytes], str | None, str]:
    """The plan check's citations (``fyan.gates.citations``): every name a node ``cites`` or maps
    to the ``library`` is looked up in the unit's environment; what does not exist is dropped
    (never reaches a later prompt) and named in the reason. Returns (derived files: the lookup as
    ``lemma_names.json``; a form problem that refuses the plan, or None; a clause for the reason,
    "" when nothing is cited)."""
    from fyan.audit.citations import FILE, dumps
    from fyan.gates import citations

    check, problem = citations.plan_citations(ctx.project, ctx.store, ctx.unit, dag, ctx.attempt_dir)
    if problem is not None or check is None:
        return {}, problem, ""
    return {FILE: dumps(check)}, None, "; " + check.summary() if check.summary() else ""


def _audit_readable(ctx: CheckContext, text: str, roots: list[str]) -> str | None:
    """Why the semantic audit could not read the roots' statements (None: it can)."""
    from fyan.audit.lean_tree import LeanParseError
    from fyan.audit.statement import lean_side

    try:
        lean_side(text, unit_namespace(ctx.project, ctx.unit), roots)
    except (LeanParseError, KeyError) as e:
        return f"the semantic audit cannot read the root statement: {e}"
    return None




def check_audit(ctx: CheckContext) -> CheckOutcome:
    """Re-decide the audit from the attempt's files (``fyan.audit.decide``; no model) and route:
    freeze (grade ≥ threshold), bridge (grade 1 under ``grade1_policy = "bridge"``: the root and
    ``<root>_faithful : S0`` are frozen, S0 having passed its own audit), repair (back to the
    Planner with the localized repairs), reject (invalid files: the audit is retried). A valid
    verdict below the threshold on the same inputs stands over a later attempt's (never
    resampled)."""
    from fyan.audit.decide import BRIDGE_LEAN, FILES, RESULT, decide, prior_verdict, read_files
    from fyan.audit.unit import unit_inputs

    try:
        inputs = unit_inputs(ctx.project, ctx.store, ctx.unit)
    except (OSError, ValidationError, ValueError) as e:
        return CheckOutcome(False, f"audit inputs unreadable: {e}", rewind_to=Stage.PLAN)
    files = read_files(ctx.attempt_dir)
    decision = decide(inputs, files)
    result = decision.result
    key = result.inputs.get("key", "")
    earlier = [ctx.project.paths.root / r.attempt_dir for r in ctx.store.runs(ctx.unit.id)
               if r.stage is Stage.AUDIT and r.id != ctx.run.id]
    prior = prior_verdict(earlier, key) if key else None
    if prior is not None:
        result = prior[0].model_copy(update={"reused_from": prior[1].name})
    data = result.model_dump_json(indent=2).encode() + b"\n"
    (ctx.attempt_dir / RESULT).parent.mkdir(parents=True, exist_ok=True)
    (ctx.attempt_dir / RESULT).write_bytes(data)
    derived = {RESULT: data, **{name: files[name] for name in FILES if name in files}}
    if not result.valid:
        return CheckOutcome(False, "audit record rejected: " + "; ".join(result.errors[:5]), derived=derived)
    event: dict[str, Any] = {"grade": result.grade, "routing": result.routing}
    if result.routing == "repair":
        return CheckOutcome(False, f"audit grade {result.grade} < {result.threshold}; repair: " + " | ".join(result.repairs),
                            derived=derived, rewind_to=Stage.PLAN, event_data=event)
    side = decision.side
    assert side is not None
    statement = inputs.statement
    decls = dict(side.decls)
    if result.routing == "bridge":
        assert result.bridge is not None
        lean = files[BRIDGE_LEAN].decode("utf-8")
        decls[result.bridge.name] = declarations.scan(lean)[0]
        statement = render_unit_file(ctx.project, ctx.store, ctx.unit, model_part(statement) + "\n\n" + lean.strip(),
                                     "Statement")
    freezes, note, unaudited = freeze_specs(ctx.project, ctx.store, ctx.unit, statement, decls, ctx.attempt_dir)
    event["freeze"] = note
    if unaudited:
        return CheckOutcome(False, "the statement cannot be frozen: " + "; ".join(unaudited), derived=derived,
                            rewind_to=Stage.PLAN, event_data=event)
    from fyan.adopt.candidate import candidate_mismatch

    mismatch = candidate_mismatch(ctx.store, ctx.unit.id, freezes)  # an adopted candidate statement
    if mismatch:
        return CheckOutcome(False, mismatch, derived=derived, rewind_to=Stage.PLAN, event_data=event)
    roots = ", ".join(n.split(".")[-1] for n in side.decls)
    if result.routing == "bridge" and result.bridge is not None:
        freezes = [f.model_copy(update={"role": "bridge"}) if f.decl == result.bridge.name else f for f in freezes]
        return CheckOutcome(True, f"audit grade {result.grade} < {result.threshold}: froze {roots} with the bridge "
                                  f"obligation {result.bridge.name} (S0 graded {result.bridge.result.grade})",
                            derived=derived, freezes=freezes, event_data=event)
    return CheckOutcome(True, f"audit grade {result.grade} >= {result.threshold}: froze {roots}",
                        derived=derived, freezes=freezes, event_data=event)


def frozen_problems(store, unit_id: str, text: str) -> list[str]:
    """Every frozen declaration of ``unit_id`` missing from, or edited in, Lean ``text``."""
    decls = declarations.scan(text)
    return [c for f in store.freezes(unit_id) if (c := signature_change(f, decls)) is not None]


def frozen_refutation_outcome(ctx: CheckContext) -> CheckOutcome | None:
    """The prove attempt's claim that a frozen statement is false on a small instance
    (``fyan.refute.frozen``), decided by the check itself: the program is regenerated from the
    store's freezes (an outcome of any other program is ignored) and run again here, confined, in
    ``frozen-refutation-check/``. A confirmed refutation blocks the unit (``FailureKind.REFUTED``,
    back to the audit once a human gave guidance); one the check's run does not confirm fails the
    attempt; no toolchain to confirm with is an environment failure. None: no refutation claimed."""
    from fyan.refute.frozen import block_reason, frozen_programs
    from fyan.refute.models import RefutationOutcome
    from fyan.refute.record import FROZEN_FOLDER
    from fyan.refute.review import lean_check, lean_header, limits_of
    from fyan.refute.runner import run_refutation

    claimed = []
    for path in sorted((ctx.attempt_dir / FROZEN_FOLDER).glob("*/outcome.json")):
        try:
            outcome = RefutationOutcome.model_validate_json(safefile.read_text(path))
        except (OSError, ValueError):
            continue
        if outcome.refutes:
            claimed.append(outcome)
    if not claimed:
        return None
    cfg = ctx.project.config.refute
    programs, _ = frozen_programs(ctx.store.freezes(ctx.unit.id), cfg.frozen_bound, lean_header(ctx.project))
    by_sha = {p.sha256(): p for p in programs}
    program = next((by_sha[o.program_sha256] for o in claimed if o.program_sha256 in by_sha), None)
    if program is None:
        return None  # not a check of the current frozen statements: evidence of nothing
    lean = lean_check(ctx.project, ctx.attempt_dir)
    if lean is None:
        return CheckOutcome(False, "the attempt reports a frozen statement refuted, and no Lean toolchain is here to "
                                   "confirm it", failure_kind=FailureKind.ENVIRONMENT)
    folder = ctx.attempt_dir / "frozen-refutation-check"
    again = run_refutation(program, workdir=folder, limits=limits_of(cfg), lean=lean,
                           hidden=(ctx.project.paths.root,))
    if not again.refutes:
        return CheckOutcome(False, f"the attempt's refutation of {program.target.id} was not confirmed by the check's "
                                   f"own run ({again.summary()})")
    return CheckOutcome(False, block_reason(again, ctx.project.paths.rel(folder)), failure_kind=FailureKind.REFUTED,
                        rewind_to=Stage.AUDIT, event_data={"frozen_refuted": program.target.id})


def check_prove(ctx: CheckContext) -> CheckOutcome:
    """The Formalizer's ``Basic.lean``; an attempt that ended with a verdict (``verdict.json``)
    is decided by the verdict's check (``fyan.replan.check``): a re-plan, or a failed attempt."""
    from fyan.replan.check import check_verdict

    refuted = frozen_refutation_outcome(ctx)
    if refuted is not None:
        return refuted
    verdict = check_verdict(ctx)
    if verdict is not None:
        return verdict
    text = safefile.read_text(ctx.attempt_dir / "Basic.lean")
    problem = _model_file_problem(ctx, text, "Basic")
    if problem:
        return CheckOutcome(False, problem)
    problems = frozen_problems(ctx.store, ctx.unit.id, text)
    if problems:
        return CheckOutcome(False, problems[0])
    decls = declarations.scan(text)
    return CheckOutcome(True, f"Basic.lean with {len(decls)} declaration(s); frozen statements intact")


def check_gate(ctx: CheckContext) -> CheckOutcome:
    """The completion gate's verdict as a stage outcome. Where the attempt ran elsewhere
    (``fyan.executor``), the gate already ran there, in Fyan's own worker code, and its report
    arrives as ``ctx.evidence["gate_report"]`` (never from the attempt folder); otherwise it runs
    here."""
    if "gate_report" in ctx.evidence:
        report = GateReport.model_validate(ctx.evidence["gate_report"])
        if report.unit != ctx.unit.id:
            return CheckOutcome(False, f"gate report of {report.unit} handed in for {ctx.unit.id}: refused",
                                failure_kind=FailureKind.ENVIRONMENT)
        tries = ctx.evidence.get("gate_runs", 1)
        return gate_outcome(report, tries if isinstance(tries, int) and tries > 0 else 1)
    disc = discover(ctx.project.config.lean, cwd=ctx.project.paths.lean)
    report, tries = run_gate_retrying(ctx.project, ctx.store, ctx.unit, ctx.attempt_dir, disc)
    return gate_outcome(report, tries)


def transient_environment(report: GateReport) -> bool:
    """The gate failed for the environment's reasons another run may not meet (a Lean or
    inspector crash, an out-of-memory kill, a missing binary: ``GateReport.environment_problem``
    with a toolchain found) — as opposed to a missing toolchain, a configuration problem that no
    retry in this session fixes."""
    return (not report.passed and report.toolchain is not None and report.environment_problem is not None
            and report.environment_transient)


def run_gate_retrying(project, store, unit, log_dir, discovery, *, sleep=time.sleep) -> tuple[GateReport, int]:
    """``run_gate``, run again while ``transient_environment`` says so: at most
    ``[lean] environment_retries`` more times, waiting ``environment_backoff_s`` seconds, doubled
    per retry (at most 300), between runs (tenacity). Returns the last report and how many runs
    were made. An environment failure is never the proof's: the caller routes it as
    ``FailureKind.ENVIRONMENT`` (``gate_outcome``), which no attempt budget counts."""
    from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_exponential

    cfg = project.config.lean
    tries = 0

    def once() -> GateReport:
        nonlocal tries
        tries += 1
        return run_gate(project, store, unit, log_dir, discovery)

    def note(state) -> None:
        logs.get().warning("gate_environment_retry", unit=unit.id, attempt=state.attempt_number,
                           problem=state.outcome.result().environment_problem)

    retrying = Retrying(stop=stop_after_attempt(cfg.environment_retries + 1),
                        wait=wait_exponential(multiplier=cfg.environment_backoff_s, max=300),
                        retry=retry_if_result(transient_environment), before_sleep=note,
                        retry_error_callback=lambda state: state.outcome.result(), sleep=sleep)
    report = retrying(once)
    return report, tries


def gate_outcome(report: GateReport, tries: int = 1) -> CheckOutcome:
    """Route a gate report: passed → complete; no toolchain or another environment problem →
    ``environment`` failure (blocks the unit for the session); any other failure → back to the
    Formalizer."""
    derived = {"gate/report.json": report_json(report)}
    if report.passed:
        outputs = {k: base64.b64decode(v) for k, v in (report.module_outputs_b64 or {}).items()}
        olean = outputs.get("Basic.olean")
        if olean is not None and set(outputs) == {"Basic.olean", "Basic.olean.json"} \
                and hashlib.sha256(olean).hexdigest() == report.module_olean_sha256:
            derived.update(outputs)  # the module as the gate compiled it, recorded with its SHA-256
        return CheckOutcome(True, "completion gate passed", derived=derived)
    if report.toolchain is None:
        return CheckOutcome(False, report.environment_problem or TOOLCHAIN_MISSING, derived=derived,
                            failure_kind=FailureKind.ENVIRONMENT)
    if report.environment_problem is not None:
        reason = report.environment_problem
        if transient_environment(report):
            reason = (f"waiting on the environment (not the proof; ran {tries} time(s) in this attempt, "
                      f"[lean] environment_retries; the next `fyan run`/`fyan resume` tries again): {reason}")
        return CheckOutcome(False, reason, derived=derived, failure_kind=FailureKind.ENVIRONMENT)
    return CheckOutcome(False, "completion gate failed: " + report.summary(), derived=derived, rewind_to=Stage.PROVE)
