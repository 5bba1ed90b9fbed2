"""The statement catalogue: what intake found in a document, with provenance.

A ``Catalogue`` lists every theorem-like environment (``Statement``) in document order, every
``\\label`` with where it is defined (``LabelSite``), and the references made from inside
statements and their proofs (``Reference``). Line numbers are 1-based and inclusive; file
paths are relative to the catalogue's ``source_root`` with forward slashes.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

# Canonical statement kinds, keyed by the environment names and display names documents use.
KIND_ALIASES: dict[str, str] = {
    "theorem": "theorem", "thm": "theorem", "thrm": "theorem", "mainthm": "theorem",
    "maintheorem": "theorem",
    "lemma": "lemma", "lem": "lemma", "lma": "lemma", "sublemma": "lemma",
    "proposition": "proposition", "prop": "proposition", "pro": "proposition",
    "corollary": "corollary", "cor": "corollary", "coro": "corollary",
    "definition": "definition", "defn": "definition", "def": "definition", "dfn": "definition",
    "defi": "definition",
    "claim": "claim", "clm": "claim",
    "conjecture": "conjecture", "conj": "conjecture",
    "remark": "remark", "rem": "remark", "rmk": "remark",
    "example": "example", "ex": "example", "exa": "example",
    "problem": "problem", "prob": "problem", "exercise": "exercise", "exer": "exercise",
    "question": "question", "notation": "notation", "fact": "fact", "observation": "observation",
    "assumption": "assumption", "hypothesis": "hypothesis", "axiom": "axiom", "principle":
    "principle", "construction": "construction",
}


class Provenance(BaseModel):
    """Where a piece of text comes from: ``file`` lines ``line_start``..``line_end``."""

    file: str
    line_start: int
    line_end: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line_start}-{self.line_end}"


class Reference(BaseModel):
    """A reference made from inside a statement (``in_proof`` False) or its proof."""

    label: str
    macro: str = Field(description="ref, cref, Cref, eqref, autoref, uses, proves, ...")
    file: str
    line: int
    in_proof: bool = False


class ProofBlock(BaseModel):
    body: str = Field(description="Verbatim TeX of the proof environment.")
    provenance: Provenance
    leanok: bool = False


class Statement(BaseModel):
    """One theorem-like environment of the document."""

    index: int = Field(description="Position in document order, from 0.")
    kind: str = Field(description="Canonical kind: theorem, lemma, definition, problem, ...")
    env: str = Field(description="Environment name as written in the source.")
    label: str | None = Field(default=None, description="The first \\label inside, if any.")
    labels: list[str] = Field(
        default_factory=list,
        description="All labels placed inside the statement or its proof (items, equations).",
    )
    title: str | None = Field(default=None, description="Optional argument, e.g. a theorem's name.")
    body: str = Field(description="Verbatim TeX from \\begin to \\end.")
    provenance: Provenance
    proof: ProofBlock | None = None
    references: list[Reference] = Field(default_factory=list)
    lean_names: list[str] = Field(default_factory=list, description="Names given by \\lean{...}.")
    leanok: bool = False
    mathlibok: bool = False
    defined_terms: list[str] = Field(
        default_factory=list, description="Bold/emphasised terms of a definition."
    )

    @property
    def display(self) -> str:
        """Short human name: the label when there is one, else kind and index."""
        return self.label or f"{self.kind} #{self.index + 1}"


class LabelSite(BaseModel):
    """Where a ``\\label`` is defined, and the statement that owns it (None: outside any)."""

    label: str
    file: str
    line: int
    statement_index: int | None = None


class Catalogue(BaseModel):
    """Everything intake read from one document."""

    source_root: str = Field(description="Folder that provenance paths are relative to.")
    main_file: str
    files: list[str] = Field(default_factory=list, description="Files read, in reading order.")
    statements: list[Statement] = Field(default_factory=list)
    labels: dict[str, LabelSite] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)

    def by_label(self, label: str) -> Statement | None:
        site = self.labels.get(label)
        if site is None or site.statement_index is None:
            return None
        return self.statements[site.statement_index]
