"""Schemas of structured model replies (validated with pydantic; never repaired by regex).

Each stage that needs structure asks for one JSON object of the matching model; a reply that
does not validate gets a bounded number of form repairs (``[agents] form_repairs``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fyan.audit.record import EvidenceRecord

_IDENT = re.compile(r"^[^\W\d][\w'!?₀-₉ₐ-ₜ]*(?:\.[^\W\d][\w'!?₀-₉ₐ-ₜ]*)*$")


def is_lean_ident(name: str) -> bool:
    return bool(_IDENT.match(name))


class LemmaNode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Lean declaration name inside the unit's namespace")
    kind: Literal["theorem", "def", "abbrev", "structure", "inductive", "instance"] = "theorem"
    statement: str = Field(description="Informal statement of this node")
    uses: list[str] = Field(default_factory=list, description="Names of other nodes it depends on")

    @field_validator("name")
    @classmethod
    def _ident(cls, v: str) -> str:
        if not is_lean_ident(v):
            raise ValueError(f"not a Lean identifier: {v!r}")
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

    lean: str = Field(description="All declarations of the unit with proofs (no imports, no namespace)")
    notes: str = ""


AuditReply = EvidenceRecord
