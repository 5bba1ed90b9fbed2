"""The model-driven stages: Reasoner, Planner, semantic auditor, Formalizer.

Each stage function reads the unit's published artifacts (read-only), asks its model through a
``StageSession`` and writes its outputs into the attempt folder — nothing else. Provenance
blocks, imports, namespaces and file layout are written by code. Whether the attempt counts is
decided afterwards by the gateway's deterministic check (``fyan.gates.stages``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fyan.agents.schemas import LemmaDag, PlanReply, ProveReply
from fyan.agents.session import StageSession
from fyan.audit.record import CONVERSIONS, RELATION_GRADE, AuditResult, EvidenceRecord
from fyan.audit.validator import validate_record
from fyan.gates.completion import GateReport
from fyan.gates.stages import provenance_block, root_texts
from fyan.lean import declarations
from fyan.lean.diagnostics import parse_lake_output
from fyan.lean.package import model_part, render_unit_file, unit_module, unit_namespace, upstream
from fyan.lean.runner import run_process
from fyan.lean.toolchain import discover
from fyan.lean.workspace import prepare_workspace
from fyan.project import Project
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
        return path.read_text(encoding="utf-8") if path.is_file() else None

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
        for dep in upstream(self.store, self.unit.id):
            problem = (self.project.paths.unit(dep.id) / "problem.tex")
            text = problem.read_text(encoding="utf-8") if problem.is_file() else ""
            block = provenance_block(text) or ""
            lean = [f"    {f.normalized_signature}" for f in self.store.freezes(dep.id)]
            parts.append(
                f"- `{dep.id}` ({dep.kind}), Lean namespace `{unit_namespace(self.project, dep)}`:\n"
                + "\n".join("    " + line for line in text.replace(block, "").strip().splitlines())
                + ("\n  Lean (frozen):\n" + "\n".join(lean) if lean else "")
            )
        return "\n".join(parts) if parts else NONE

    def guidance(self) -> str:
        """Advice for this attempt as a quoted comment block (``fyan.orchestrator.guidance``)."""
        from fyan.orchestrator.guidance import advice_block

        return advice_block(self.project, self.store, self.unit.id)

    def last_failure(self, stage: Stage) -> StageRun | None:
        runs = [r for r in self.store.runs(self.unit.id) if r.stage is stage and r.status.value == "failed"]
        return runs[-1] if runs else None


def reason(s: StageSession, u: UnitContext) -> None:
    text = s.ask("reason", {
        "unit": u.unit.id, "kind": u.unit.kind, "problem": u.statement_tex,
        "source_proof": (u.read("source_proof.tex") or "(the document gives no proof)").strip(),
        "upstream": u.upstream(), "guidance": u.guidance(),
    })
    u.write("proof.md", f"{u.provenance}\n\n{text.strip()}\n")


def _repair_request(u: UnitContext) -> str:
    audit = u.last_failure(Stage.AUDIT)
    if audit is None or audit.rewind_to is not Stage.PLAN:
        return NONE
    result_path = u.project.paths.unit(u.unit.id) / "audit" / "result.json"
    if result_path.is_file():
        result = AuditResult.model_validate_json(result_path.read_text(encoding="utf-8"))
        if result.repairs:
            return "\n".join(f"- {r}" for r in result.repairs)
    return audit.reason or NONE


def plan(s: StageSession, u: UnitContext) -> None:
    reply = s.ask_json("plan", {
        "unit": u.unit.id, "kind": u.unit.kind, "namespace": u.namespace, "problem": u.statement_tex,
        "proof": (u.read("proof.md") or "").replace(u.provenance, "").strip(),
        "upstream": u.upstream(), "repair": _repair_request(u), "guidance": u.guidance(),
    }, PlanReply)
    u.write("lemma_dag.json", reply.lemma_dag.model_dump_json(indent=2) + "\n")
    u.write("blueprint.md", f"{u.provenance}\n\n{reply.blueprint.strip()}\n")
    u.write("Statement.lean", render_unit_file(u.project, u.store, u.unit, reply.lean, "Statement"))


def audit(s: StageSession, u: UnitContext) -> None:
    dag = LemmaDag.model_validate_json(u.read("lemma_dag.json") or "{}")
    statement = u.read("Statement.lean") or ""
    root = f"{u.namespace}.{dag.roots[0]}"
    header, _ = root_texts(u.project, u.unit, statement, dag.roots)
    # the judge sees the roots with every comment removed (DESIGN.md §2)
    lean_text = "\n".join(declarations.normalize(line) for line in declarations.strip_comments(header).splitlines())
    threshold = u.project.config.audit.threshold

    def form(record: EvidenceRecord) -> list[str]:
        return validate_record(record, problem_text=u.statement_tex, lean_header=header, root=root,
                               threshold=threshold).errors

    record = s.ask_json("audit", {
        "unit": u.unit.id, "root": dag.roots[0], "problem": u.statement_tex, "statement": lean_text,
        "relations": "\n".join(f"- `{r}` (grade {g})" for r, g in RELATION_GRADE.items()),
        "conversions": "\n".join(f"- `{c}`: {d}" for c, d in CONVERSIONS.items()),
    }, EvidenceRecord, check=form)
    u.write("audit/record.json", record.model_dump_json(indent=2) + "\n")


def _frozen(u: UnitContext) -> str:
    freezes = u.store.freezes(u.unit.id)
    return "\n".join(f"- `{f.decl}`: `{f.normalized_signature}`" for f in freezes) or NONE


def _gate_feedback(u: UnitContext) -> str:
    gate = u.last_failure(Stage.GATE)
    if gate is None or gate.rewind_to is not Stage.PROVE:
        return NONE
    path = u.project.paths.unit(u.unit.id) / "gate" / "report.json"
    if not path.is_file():
        return gate.reason or NONE
    report = GateReport.model_validate_json(path.read_text(encoding="utf-8"))
    return "The completion gate rejected the previous proof:\n" + "\n".join(
        f"- {c.name}: {c.reason}" for c in report.failures
    )


def prove(s: StageSession, u: UnitContext) -> None:
    values = {
        "unit": u.unit.id, "kind": u.unit.kind, "namespace": u.namespace, "problem": u.statement_tex,
        "proof": (u.read("proof.md") or "").replace(u.provenance, "").strip(),
        "blueprint": (u.read("blueprint.md") or "").replace(u.provenance, "").strip(),
        "statement": model_part(u.read("Statement.lean") or ""), "frozen": _frozen(u),
        "upstream": u.upstream(), "feedback": _gate_feedback(u), "guidance": u.guidance(),
    }
    iterations = u.project.config.agents.prove_iterations
    discovery = discover(u.project.config.lean)
    text = ""
    for i in range(iterations):
        reply = s.ask_json("prove", values, ProveReply)
        text = render_unit_file(u.project, u.store, u.unit, reply.lean, "Basic")
        if discovery.toolchain is None or i == iterations - 1:
            break
        feedback = _compile_feedback(u, text, discovery.toolchain.lake, i + 1)
        if feedback is None:
            break
        values = {**values, "feedback": feedback}
    u.write("Basic.lean", text)


def _compile_feedback(u: UnitContext, text: str, lake: Path, iteration: int) -> str | None:
    """Build the candidate; None when it compiles without errors or sorry, else the diagnostics."""
    cfg = u.project.config.lean
    ws = prepare_workspace(u.project, u.unit, {"Basic": text})
    module = unit_module(u.project, u.unit, "Basic")
    proc = run_process([str(lake), "build", module], cwd=ws.root, timeout_s=cfg.build_timeout, memory_mb=cfg.memory_limit_mb,
                       sandbox=cfg.sandbox, writable=[ws.root], log_path=u.attempt_dir / f"iteration-{iteration}-build.log")
    log = parse_lake_output(proc.output)
    rel = ws.module_file(module).relative_to(ws.root).as_posix()
    problems = [d for d in log.in_files({rel}) if d.severity == "error" or d.is_sorry]
    if proc.ok and not problems:
        return None
    lines = [f"Iteration {iteration}: lake build {'succeeded' if proc.ok else 'failed'} ({proc.note or 'exit ' + str(proc.exit_code)})."]
    lines += [f"- line {d.line}:{d.column} {d.severity}: {d.text}" for d in problems[:30]]
    return "\n".join(lines)


STAGE_AGENTS: dict[Stage, Callable[[StageSession, UnitContext], None]] = {
    Stage.REASON: reason,
    Stage.PLAN: plan,
    Stage.AUDIT: audit,
    Stage.PROVE: prove,
}

