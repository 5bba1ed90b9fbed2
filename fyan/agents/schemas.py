"""Schemas of structured model replies (validated with pydantic; never repaired by regex).

Each stage that needs structure asks for one JSON object of the matching model; a reply that
does not validate gets a bounded number of form repairs (``[agents] form_repairs``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fyan.audit.record import EvidenceRecord
from fyan.refute.models import DomainVariable, RefutationProgram, TargetAssertion

_IDENT = re.compile(r"^[^\W\d][\w'!?₀-₉ₐ-ₜ]*(?:\.[^\W\d][\w'!?₀-₉ₐ-ₜ]*)*$")


def is_lean_ident(name: str) -> bool:
    return bool(_IDENT.match(name))


class LemmaNode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Lean declaration name inside the unit's namespace")
    kind: Literal["theorem", "def", "abbrev", "structure", "inductive", "instance"] = "theorem"
    statement: str = Field(description="Informal statement of this node")
    uses: list[str] = Field(default_factory=list, description="Names of other nodes it depends on")
    cites: list[str] = Field(
        default_factory=list,
        description="Existing declarations (upstream units, Lean core, imported libraries) its proof will use; "
        "checked against the environment before use",
    )

    library: str | None = Field(
        default=None,
        description="For a definition node: the existing library declaration that is the same notion (a document's "
        "\"group\" is Mathlib's `Group`), checked against the environment; omitted when the library has none. A "
        "definition node that names one but does not use it is a redefinition the audit asks to justify",
    )

    @field_validator("name")
    @classmethod
    def _ident(cls, v: str) -> str:
        if not is_lean_ident(v):
            raise ValueError(f"not a Lean identifier: {v!r}")
        return v

    @field_validator("library")
    @classmethod
    def _library_ident(cls, v: str | None) -> str | None:
        if v is not None and not is_lean_ident(v):
            raise ValueError(f"not a Lean identifier: {v!r}")
        return v

    @field_validator("cites")
    @classmethod
    def _idents(cls, v: list[str]) -> list[str]:
        bad = [n for n in v if not is_lean_ident(n)]
        if bad:
            raise ValueError(f"not Lean identifiers: {bad}")
        return v


class LemmaDag(BaseModel):
    """``lemma_dag.json``: the Planner's lemma-level DAG for one unit."""

    model_config = ConfigDict(extra="forbid")

    roots: list[str] = Field(min_length=1, description="Completion roots: the declarations that state the unit")
    nodes: list[LemmaNode] = Field(min_length=1)


class PlanReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lemma_dag: LemmaDag
    blueprint: str = Field(description="Markdown: the plan in words, one section per lemma")
    lean: str = Field(description="Lean declarations of the scaffold (no imports, no namespace)")


class ProveReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan: str = Field(default="", description="What this iteration changes and why (plan step)")
    lean: str = Field(description="All declarations of the unit with proofs (no imports, no namespace)")
    notes: str = ""
    done: bool = Field(default=False, description="The model believes the proof is complete: only a request; the gate decides")


AuditReply = EvidenceRecord


class Objection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: str = Field(description="The step of proof.md objected to (quote or number)")
    severity: Literal["critical", "minor"] = Field(description="critical: the step is false or does not follow")
    objection: str = Field(min_length=1)


class CounterexampleSearch(BaseModel):
    """A counterexample search a review proposes for one assertion of the proof (a step, a
    planned lemma); Fyan runs it confined (``fyan.refute``) — its reply itself decides nothing."""

    model_config = ConfigDict(extra="forbid")

    step: str = Field(min_length=1, max_length=200, description="The step or lemma id the search targets")
    assertion: str = Field(min_length=1, max_length=4000, description="The assertion's statement, as the proof states it")
    language: Literal["python", "lean"]
    predicate: str | None = Field(default=None, description="python: source defining predicate(**values) -> bool, "
                                  "True where the assertion holds")
    domain: list[DomainVariable] = Field(default_factory=list, description="python: the finite inputs to try")
    lean_instance: str | None = Field(default=None, description="lean: the assertion at one small instance, a "
                                      "decidable proposition")

    def program(self) -> RefutationProgram:
        """The program Fyan runs (raises ``ValueError`` when the fields do not fit the language)."""
        return RefutationProgram(language=self.language, target=TargetAssertion(id=self.step, text=self.assertion),
                                 predicate_source=self.predicate, domain=self.domain, lean_instance=self.lean_instance)


class ReasonReview(BaseModel):
    """The Reasoner's review pass: an attempt to refute the steps of ``proof.md``, with
    counterexample searches Fyan runs (``counterexamples``)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["sound", "refuted"]
    objections: list[Objection] = Field(default_factory=list)
    counterexamples: list[CounterexampleSearch] = Field(default_factory=list)

    @property
    def critical(self) -> list[Objection]:
        return [o for o in self.objections if o.severity == "critical"]


class SpecifyGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    statements: list[int] = Field(min_length=2, description="Catalogue indices of statements forming one unit")
    reason: str = Field(min_length=1)


class ProposedEdge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    unit: int = Field(description="Catalogue index of a statement of the dependent unit")
    depends_on: int = Field(description="Catalogue index of a statement of the unit it depends on")
    in_proof: bool = Field(default=True, description="Needed only by the proof (not by the statement)")
    reason: str = Field(min_length=1)


class SpecifyReply(BaseModel):
    """The Specifier's proposal: groups of statements that form one unit (all others stay one
    unit each) and dependency edges beyond the explicit references."""

    model_config = ConfigDict(extra="forbid")

    groups: list[SpecifyGroup] = Field(default_factory=list)
    edges: list[ProposedEdge] = Field(default_factory=list)


class SpecFinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    aspect: Literal["coverage", "hypotheses", "added_assumptions", "conclusions", "provenance", "dependencies", "other"]
    severity: Literal["critical", "minor"]
    detail: str = Field(min_length=1)


class SpecifyCheck(BaseModel):
    """The validation pass: one ``problem.tex`` compared with its source statements."""

    model_config = ConfigDict(extra="forbid")

    findings: list[SpecFinding] = Field(default_factory=list)


class Skill(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Short slug, e.g. parity-case-split")
    title: str = Field(min_length=1)
    when_to_use: str = Field(min_length=1)
    pattern: str = Field(min_length=1, description="Markdown: the proof pattern, with a Lean sketch")
    lemmas: list[str] = Field(default_factory=list, description="Declarations the pattern relies on (must exist)")

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", v):
            raise ValueError(f"skill name must be a lowercase slug ([a-z0-9-], at most 63): {v!r}")
        return v


class CurateReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skills: list[Skill] = Field(default_factory=list)


class ClaimedCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    declarations: int = Field(ge=0)
    sorry: int = Field(ge=0)
    admit: int = Field(ge=0)
    axioms: list[str] = Field(default_factory=list)


class ReviewReply(BaseModel):
    """The Auditor's reply: prose for humans, and the counts it believes (cross-checked)."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1)
    observations: list[str] = Field(default_factory=list)
    counts: ClaimedCounts
