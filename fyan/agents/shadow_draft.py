"""Model-drafted shadow sets: the model proposes, the completeness check decides.

The model (prompt ``prompts/shadow_draft.*.md``) proposes shadows of the reference — projections,
specialisations, unfoldings, iff directions, consequences — each with a forward proof, and a
backward proof. Every proof must use the robustness pattern

    first
    | exact …
    | exact (let _hc := …; …)
    | (suffices …; apply T <;> assumption)

(at least two alternatives after ``first``) so that binder-style differences between a
candidate and the reference (argument order, implicit vs explicit, bundled hypotheses) do not
cause false negatives. A reply that does not validate as a shadow set or breaks the pattern gets
form repairs. The draft is **kept only if the completeness check passes** (``complete``);
otherwise nothing is written as a shadow set and the report names each failing checker.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fyan.lean.declarations import strip_comments
from fyan.agents.shadow import ModelCaller
from fyan.shadow.complete import Completeness, check_completeness
from fyan.shadow.compiler import Compiler
from fyan.shadow.shadowset import Backward, Method, Shadow, ShadowSet

STAGE = "shadow_draft"


class DraftShadow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    method: Method
    statement: str
    forward: str
    note: str = ""


class DraftReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    shadows: list[DraftShadow] = Field(min_length=1)
    backward: str = Field(description="Tactic proof of `type_of% @target` from the shadows")


class DraftInput(BaseModel):
    """What a draft starts from: the reference and its context."""

    problem: str
    target: str
    header: str = ""
    reference: str
    informal: str = ""
    source: str = ""


def robustness_errors(label: str, proof: str) -> list[str]:
    """Form errors when ``proof`` does not follow the robustness pattern (module docstring)."""
    text = strip_comments(proof).strip()
    if not re.match(r"^first\b", text):
        return [f"{label}: the proof must start with `first` (robustness pattern)"]
    alternatives = len(re.findall(r"(?m)(?:^|\bfirst)\s*\|", text))
    if alternatives < 2:
        return [f"{label}: `first` needs at least two `| …` alternatives (robustness pattern)"]
    return []


def to_shadow_set(base: DraftInput, reply: DraftReply, model: str) -> ShadowSet:
    """The shadow set a reply proposes; raises ``ValidationError`` as ``ShadowSet`` does."""
    return ShadowSet(
        problem=base.problem, target=base.target, header=base.header, reference=base.reference,
        informal=base.informal, source=base.source, drafted_by=model,
        shadows=[Shadow(**s.model_dump()) for s in reply.shadows], backward=Backward(proof=reply.backward),
    )


def form_errors(base: DraftInput, reply: DraftReply, model: str) -> list[str]:
    errors: list[str] = []
    try:
        to_shadow_set(base, reply, model)
    except ValidationError as e:
        errors += [f"{'.'.join(str(x) for x in err['loc']) or 'shadow set'}: {err['msg']}" for err in e.errors()]
    for s in reply.shadows:
        errors += robustness_errors(f"shadow {s.id} forward", s.forward)
    errors += robustness_errors("backward", reply.backward)
    return errors


class DraftResult(BaseModel):
    problem: str
    kept: bool
    shadow_set: ShadowSet
    completeness: Completeness
    written: str | None = None


def prompt_values(base: DraftInput) -> dict[str, str]:
    """The placeholders of ``prompts/shadow_draft.*.md`` for ``base``."""
    return {
        "problem": base.problem, "target": base.target, "header": base.header.strip() or "(none)",
        "reference": base.reference.strip(), "informal": base.informal.strip() or "(none)",
        "methods": ", ".join(m.value for m in Method),
    }


def draft(base: DraftInput, caller: ModelCaller, compiler: Compiler | None, *, unavailable: str = "") -> DraftResult:
    """Ask the model, validate (with form repairs), then run the completeness check.

    Raises ``ModelOutputError`` when the reply never validates; provider and compiler errors
    propagate. ``kept`` is True only when the set is complete.
    """
    model = caller.agent.model
    reply = caller.ask_json(STAGE, prompt_values(base), DraftReply, unit=base.problem,
                            check=lambda r: form_errors(base, r, model))
    shadow_set = to_shadow_set(base, reply, model)
    completeness = check_completeness(shadow_set, compiler, unavailable=unavailable)
    return DraftResult(problem=base.problem, kept=completeness.complete, shadow_set=shadow_set, completeness=completeness)


def write_result(result: DraftResult, out_dir: Path) -> Path:
    """Write a kept draft to ``<out>/<problem>/shadowset.json``; a rejected one only to
    ``<out>/.drafts/<problem>/rejected.json`` (never where ``fyan shadow eval`` would load it)."""
    from fyan.shadow.shadowset import dump_json

    if result.kept:
        path = out_dir / result.problem / "shadowset.json"
    else:
        path = out_dir / ".drafts" / result.problem / "rejected.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_json(result.shadow_set), encoding="utf-8")
    (path.parent / ("completeness.json" if not result.kept else ".completeness.json")).write_text(
        result.completeness.model_dump_json(indent=2) + "\n", encoding="utf-8")
    result.written = str(path)
    return path
