"""Deterministic checks of the post-completion tasks (Curator, Auditor), run by the gateway.

They decide what is *published*, never whether the unit is complete (the completion gate alone
does; their ``PostTaskSpec`` in ``fyan.stages``).

* review (Auditor) — the counts are computed here, by code, from the published ``Basic.lean``
  (declarations by kind, ``sorry``, ``admit``, ``axiom`` declarations; comments ignored) and the
  gate report's axiom audit (the transitive axioms of each root, from the trusted inspector). The attempt's
  ``review.json`` must carry exactly these counts and ``review.md`` must open with exactly their
  rendering: the counts win over the reviewer's prose, whose contradicting claims are listed as
  discrepancies by code.
* curate (Curator) — every proposed skill's ``lemmas`` are looked up in the unit's environment
  (``fyan.lakepackage.names``, the unit itself included); a skill naming a lemma that does not exist is
  not admitted. Admitted skills are rendered by code into ``skills/<name>.md``; ``curate.json``
  lists admitted and refused skills with the reason.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from fyan.sandbox import safefile
from fyan.models.replies import CurateReply, ReviewReply, Skill
from fyan.models.gate_report import GateReport
from fyan.lean import declarations
from fyan.lakepackage.names import check_names
from fyan.project import Project
from fyan.state.gateway import PostContext, PostOutcome
from fyan.state.models import UnitRecord


class UnitCounts(BaseModel):
    """Deterministic counts of a complete unit (``review.json``)."""

    declarations: int
    by_kind: dict[str, int]
    sorry: int
    admit: int
    axiom_declarations: int
    axioms: dict[str, list[str]] = Field(description="root -> transitive axioms (gate report, from the inspector)")
    axioms_known: bool = Field(description="False when the gate report has no axiom evidence")


def unit_counts(project: Project, unit: UnitRecord) -> UnitCounts:
    """Counts of ``unit``'s published ``Basic.lean`` and ``gate/report.json``.

    Raises ``FileNotFoundError`` when ``Basic.lean`` is missing (a complete unit has one)."""
    folder = project.paths.unit(unit.id)
    text = safefile.read_text(folder / "Basic.lean")
    clean = declarations.strip_comments(text)
    decls = declarations.scan(text)
    axioms: dict[str, list[str]] = {}
    known = False
    report_path = folder / "gate" / "report.json"
    if report_path.is_file():
        try:
            report = GateReport.model_validate_json(safefile.read_text(report_path))
            evidence = report.check("axiom_audit").evidence.get("axioms")
            if isinstance(evidence, dict):
                axioms = {k: sorted(v) for k, v in sorted(evidence.items())}
                known = True
        except (ValidationError, ValueError, StopIteration):
            pass
    return UnitCounts(
        declarations=len(decls), by_kind=dict(sorted(Counter(d.kind for d in decls).items())),
        sorry=len(re.findall(r"\bsorry\b", clean)), admit=len(re.findall(r"\badmit\b", clean)),
        axiom_declarations=sum(d.kind == "axiom" for d in decls), axioms=axioms, axioms_known=known,
    )


def render_counts(counts: UnitCounts) -> str:
    """The code-written head of ``review.md``."""
    all_axioms = sorted({a for v in counts.axioms.values() for a in v})
    lines = [
        "## Deterministic counts (authoritative)",
        "",
        "Computed by Fyan from `Basic.lean` and the completion gate's inspector. Where the reviewer's",
        "notes below disagree with them, these counts are right.",
        "",
        "| count | value |",
        "|---|---|",
        f"| declarations | {counts.declarations} ({', '.join(f'{k} {n}' for k, n in counts.by_kind.items()) or '-'}) |",
        f"| `sorry` | {counts.sorry} |",
        f"| `admit` | {counts.admit} |",
        f"| `axiom` declarations | {counts.axiom_declarations} |",
        f"| transitive axioms of the roots | {', '.join(all_axioms) or 'none'} |" if counts.axioms_known
        else "| transitive axioms of the roots | unknown (no axiom evidence in the gate report) |",
    ]
    return "\n".join(lines) + "\n"


def discrepancies(counts: UnitCounts, reply: ReviewReply) -> list[str]:
    """Where the reviewer's claimed counts contradict the deterministic ones."""
    claimed = reply.counts
    out = []
    for name, actual in (("declarations", counts.declarations), ("sorry", counts.sorry), ("admit", counts.admit)):
        said = getattr(claimed, name)
        if said != actual:
            out.append(f"the reviewer counted {said} {name}; the scan found {actual}")
    if counts.axioms_known:
        actual_axioms = sorted({a for v in counts.axioms.values() for a in v})
        if sorted(set(claimed.axioms)) != actual_axioms:
            out.append(f"the reviewer listed axioms {sorted(set(claimed.axioms)) or 'none'}; the inspector found {actual_axioms or 'none'}")
    return out


def render_review(unit: UnitRecord, counts: UnitCounts, reply: ReviewReply) -> str:
    """``review.md``: title, the counts (code), discrepancies (code), then the reviewer's prose."""
    parts = [f"# Review of unit `{unit.id}`", "", f"Source: {unit.provenance}.", "", render_counts(counts)]
    found = discrepancies(counts, reply)
    if found:
        parts += ["## Discrepancies (the counts above win)", "", *[f"- {d}" for d in found], ""]
    parts += ["## Reviewer's notes (model-written)", "", reply.summary.strip(), ""]
    parts += [f"- {o.strip()}" for o in reply.observations]
    return "\n".join(parts).rstrip() + "\n"


def check_review(ctx: PostContext) -> PostOutcome:
    counts = unit_counts(ctx.project, ctx.unit)
    try:
        data = json.loads(safefile.read_text(ctx.attempt_dir / "review.json"))
        reply = ReviewReply.model_validate(data["reviewer"])
        written = UnitCounts.model_validate(data["counts"])
        text = safefile.read_text(ctx.attempt_dir / "review.md")
    except (OSError, KeyError, ValueError, ValidationError) as e:
        return PostOutcome(False, f"review attempt left no valid review.json/review.md: {e}".splitlines()[0])
    if written != counts:
        return PostOutcome(False, "review.json does not carry the deterministic counts")
    if text != render_review(ctx.unit, counts, reply):
        return PostOutcome(False, "review.md is not Fyan's rendering of the counts and the reviewer's notes")
    found = discrepancies(counts, reply)
    record = {"counts": counts.model_dump(), "reviewer": reply.model_dump(), "discrepancies": found}
    return PostOutcome(True, f"review.md written; {len(found)} discrepanc{'y' if len(found) == 1 else 'ies'} with the counts",
                       unit_files={"review.md": text.encode(), "review.json": (json.dumps(record, indent=2) + "\n").encode()})


def render_skill(skill: Skill, unit: UnitRecord, resolved: dict[str, str]) -> str:
    lemmas = "\n".join(f"- `{resolved.get(n, n)}`" for n in skill.lemmas) or "- (none)"
    return (f"# {skill.title.strip()}\n\n"
            f"<!-- fyan skill `{skill.name}`, mined by the Curator from unit `{unit.id}` ({unit.provenance}); "
            "its lemmas were checked to exist in the unit's environment -->\n\n"
            f"## When to use\n\n{skill.when_to_use.strip()}\n\n## Pattern\n\n{skill.pattern.strip()}\n\n"
            f"## Lemmas it relies on\n\n{lemmas}\n")


def check_curate(ctx: PostContext) -> PostOutcome:
    try:
        reply = CurateReply.model_validate_json(safefile.read_text(ctx.attempt_dir / "skills" / "proposed.json"))
    except (OSError, ValueError, ValidationError) as e:
        return PostOutcome(False, f"curate attempt left no valid skills/proposed.json: {e}".splitlines()[0])
    names = check_names(ctx.project, ctx.store, ctx.unit, [n for s in reply.skills for n in s.lemmas],
                        log_dir=ctx.attempt_dir, include_self=True)
    admitted: dict[str, bytes] = {}
    report: dict[str, Any] = {"checked": names.describe(), "admitted": [], "refused": []}
    for skill in reply.skills:
        missing = [n for n in skill.lemmas if n in names.missing]
        if missing:
            report["refused"].append({"skill": skill.name, "reason": f"names lemma(s) not in the environment: {', '.join(missing)}"})
            continue
        file = f"{skill.name}.md"
        existing = ctx.project.paths.skills / file
        if file in admitted or (existing.is_file() and f"unit `{ctx.unit.id}`" not in safefile.read_text(existing)):
            file = f"{skill.name}--{ctx.unit.id}.md"
        admitted[file] = render_skill(skill, ctx.unit, names.found).encode()
        report["admitted"].append({"skill": skill.name, "file": f"skills/{file}"})
    return PostOutcome(True, f"{len(report['admitted'])} skill(s) admitted, {len(report['refused'])} refused",
                       unit_files={"curate.json": (json.dumps(report, indent=2) + "\n").encode()}, skill_files=admitted)
