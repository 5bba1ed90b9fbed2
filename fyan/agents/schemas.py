"""Schemas of structured model replies (validated with pydantic; never repaired by regex).

Each stage that needs structure asks for one JSON object of the matching model; a reply that
does not validate gets a bounded number of form repairs (``[agents] form_repairs``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fyan.audit.record import EvidenceRecord
from fyan.models.replies import LemmaDag
from fyan.replan.verdict import Verdict
from fyan.refute.models import DomainVariable, RefutationProgram, TargetAssertion


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
    verdict: Verdict | None = Field(default=None, description="A request for a re-plan (fyan.replan): a planned lemma "
                                    "refuted, or a step too hard; only a request, checked by Fyan")


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
