"""The verdict a prove attempt may end with (``verdict.json`` in the attempt folder), and the
negation of a planned lemma as Fyan renders it.

The verdict is a request, like the model's ``done``: it is worth something only once
``fyan.replan.check`` has checked its evidence. The negation is rendered by Fyan from the
planned lemma's declaration in the unit's published ``Statement.lean`` (binders and type, read by
``fyan.lean.declarations``), so what is compiled is the negation of the lemma the plan states,
never a statement the model chose.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fyan.lean import declarations

#: the file a prove attempt leaves (the agent writes it from the model's reply; a command agent
#: leaves it in the unit workspace, from where the agent code copies it)
VERDICT_FILE = "verdict.json"
#: where the checked verdict, the refused one and the kept helper lemmas are published
#: (``units/<unit>/replan/``), as derived files of the prove check
ACCEPTED = "replan/verdict.json"
REFUSED = "replan/refused.json"
HELPERS = "replan/helpers.lean"
#: the name of the refutation theorem, after the planned lemma's name
REFUTED_SUFFIX = "_refuted"


class Verdict(BaseModel):
    """The Formalizer's verdict on a planned lemma.

    * ``lemma_false`` — ``lemma`` is false; evidence: ``negation_proof`` (a Lean proof of the
      negation Fyan renders, ``negation_statement``: optional, the negation as the model wrote it,
      compared with Fyan's rendering) or ``counterexample`` (a program whose run exhibits the
      counterexample, run by the refutation runner);
    * ``step_too_hard`` — ``lemma`` could not be proved; ``tried``: what was tried.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["lemma_false", "step_too_hard"]
    lemma: str = Field(min_length=1, description="a node of the unit's lemma DAG, by its name there")
    negation_statement: str = Field(default="", description="lemma_false: ¬ (∀ binders, type) as the model states it")
    negation_proof: str = Field(default="", description="lemma_false: the proof of the negation (a term or `by ...`)")
    counterexample: dict[str, Any] | None = Field(
        default=None, description="lemma_false: a counterexample search for the refutation runner (fyan.refute): "
        "`predicate_source` defining predicate(**values) -> bool (True: the lemma holds there) and a finite `domain`; "
        "Fyan sets its target, the lemma as the plan states it")
    tried: str = Field(default="", description="step_too_hard: what was tried and where it got stuck")
    explanation: str = ""

    @model_validator(mode="after")
    def _evidence(self) -> Verdict:
        if self.kind == "lemma_false" and not (self.negation_proof.strip() or self.counterexample):
            raise ValueError("a lemma_false verdict needs evidence: negation_proof or counterexample")
        if self.kind == "step_too_hard" and len(self.tried.strip()) < 20:
            raise ValueError("a step_too_hard verdict says what was tried (`tried`, a few sentences)")
        return self


def proposition(decl: declarations.Declaration) -> str:
    """The proposition a theorem declaration states, closed over its binders: ``∀ binders,
    type`` (``type`` without binders), normalized. Lean's ``∀`` takes the same bracketed binders
    as a declaration header (docs/lean-contract.md, "Re-plans"). Raises ``ValueError`` for a
    declaration without a type."""
    binders, claim = decl.binders_text, decl.type_text
    if not claim:
        raise ValueError(f"{decl.name} has no stated type")
    return f"∀ {binders}, {claim}" if binders else claim


def negation(decl: declarations.Declaration) -> str:
    """``¬ (∀ binders, type)`` of a theorem declaration (``¬ (type)`` without binders)."""
    return f"¬ ({proposition(decl)})"


def refutation_theorem(decl: declarations.Declaration, proof: str) -> str:
    """The refutation Fyan compiles: ``theorem <lemma>_refuted : <negation> := <proof>``."""
    body = proof.strip()
    if body.startswith(":="):
        body = body[2:].strip()
    return f"theorem {decl.name}{REFUTED_SUFFIX} : {negation(decl)} :=\n  {body}"
