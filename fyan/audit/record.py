"""The evidence record of a semantic audit and the audit result.

A model (the judge) proposes the record; code validates it and computes the grade
(``fyan.audit.grading``). Nothing in the record is taken on trust.

Record: ``rows`` pair a group of **source slots** with a group of **candidate slots** (ids cut
by code, ``fyan.audit.slots``; many-to-many allowed) with a relation from the closed
vocabulary ``RELATIONS``. A row with one side empty is an **omission row**: the missing side
is ⊤ (conjunct) or ⊥ (disjunct) at the slot's own polarity, graded like any other change.
Every slot of both sides must be in exactly one row. When a row records a substantive change
(grade 1) the record carries **transfer evidence** — object adapters and signed local
certificates — that the transfer checker (``fyan.audit.transfer``) composes into recipes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fyan.audit.formula import Node, Polarity

Relation = Literal[
    "same", "trivial_equivalent", "mutated_equivalent", "mutated_stronger", "mutated_weaker", "mutated", "unaligned"
]

#: Grade contributed by each relation, and what it claims. Directions are about
#: the candidate item read as a condition: "stronger" = the candidate item implies the source item.
RELATIONS: dict[str, tuple[int, str]] = {
    "same": (3, "the items are the same up to renaming bound variables and spelling (checked by code on the texts)"),
    "trivial_equivalent": (2, "equivalent by the named conversions only (closed list below)"),
    "mutated_equivalent": (1, "equivalent, but not by the listed conversions: a real change that needs an argument"),
    "mutated_stronger": (1, "the candidate item implies the source item, not conversely"),
    "mutated_weaker": (1, "the source item implies the candidate item, not conversely"),
    "mutated": (1, "changed with no one-way relation; name the downstream items affected"),
    "unaligned": (0, "the items do not correspond; state the concrete difference"),
}
RELATION_GRADE: dict[str, int] = {k: v[0] for k, v in RELATIONS.items()}

#: The closed list of conversions a ``trivial_equivalent`` row may name. Only those in
#: ``CHECKED_CONVERSIONS`` can give the row its grade 2 (code verifies them); any other is the
#: judge's claim and grades the row 0.
CONVERSIONS: dict[str, str] = {
    "alpha_renaming": "bound variables renamed",
    "conjunct_reordering": "the conjuncts (or disjuncts) of a hypothesis or claim reordered",
    "binder_reordering": "independent binders reordered",
    "currying": "A ∧ B → C written as A → B → C (hypotheses split or joined)",
    "implicit_explicit_binder": "a binder made implicit or explicit",
    "binder_predicate": "∀ x > 0, P written as ∀ x, x > 0 → P (∃ x > 0, P as ∃ x, x > 0 ∧ P)",
    "subtype_as_hypothesis": "a binder over a subtype {x : T // P x} for a binder over T with hypothesis P x",
    "inferred_binder_type": "a binder whose type Lean infers from its use (∀ y, orderOf y = 2 → …: y : G)",
    "quantifier_prenex": "(∃ x, P x) → Q written as ∀ x, P x → Q, with x not free in Q",
    "instance_argument": "a hypothesis given as an instance argument ([N.Normal] for 'N is normal')",
    "notation_unfolding": "Lean notation for the source's words (n ∣ m for 'n divides m')",
    "definition_unfolding": "a checked definition unfolded; name it in `unfolds` (checked: it must be frozen)",
    "defined_term_naming": "the term the source defines is given a Lean name (even → IsEven)",
    "coercion_insertion": "a coercion between number types that preserves the value",
    "eq_symmetry": "a = b written as b = a",
    "iff_symmetry": "A ↔ B written as B ↔ A",
    "inequality_flip": "a < b written as b > a (≤ as ≥)",
    "double_negation": "¬¬A for A (classical)",
    "numeral_representation": "the same number or term written differently (2 * k + 1 vs 1 + 2 * k)",
    "set_builder_membership": "x ∈ {y | P y} for P x",
    "one_point_rule": "∀ b, b = t → P b written as P t (∃ b, b = t ∧ P b as P t): an object defined by an "
                      "equation is substituted (checked: the row holds the object and its defining equation)",
    "decidability_instance": "a Decidable… instance binder that classical logic always provides (checked)",
}
#: Conversions deterministic code verifies on the row's slots (``fyan.audit.validator``
#: ``conversion_problem``): the one-point, decidability and definition conversions are applied
#: to the row (``fyan.audit.conversions``) and what is left must agree; the textual ones are
#: compared on the slot texts. A ``trivial_equivalent`` row that names any other conversion rests on
#: the judge's word: it never raises the grade (graded 0, below every threshold).
CHECKED_CONVERSIONS = frozenset({
    "definition_unfolding", "one_point_rule", "decidability_instance", "defined_term_naming",
    "alpha_renaming", "conjunct_reordering", "implicit_explicit_binder", "eq_symmetry", "iff_symmetry",
    "inequality_flip", "double_negation",
})
#: Conversions that may justify a row with one side empty.
REMOVAL_CONVERSIONS = ("one_point_rule", "decidability_instance")

PLACEHOLDERS = frozenset({
    "todo", "tbd", "n/a", "na", "...", "…", "same", "none", "see above", "as above", "placeholder", "xxx", "tba",
    "argument", "difference", "repair", "explanation", "reason", "-", "?", "null", "nil", "fill in", "obvious",
    "trivial", "clear", "equivalent", "changed", "different", "mutated", "unaligned",
})


class EvidenceRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: list[str] = Field(description="Source slot ids (empty: the candidate items have no source counterpart)")
    candidate: list[str] = Field(description="Candidate slot ids (empty: the source items are omitted)")
    relation: Relation
    conversions: list[str] = Field(default_factory=list, description="trivial_equivalent: from the closed list")
    unfolds: list[str] = Field(default_factory=list, description="definition_unfolding: the definitions unfolded")
    argument: str = Field(default="", description="Why the relation holds; required unless 'same' or 'unaligned'")
    affected: list[str] = Field(default_factory=list, description="mutated: slot ids of the downstream items affected")
    difference: str = Field(default="", description="unaligned and omission rows: the concrete difference")
    repair: str | None = Field(default=None, description="How the Planner should fix a changed item")


class ObjectAdapter(BaseModel):
    """A map between a source object and a candidate object (a witness adapter)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    source: str = Field(description="source object slot id")
    candidate: str = Field(description="candidate object slot id")
    direction: Literal["source_to_candidate", "candidate_to_source", "both"]
    map: str = Field(description="the map, e.g. `fun q => (q : ℚ)`")
    uses: list[str] = Field(default_factory=list, description="slot ids (in scope) or certificate ids it relies on")


class Certificate(BaseModel):
    """A signed local certificate: ``+`` candidate ⇒ source, ``-`` source ⇒ candidate, ``=`` both."""

    model_config = ConfigDict(extra="forbid")

    id: str
    source: list[str] = Field(description="source node or slot ids")
    candidate: list[str] = Field(description="candidate node or slot ids")
    sign: Literal["+", "-", "="]
    argument: str
    uses: list[str] = Field(default_factory=list, description="slot ids (in scope) or certificate ids it relies on")


class TransferEvidence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    adapters: list[ObjectAdapter] = Field(default_factory=list)
    certificates: list[Certificate] = Field(default_factory=list)


class EvidenceRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    root: str = Field(description="The Lean declaration audited (name as written)")
    rows: list[EvidenceRow]
    transfer: TransferEvidence | None = Field(default=None, description="Required when a row records a substantive change")
    summary: str = ""


# -- what code decided -----------------------------------------------------------------------

class ItemGrade(BaseModel):
    """One graded item: a row of the record, or a finding of the transfer checker."""

    row: int | None = Field(description="1-based row number; None for the transfer item")
    source: list[str] = Field(default_factory=list)
    candidate: list[str] = Field(default_factory=list)
    kind: str = Field(description="object | hypothesis | goal | definition | omission | transfer")
    relation: str = Field(description="the relation recorded (omission rows: as computed by code)")
    polarity: Polarity | None = None
    admissible: bool = True
    grade: int
    note: str = ""
    evidence: str = ""


class TransferStep(BaseModel):
    map: Literal["e", "a", "g"] = Field(description="e: object map, a: hypothesis map, g: claim map")
    target: str
    source: list[str] = Field(default_factory=list)
    via: str


class TransferResult(BaseModel):
    ok: bool
    refusals: list[str] = Field(default_factory=list)
    recipes: list[TransferStep] = Field(default_factory=list)


class SlotView(BaseModel):
    """A slot as recorded in the result (for ``fyan audit`` and humans)."""

    id: str
    kind: str
    text: str
    polarity: Polarity
    quote: str | None = None
    findings: list[str] = Field(default_factory=list)


class AuditResult(BaseModel):
    """What code decided about a record (written to ``audit/result.json``).

    ``routing``: ``freeze`` (grade ≥ threshold), ``bridge`` (1 ≤ grade < threshold, policy
    ``bridge``, and the source-facing statement S0 passed its own audit: see ``bridge``),
    ``repair`` (back to the Planner with ``repairs``), ``reject`` (the record is invalid).
    """

    valid: bool
    errors: list[str] = Field(default_factory=list)
    grade: int | None = None
    threshold: int
    items: list[ItemGrade] = Field(default_factory=list)
    routing: Literal["freeze", "bridge", "repair", "reject"]
    repairs: list[str] = Field(default_factory=list)
    root: str | None = None
    transfer: TransferResult | None = None
    inputs: dict[str, str] = Field(default_factory=dict, description="sha256 of what the judge saw")
    bridge: BridgeResult | None = None
    reused_from: str | None = Field(default=None, description="attempt whose valid verdict on the same inputs stands")
    slots: list[SlotView] = Field(default_factory=list, description="source and candidate slots, as cut by code")


class BridgeResult(BaseModel):
    """The bridge obligation of a grade-1 statement: S0 and its own audit."""

    name: str = Field(description="full name of `<root>_faithful`")
    lean: str = Field(description="the declaration of `<root>_faithful : S0` (body `by sorry`)")
    result: AuditResult


AuditResult.model_rebuild()


class SourceExtraction(BaseModel):
    """The source side, extracted by a model from ``problem.tex`` (prompt ``audit_source``)."""

    model_config = ConfigDict(extra="forbid")

    statement: Node
    terms: list[SourceTerm] = Field(default_factory=list)
    notes: str = ""


class SourceTerm(BaseModel):
    """A term the statement defines or uses from the document (``def`` leaves name one)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    quote: str = Field(description="literal quotation of problem.tex where the term appears")
    aliases: list[str] = Field(default_factory=list)
    defined_here: bool = False


SourceExtraction.model_rebuild()


class SourceObjection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node: str = Field(description="node id of the extracted tree, or 'missing'")
    problem: str


class SourceCheck(BaseModel):
    """The independent second call's verdict on the extracted source tree (``audit_source_check``)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["faithful", "unfaithful"]
    objections: list[SourceObjection] = Field(default_factory=list)


class BridgeReply(BaseModel):
    """The judge's source-facing statement S0 for a bridge obligation (``audit_bridge``)."""

    model_config = ConfigDict(extra="forbid")

    lean: str = Field(description="theorem <root>_faithful <binders> : <S0> := by sorry")
