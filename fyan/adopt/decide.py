"""Adoption decisions: what to do with a theorem unit whose Lean may already exist.

For each unit, its ``\\lean{...}`` names are looked up by the trusted inspector
(``fyan.lean.inspector``) in the *compiled* environment of the adopted Lake package; the
decision reads only that evidence (``InspectedDeclaration``), never the blueprint's
``\\leanok`` (a ``\\leanok`` that lies must not make a unit complete):

* ``adopted`` — every name is declared, no ``sorryAx`` in its transitive axioms, every axiom
  in ``[lean] axiom_allowlist`` (``fyan.lean.policy.classify_axioms``), and no declaration the
  gate refuses (``unsafe``, ``partial``, ``opaque``, ``implemented_by``, ``extern``, ``init``,
  an ``axiom``: ``fyan.lean.policy.declaration_findings``): the unit is complete by adoption,
  its declarations' elaborated statements are frozen;
* ``candidate`` — every name is declared and its *statement* is sorry-free, but its proof
  closure uses ``sorry`` (or an axiom outside the allow-list): the existing statement is the
  candidate statement the semantic audit must pass, then the Formalizer proves *that*
  declaration;
* ``pipeline`` — no ``\\lean`` name, a name the environment does not declare, or a statement
  that itself contains ``sorry``: the full pipeline, importing the existing modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from pydantic import BaseModel, Field

from fyan.adopt.marks import UnitMarks
from fyan.lean.inspector import InspectedLookup, MissingDeclaration
from fyan.lean.policy import classify_axioms, declaration_findings


class Outcome(StrEnum):
    ADOPTED = "adopted"
    CANDIDATE = "candidate"
    PIPELINE = "pipeline"


class DeclEvidence(BaseModel):
    """What the inspector reported about one ``\\lean`` name (``found`` False: not declared)."""

    name: str
    found: bool
    kind: str | None = None
    module: str | None = None
    type_pp: str = ""
    type_hash: str | None = None
    statement_hash: str | None = None
    axioms: list[str] = Field(default_factory=list)
    uses_sorry: bool = False
    sorry_in_type: bool = False
    refused_axioms: list[str] = Field(default_factory=list)
    findings: list[str] = Field(default_factory=list)
    local_digests: dict[str, str] = Field(default_factory=dict)
    constants: list[str] = Field(default_factory=list, description="constants the statement uses directly")

    @property
    def proved(self) -> bool:
        """Declared, sorry-free, every axiom allowed, nothing the gate refuses."""
        return self.found and not self.uses_sorry and not self.refused_axioms and not self.findings


class Decision(BaseModel):
    """The adoption decision of one unit, with the evidence it rests on."""

    unit: str
    outcome: Outcome
    reason: str
    decls: list[DeclEvidence] = Field(default_factory=list)


def evidence(name: str, rec: InspectedLookup | MissingDeclaration | None, allow: list[str]) -> DeclEvidence:
    """``DeclEvidence`` of ``name`` from the inspector's record (None or ``found`` False:
    not declared). Axioms are judged by ``classify_axioms`` against ``allow``; ``sorryAx`` is
    reported as ``uses_sorry``, not among ``refused_axioms``."""
    if not isinstance(rec, InspectedLookup) or not rec.found:
        return DeclEvidence(name=name, found=False)
    refused = [a for a in classify_axioms([x for x in rec.axioms if x != "sorryAx"], allow)]
    return DeclEvidence(
        name=name, found=True, kind=rec.kind, module=rec.module, type_pp=rec.type_pp, type_hash=rec.type_hash,
        statement_hash=rec.statement_hash, axioms=list(rec.axioms), uses_sorry=rec.uses_sorry,
        sorry_in_type=rec.sorry_in_type, refused_axioms=refused,
        findings=declaration_findings(rec.kind, rec.safety, rec.implemented_by, rec.extern, rec.init,
                                      kernel_evaluated=rec.kernel_evaluated, missing=rec.missing_constants),
        local_digests=rec.local_digests, constants=[c.name for c in rec.constants],
    )


def decide(marks: UnitMarks, lookups: Mapping[str, InspectedLookup | MissingDeclaration], allow: list[str]) -> Decision:
    """The ``Decision`` for one unit (module docstring) from the inspector's ``lookups``
    (name -> record) and the axiom allow-list ``allow``. Pure; never raises."""
    if not marks.lean_names:
        return Decision(unit=marks.unit, outcome=Outcome.PIPELINE, reason="no \\lean name in the blueprint")
    decls = [evidence(n, lookups.get(n), allow) for n in marks.lean_names]
    missing = [d.name for d in decls if not d.found]
    if missing:
        return Decision(unit=marks.unit, outcome=Outcome.PIPELINE, decls=decls,
                        reason=f"not declared in the compiled environment: {', '.join(missing)}")
    bad_statement = [d.name for d in decls if d.sorry_in_type]
    if bad_statement:
        return Decision(unit=marks.unit, outcome=Outcome.PIPELINE, decls=decls,
                        reason=f"the statement itself contains sorry: {', '.join(bad_statement)}")
    refused = [f"{d.name}: {f}" for d in decls for f in d.findings]
    if refused:
        return Decision(unit=marks.unit, outcome=Outcome.PIPELINE, decls=decls,
                        reason="refused by the gate's policy: " + "; ".join(refused))
    if all(d.proved for d in decls):
        return Decision(unit=marks.unit, outcome=Outcome.ADOPTED, decls=decls,
                        reason=f"declared, sorry-free, axioms allowed: {', '.join(marks.lean_names)}")
    why = [f"{d.name} uses sorry" for d in decls if d.uses_sorry]
    why += [f"{d.name} uses {a}" for d in decls for a in d.refused_axioms]
    return Decision(unit=marks.unit, outcome=Outcome.CANDIDATE, decls=decls,
                    reason="; ".join(why))


def decide_all(marks: Mapping[str, UnitMarks], lookups: Mapping[str, InspectedLookup | MissingDeclaration],
               allow: list[str]) -> dict[str, Decision]:
    """``decide`` for every unit of ``marks`` (unit id -> decision)."""
    return {uid: decide(m, lookups, allow) for uid, m in marks.items()}


def outcome_from_marks(marks: UnitMarks) -> Outcome:
    """What adoption *would* decide if the blueprint's marks were true (no environment): a
    ``\\lean`` name with ``\\leanok`` on the proof → adopted; with ``\\leanok`` on the statement
    only → candidate; otherwise pipeline. For estimates on a package that is not built
    (``scripts/pfr_adoption_counts.py``) only — never used to decide a real adoption."""
    if not marks.lean_names:
        return Outcome.PIPELINE
    if marks.leanok_proof or (marks.leanok_statement and not marks.has_proof):
        return Outcome.ADOPTED
    if marks.leanok_statement:
        return Outcome.CANDIDATE
    return Outcome.PIPELINE
