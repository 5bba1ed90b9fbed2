"""The evidence record of a semantic audit (DESIGN.md §7) and the audit result.

A model proposes the record: rows that pair literal quotations of ``problem.tex`` (the
source) with fragments of the Lean statement (the candidate), per role (object, hypothesis,
goal, definition), with a relation from a closed vocabulary. Code validates it and computes
the grade (``fyan.audit.validator``); nothing in the record is taken on trust.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Relation = Literal[
    "same", "trivial_equivalent", "mutated_equivalent", "mutated_stronger", "mutated_weaker", "mutated", "unaligned"
]
Role = Literal["object", "hypothesis", "goal", "definition"]

#: Grade contributed by each relation (DESIGN.md §7).
RELATION_GRADE: dict[str, int] = {
    "same": 3,
    "trivial_equivalent": 2,
    "mutated_equivalent": 1,
    "mutated_stronger": 1,
    "mutated_weaker": 1,
    "mutated": 1,
    "unaligned": 0,
}

#: The closed list of conversions a ``trivial_equivalent`` row may name.
CONVERSIONS: dict[str, str] = {
    "alpha_renaming": "bound variables renamed",
    "conjunct_reordering": "the conjuncts of a hypothesis or goal reordered",
    "binder_reordering": "independent binders reordered",
    "currying": "A ∧ B → C written as A → B → C",
    "implicit_explicit_binder": "a binder made implicit or explicit",
    "notation_unfolding": "Lean notation for the source's words (n ∣ m for 'n divides m')",
    "definition_unfolding": "a checked definition unfolded (the definition is audited itself)",
    "coercion_insertion": "a coercion between number types that preserves the value",
    "eq_symmetry": "a = b written as b = a",
    "iff_symmetry": "A ↔ B written as B ↔ A",
    "double_negation": "¬¬A for A (classical)",
    "numeral_representation": "the same number written differently (2 * k + 1 vs 1 + 2 * k)",
    "set_builder_membership": "x ∈ {y | P y} for P x",
}

PLACEHOLDERS = ("todo", "tbd", "n/a", "...", "same", "none", "see above", "as above", "placeholder", "xxx")


class EvidenceRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    source: list[str] = Field(description="Literal quotations from problem.tex (may be empty for a Lean-only slot)")
    candidate: list[str] = Field(description="Fragments of the Lean statement (may be empty for an omission)")
    relation: Relation
    conversions: list[str] = Field(default_factory=list)
    argument: str = Field(default="", description="Why the relation holds; required unless 'same'")
    repair: str | None = Field(default=None, description="How the Planner should fix a changed item")


class EvidenceRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    root: str = Field(description="The Lean declaration audited (name as written)")
    rows: list[EvidenceRow]
    summary: str = ""


class ItemGrade(BaseModel):
    row: int
    role: str
    relation: str
    grade: int
    note: str = ""


class AuditResult(BaseModel):
    """What code decided about a record (written to ``audit/result.json``)."""

    valid: bool
    errors: list[str] = Field(default_factory=list)
    grade: int | None = None
    threshold: int
    items: list[ItemGrade] = Field(default_factory=list)
    routing: Literal["freeze", "repair", "reject"]
    repairs: list[str] = Field(default_factory=list)
    root: str | None = None
