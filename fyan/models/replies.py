"""Model replies that checks read as well as agents: the Planner's lemma DAG (read by the audit
and the gates), the Curator's skills and the Auditor's review (read by the post-task checks).

They are declared here, below both, so a deterministic check can validate a reply without
importing the agents' package; the agents' other reply schemas stay in ``fyan.agents.schemas``.
Validated with pydantic, never repaired by regex.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
