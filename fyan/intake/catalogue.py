"""The statement catalogue: what intake found in a document, with provenance.

A ``Catalogue`` lists every theorem-like statement (``Statement``) in document order, every
label with where it is defined (``LabelSite``), and the references made from inside
statements and their proofs (``Reference``). The three readers (TeX, PDF, Markdown) all
produce this one model, so the Specifier never needs to know the source format.

Provenance (``Provenance``): file paths are relative to the catalogue's ``source_root`` with
forward slashes; line numbers are 1-based and inclusive. For a PDF, ``page_start``/``page_end``
are 1-based physical page numbers, the lines are lines of those pages' text layer, and
``char_start``/``char_end`` are character offsets (end exclusive) into the text of
``page_start`` and ``page_end`` respectively, as extracted by pypdf and NFKC-normalised (the
page texts ``fyan.intake.pdf`` reads before finding statements). Labels of PDF and Markdown statements are their
printed names (``"Theorem 2.3"``) unless the source gives an explicit anchor.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from fyan.intake.texscan import tex_text

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
    """Where a piece of text comes from: ``file`` lines ``line_start``..``line_end`` (and, for a
    PDF, pages ``page_start``..``page_end`` with character offsets; see the module docstring)."""

    file: str
    line_start: int
    line_end: int
    page_start: int | None = None
    page_end: int | None = None
    char_start: int | None = None
    char_end: int | None = None

    def __str__(self) -> str:
        if self.page_start is not None:
            pages = f"p{self.page_start}" + (f"-{self.page_end}" if self.page_end != self.page_start else "")
            return f"{self.file}:{pages}"
        return f"{self.file}:{self.line_start}-{self.line_end}"

    def describe(self) -> str:
        """Long human form, e.g. ``doc.tex, lines 3-9`` or ``doc.pdf, page 3, characters 120-560``."""
        if self.page_start is None:
            return f"{self.file}, lines {self.line_start}-{self.line_end}"
        if self.page_end == self.page_start:
            return f"{self.file}, page {self.page_start}, characters {self.char_start}-{self.char_end}"
        return (f"{self.file}, pages {self.page_start}-{self.page_end}, characters {self.char_start} "
                f"(page {self.page_start}) to {self.char_end} (page {self.page_end})")


class IntakeWarning(BaseModel):
    """Something intake read but doubts, or left out: ``where`` (``file:line`` or
    ``file: page N``), ``message``, and ``code``, the family it belongs to (warnings are grouped
    by it when printed):

    ``malformed-math`` and ``malformed-environment`` (tolerant mode), ``nested-statement``, ``unknown-label`` (in warn mode),
    ``generated-input`` (a missing ``.aux``/``.out``/... file), ``missing-include``, ``encoding``,
    ``proof`` (a proof with no statement, a second proof), ``context`` (cited material that could
    not be carried into ``problem.tex``), ``mention`` (a reference kept as a mention because it
    would close a cycle), ``cycle`` (a cycle broken by ``cycles = "break"``), ``pdf-extent`` (a
    PDF statement whose end is uncertain), ``printed-reference`` (a printed reference matching
    no statement), ``printed-twice``, ``pdf``, ``read-as`` (a main file whose suffix names no
    format, read as TeX: ``fyan.intake.read_as``), ``leanarchitect`` (a LeanArchitect node or module
the generated files do not define), ``leanarchitect-stale`` (generated TeX and JSON disagree)."""

    code: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


#: What each warning code means, as a group heading.
WARNING_GROUPS: dict[str, str] = {
    "read-as": "how a file whose name does not say its format is read",
    "malformed-math": "malformed math, read up to each statement's own \\end (tolerant mode)",
    "malformed-environment": "malformed environments, read anyway: a statement never closed ends at the next "
    "statement or proof (tolerant mode)",
    "nested-statement": "theorem-like environments inside another statement, outside a proof",
    "unknown-label": "references to labels defined nowhere in the document (no edge)",
    "duplicate-label": "labels defined twice (a reference resolves to the last, as in LaTeX)",
    "read-as-reference": "macros intake does not know, read as references (their argument is a label)",
    "generated-input": "missing files that LaTeX writes during its own run (skipped)",
    "missing-include": "missing \\include files (skipped, as LaTeX does)",
    "encoding": "files that are not UTF-8",
    "proof": "proofs that could not be attached",
    "context": "cited material not carried into problem.tex",
    "mention": "references kept as mentions because they would close a cycle",
    "cycle": "dependency cycles broken at their weakest edge",
    "pdf-extent": "PDF statements whose end is uncertain (check the page)",
    "printed-reference": "printed references that match no statement",
    "printed-twice": "statement numbers printed twice",
    "pdf": "PDF reading",
    "leanarchitect": "\\inputleannode/\\inputleanmodule of names the generated files do not define (LaTeX prints nothing)",
    "leanarchitect-stale": "LeanArchitect nodes whose generated TeX disagrees with the JSON (the JSON is read)",
}


def format_warnings(warnings: list[IntakeWarning], group_from: int = 6) -> str:
    """Every warning, one per line; grouped under a heading per code (``WARNING_GROUPS``) when
    there are ``group_from`` or more. '' for none."""
    if not warnings:
        return ""
    if len(warnings) < group_from:
        return "".join(f"warning: {w}\n" for w in warnings)
    groups: dict[str, list[IntakeWarning]] = {}
    for w in warnings:
        groups.setdefault(w.code, []).append(w)
    out = [f"{len(warnings)} warnings:\n"]
    for code, items in groups.items():
        out.append(f"  {code} ({len(items)}): {WARNING_GROUPS.get(code, code)}\n")
        out.extend(f"    {w}\n" for w in items)
    return "".join(out)


class Reference(BaseModel):
    """A reference made from inside a statement (``in_proof`` False) or its proof."""

    label: str
    macro: str = Field(
        description="ref, cref, Cref, eqref, autoref, uses, a reference macro defined in the preamble "
        "(thmref, ...), 'text' for a printed reference ('by Lemma 2.1') or 'link' (Markdown)"
    )
    file: str
    line: int
    page: int | None = Field(default=None, description="PDF page of the reference (``line`` is on it).")
    in_proof: bool = False
    closing: bool = Field(
        default=False, description="In the closing sentence of a proof ('This proves Lemma 2, hence Theorem 1.')."
    )

    @property
    def where(self) -> str:
        return f"{self.file}:p{self.page}" if self.page is not None else f"{self.file}:{self.line}"

    @property
    def shown(self) -> str:
        """The reference as the source writes it: ``\\ref{x}``, ``](#x)``, ``'Lemma 2.1'``."""
        if self.macro == "link":
            return f"](#{self.label})"
        if self.macro == "text":
            return f"'{self.label}'"
        return f"\\{self.macro}{{{self.label}}}"


class LeanPosition(BaseModel):
    """Where a Lean declaration of a LeanArchitect node is (``fyan.intake.leanarchitect``): its
    ``name``, ``module``, source ``file`` as the generated files give it, and its line range
    (1-based, inclusive); ``origin``: the generated file (``file:line``) this was read from."""

    name: str
    module: str | None = None
    file: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    origin: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line_start}-{self.line_end}" if self.file and self.line_start else "no position"
        return f"{self.name} ({where})"


class ProofBlock(BaseModel):
    body: str = Field(description="Verbatim TeX of the proof environment.")
    provenance: Provenance
    leanok: bool = False
    proves: str | None = Field(default=None, description="Label named by \\proves{...} in the proof, if any.")


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
    number: str | None = Field(default=None, description="Printed number (PDF, Markdown), e.g. '2.3'.")
    parent: int | None = Field(
        default=None,
        description="Index of the statement whose statement or proof this one is nested in "
        "(a claim inside a proof), if any.",
    )
    in_parent_proof: bool = Field(default=False, description="Nested in the parent's proof (not its statement).")
    body: str = Field(description="Verbatim TeX from \\begin to \\end.")
    provenance: Provenance
    proof: ProofBlock | None = None
    references: list[Reference] = Field(default_factory=list)
    lean_names: list[str] = Field(default_factory=list, description="Names given by \\lean{...}.")
    lean_positions: list[LeanPosition] = Field(
        default_factory=list,
        description="A LeanArchitect node's Lean declarations with their positions, besides the TeX provenance "
        "(from the generated TeX's `% at` comment, or from the JSON facet's output when present).")
    lean_node: str | None = Field(default=None, description="The LeanArchitect node label it was expanded from "
                                  "(\\inputleannode, \\inputleanmodule), if any.")
    leanok: bool = False
    mathlibok: bool = False
    section: list[str] = Field(
        default_factory=list,
        description="The document's headings the statement stands under, outermost first (part, chapter, "
        "section, ...), as plain text (``section_title``); empty before the first heading.",
    )
    defined_terms: list[str] = Field(
        default_factory=list,
        description="Terms a definition sets in definition markup (bold, italic, emphasis), folded "
        "(``fyan.intake.texscan.fold_text``); lower case, except names (a capitalised term inside a "
        "sentence, like a category's name ``Sets``), which keep their case and match only with it.",
    )

    @property
    def display(self) -> str:
        """Short human name: the label when there is one, else kind and index."""
        return self.label or f"{self.kind} #{self.index + 1}"


class Display(BaseModel):
    """A labelled displayed formula (``equation``, ``align``, ...): its verbatim text, where it
    is, and the statement whose statement or proof holds it (None: running text)."""

    labels: list[str]
    env: str
    body: str
    provenance: Provenance
    statement_index: int | None = None
    in_proof: bool = False


class LabelSite(BaseModel):
    """Where a ``\\label`` is defined, and the statement that owns it (None: outside any).

    ``in_proof``: the label is inside that statement's proof; ``display``: index into
    ``Catalogue.displays`` when the label is on a displayed formula; ``section``: the label
    follows a sectioning command (``\\section``, ``\\chapter``, ...); ``env``: the innermost
    environment around it below its statement (``figure``, ``enumerate``, ``align``, ...)."""

    label: str
    file: str
    line: int
    statement_index: int | None = None
    in_proof: bool = False
    display: int | None = None
    section: bool = False
    env: str | None = Field(default=None, description="Innermost environment around the label (below its statement).")


class Catalogue(BaseModel):
    """Everything intake read from one document."""

    source_root: str = Field(description="Folder that provenance paths are relative to.")
    format: Literal["tex", "pdf", "markdown"] = "tex"
    main_file: str
    files: list[str] = Field(default_factory=list, description="Files read, in reading order.")
    statements: list[Statement] = Field(default_factory=list)
    labels: dict[str, LabelSite] = Field(default_factory=dict)
    warnings: list[IntakeWarning] = Field(default_factory=list)
    displays: list[Display] = Field(default_factory=list, description="Labelled displayed formulas.")
    macros: list[str] = Field(
        default_factory=list,
        description="Macro definitions of the document (\\newcommand, \\DeclareMathOperator, ...), verbatim "
        "in reading order; the blueprint export repeats them so the statements render.",
    )
    theorem_envs: dict[str, str] = Field(
        default_factory=dict, description="Theorem-like environments the document declares: name -> kind."
    )
    unclassified_envs: dict[str, int] = Field(
        default_factory=dict,
        description="Environments used in the document body that intake did not classify (neither a statement, "
        "a proof, a display, a list nor layout): name -> count, most used first.")
    layout_envs: dict[str, int] = Field(
        default_factory=dict, description="Layout environments used (center, figure, tabular, ...): name -> count.")
    empty_labels: list[str] = Field(default_factory=list, description="Every empty \\label{} (file:line).")
    empty_references: list[str] = Field(default_factory=list,
                                        description="Every empty reference, e.g. \\ref{} (file:line and macro).")
    unfollowed_includes: list[str] = Field(
        default_factory=list,
        description="Every file the document includes that intake could not find (an \\include LaTeX skips too) "
        "or did not follow (a path built by a macro intake does not expand): 'file:line \\macro{...}: why'.")
    duplicate_labels: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Labels defined more than once -> every place (``file:line``), in reading order; ``labels`` "
        "holds the last, which LaTeX resolves a reference to.")

    @property
    def has_uses(self) -> bool:
        """Does the document declare dependencies with ``\\uses`` (a leanblueprint)?"""
        return any(r.macro == "uses" for s in self.statements for r in s.references)

    def by_label(self, label: str) -> Statement | None:
        site = self.labels.get(label)
        if site is None or site.statement_index is None:
            return None
        return self.statements[site.statement_index]


#: The TeX sectioning commands, outermost first (a level is the index).
SECTION_LEVELS = ("part", "chapter", "section", "subsection", "subsubsection", "paragraph", "subparagraph")


def section_title(tex: str) -> str:
    """A heading's title as plain text (pylatexenc; math kept as written), spaces collapsed:
    ``The \\texorpdfstring{$m$}{m}-torsion case`` gives ``The m-torsion case``."""
    from pylatexenc.latex2text import LatexNodes2Text

    try:
        text = LatexNodes2Text(math_mode="verbatim").latex_to_text(tex_text(tex))
    except Exception:  # pylatexenc gives up on some malformed input: the source as written
        text = tex_text(tex)
    return " ".join(text.split()) or "(untitled)"


class HeadingStack:
    """The headings open at a point of a document: ``enter(level, title)`` closes every heading
    at ``level`` or deeper and opens the new one; ``path`` is what a statement there stands
    under, outermost first."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str]] = []

    def enter(self, level: int, title: str) -> None:
        self.leave(level)
        self._open.append((level, title))

    def leave(self, level: int) -> None:
        """Close the heading at ``level`` and every deeper one (``\\end{section}``)."""
        while self._open and self._open[-1][0] >= level:
            self._open.pop()

    @property
    def path(self) -> list[str]:
        return [t for _, t in self._open]
