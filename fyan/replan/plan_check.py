"""The plan check's rule for a re-plan (``fyan.gates.stages.check_plan``).

A re-plan (``fyan.state.lifecycle``: the Planner runs again after a checked verdict of the
Formalizer) revises the planned lemmas only. The audit certified the roots and froze them, and a
re-planned unit goes from the plan straight to the Formalizer without a new audit, so the revised
scaffold must keep:

* every active frozen root (role ``root``) with its frozen signature
  (``fyan.lakepackage.signatures.signature_change``, the wording every check uses);
* every definition of the previous scaffold (the published ``Statement.lean``) with the same
  signature and body: a root's meaning depends on the definitions it mentions.

Outside a re-plan the rule does not apply (a first plan, or a repair the audit asked for, which
unfreezes the roots and is audited again).
"""

from __future__ import annotations

from fyan.models.replies import LemmaDag
from fyan.lean import declarations
from fyan.sandbox import safefile
from fyan.lakepackage.signatures import signature_change
from fyan.state.gateway import CheckContext
from fyan.state.lifecycle import progress


def is_replan(ctx: CheckContext) -> bool:
    """Whether the plan attempt ``ctx.run`` is a re-plan: the unit's history before it ends in
    a re-plan that no plan success closed yet (the lifecycle's own rule)."""
    before = [r for r in ctx.store.runs(ctx.unit.id) if r.id < ctx.run.id]
    return progress(before, ctx.project.config.scheduler.attempts_per_stage).replanning


def replan_problems(ctx: CheckContext, dag: LemmaDag, text: str) -> list[str]:
    """Why the scaffold ``text`` (with its lemma DAG ``dag``) may not replace the frozen plan
    (module docstring); empty when it may, or when this is not a re-plan."""
    if not is_replan(ctx):
        return []
    decls = declarations.scan(text)
    problems = [c for f in ctx.store.freezes(ctx.unit.id) if f.role == "root"
                and (c := signature_change(f, decls, "Statement.lean")) is not None]
    frozen_roots = {f.decl.split(".")[-1] for f in ctx.store.freezes(ctx.unit.id) if f.role == "root"}
    dropped = sorted(frozen_roots - set(dag.roots))
    if dropped:
        problems.append(f"the frozen root(s) {', '.join(dropped)} must stay roots of the lemma DAG")
    previous = ctx.project.paths.unit(ctx.unit.id) / "Statement.lean"
    if safefile.is_regular(previous):
        for d in declarations.scan(safefile.read_text(previous)):
            if d.kind not in declarations.DEFINITION_KINDS:
                continue
            now = declarations.find(decls, d.full_name)
            if now is None:
                problems.append(f"{d.full_name}: a definition of the frozen plan is gone")
            elif now.frozen_signature != d.frozen_signature:
                problems.append(f"{d.full_name}: a definition of the frozen plan changed (`{d.frozen_signature}` → "
                                f"`{now.frozen_signature}`)")
    return problems
