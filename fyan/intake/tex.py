"""TeX intake: theorem-like environments, labels, references and blueprint macros.

Each file is read in one linear pass over its text (``fyan.intake.texscan``): no parse tree is
built, so nothing depends on how ``$`` or braces pair up outside the statement they are in, and
no input size reaches a recursion limit. What it understands:

* theorem-like environments: the common names (``theorem``, ``thm``, ``lemma``, ``defn``, ...,
  see ``KIND_ALIASES``), every environment declared with ``\\newtheorem`` (starred or not, with
  shared counters), ``\\declaretheorem`` or ``\\newmdtheoremenv``, directly or through the
  document's own macros (``\\def\\thm#1#2{\\newtheorem{#1}{#2}}`` then ``\\thm{example}{Example}``:
  a bounded expander, ``_expand_declarations``), and environments a document
  defines around them (``\\newenvironment{mainthm}{\\begin{theorem}}{\\end{theorem}}`` is a
  theorem, one around ``proof`` is a proof); the kind comes from the declared display name;
* what is not content: the preamble (before ``\\begin{document}``) and the bodies of
  ``\\newcommand``, ``\\def``, ``\\newenvironment``, ... are never statements; ``%`` comments,
  verbatim-like environments, ``comment`` and the comment-like environments a document declares
  (``\\excludecomment``), and switched-off blocks (``\\iffalse``, ``\\if{false}``, ``\\if0``,
  ``\\ifnum0=1``, a ``\\newif`` switch left false; their ``\\else`` branch is read) are skipped;
* ``\\input``, ``\\include``, ``\\include*`` and ``\\subfile`` (a subfile's own preamble read like
  the main one), resolved relative to the main file's folder like LaTeX does, with or without
  the ``.tex`` suffix, reaching above it (``../../.lake/…``) when the document does but never
  outside the Lake package holding the main file (``boundary``; refused by name), an absolute
  path below ``[intake] source_origin`` read from the project's copy (``origin``);
  LeanArchitect's generated files (``\\newleannode``, ``\\newleanmodule``) and their use,
  ``\\inputleannode`` and ``\\inputleanmodule`` (``fyan.intake.leanarchitect``), a missing
  generated file stopping intake with the Lake command that writes it; the import package's ``\\import``, ``\\subimport``, ``\\inputfrom``,
  ``\\includefrom``, ``\\subinputfrom``, ``\\subincludefrom`` (a file read through one resolves its
  own ``\\input`` from its folder first); the document's own package and class files
  (``\\usepackage{mymacros}`` with a ``mymacros.sty`` beside the main file: read like the
  preamble); the document's own macros that expand to an include or a ``\\label``
  (``\\newcommand{\\chap}[1]{\\input{chapters/#1}}``, ``\\DeclareDocumentCommand{\\ollabel}{m}
  {\\label{ol:#1}}``, through one another, with argument-free path macros expanded). A missing
  ``\\include``-like file is a warning (LaTeX itself only warns), so is a missing file LaTeX
  writes during its own run (``.aux``, ``.out``, ``.toc``, ``.bbl``, ``.ind``, ...); a missing
  ``\\input``/``\\subfile``/``\\import`` is an error naming the command; an included file not
  found or not followed (a path built by a macro that is not the document's) is listed
  (``Catalogue.unfollowed_includes``) for the intake report and the refusals it may explain;
* every argument of a source macro (``\\label``, ``\\lean``, ``\\uses``, a statement's title, a
  file name) read as TeX reads it before it is used (``texscan.tex_text``: a ``%`` comment eats
  its line end, line breaks are spaces);
* macro and environment definitions read the same wherever they live (preamble, ``\\input``
  file, body), with ``%`` comments and line breaks between their arguments as TeX reads them; a
  definition alone on a line inside ``\\[...\\]`` is no paragraph break;
* environments used in the body but not classified, with counts (``Catalogue.unclassified_envs``;
  layout environments apart, ``LAYOUT_ENVS``), and every empty ``\\label{}`` and ``\\ref{}``;
* ``\\label`` anywhere, normalised as LaTeX reads it (a line break and the spaces around it are
  one space): labels inside a statement or its proof belong to that statement; a label on a
  displayed formula (``equation``, ``align``, ...) also records the display (``Catalogue.displays``)
  so a statement citing it can carry it as context; a label after ``\\section`` is a section's;
* references: every form of hyperref, cleveref, varioref, nameref and zref (``\\ref``, ``\\eqref``,
  ``\\autoref``, ``\\Autoref``, ``\\cref``, ``\\Cref``, ``\\cpageref``, ``\\namecref``,
  ``\\labelcref``, ``\\crefrange``, ``\\vref``, ``\\vpageref``, ``\\nameref``, ``\\hyperref[l]{text}``,
  ``\\zcref``, starred forms, see ``REFERENCE_FORMS``; cleveref's, zref's and ``\\uses`` take comma
  lists), reference macros the document defines itself (any macro whose body passes an
  argument to one of them, with a prefix or suffix: ``\\ref{prop:#1}``), any other macro whose
  brace argument is a label of the document (``\\propref{x}`` from a style file that is not
  there: read as a reference, reported once per macro, ``read-as-reference``), and the
  blueprint macros ``\\uses``, ``\\lean``, ``\\leanok``,
  ``\\mathlibok``; ``\\uses`` in a statement and in its proof are kept apart
  (``Reference.in_proof``), and a reference in a proof's closing sentence is marked
  (``Reference.closing``);
* a ``proof`` environment belongs to the statement named by its ``\\proves{x}``, else to the
  statement its optional argument references (``\\begin{proof}[Proof of \\cref{x}]``), else to
  the statement before it;
* a theorem-like environment nested in another statement's proof (a claim) is its own statement
  with ``parent`` set; nested in the statement itself (outside a proof) it is too, with a
  warning;
* defined terms of a definition (``Statement.defined_terms``): what it sets in definition
  markup, ``\\emph``, ``\\textit``, ``\\textbf``, ``\\textsl``, ``{\\it ...}``, ``{\\em ...}``,
  ``{\\bf ...}``, ``\\defn``/``\\term``/``\\keyword``, and the document's own macros around them
  (``\\newcommand{\\vocab}[1]{\\textbf{#1}}``);
* malformed math in a statement or its proof (unbalanced ``$``, ``$$``, ``\\(``/``\\)``,
  ``\\[``/``\\]``, braces; ``texscan.math_faults``): an error naming every fault with its file and
  line, or with ``tolerant=True`` a warning each (the statement still ends at its own ``\\end``);
* malformed environments (``\\begin{proof}`` closed by ``\\end{definition}``, a ``proof`` never
  closed, an ``\\end`` closing nothing; ``texscan.recover_environments``): an error naming every
  fault with its file and line, or with ``tolerant=True`` a warning each, the structure read
  anyway: a misnamed ``\\end`` closes the innermost open environment, and one never closed ends
  at the next statement, proof or section;
* a file without theorem-like environments is read for plain-text statement headings
  (``Lemma (coeff_zero_of_lt)``, ``Theorem 2.1``, ``\\textbf{Lemma 3.}``, then ``Proof.``), by the
  rules of ``fyan.intake.plaintext`` (the Markdown reader's).

Errors (``InputError``, always naming file and line): unreadable or binary file, a file with no
TeX in it, unbalanced ``\\begin``/``\\end`` (unless tolerant), a missing ``\\input`` file (the
hint names the folder where it exists, if any), an ``\\input`` loop, a file over the size
limit, malformed math (unless tolerant). Non-UTF-8 files are read as Latin-1 with a warning. A
label defined twice is a warning naming both places (``duplicate-label``; LaTeX warns too, and
resolves a reference to the last definition, as ``labels`` does; ``Catalogue.duplicate_labels``).

The seam for a reader of another format with LaTeX in it (the Markdown reader): build a
``TexSource`` of the file, ``TexStatementReader.prepare`` it (with the other format's own
non-content, code blocks, blanked), pair its environments once with ``environments``, then read
each region in document order with ``read_region`` (statement environments and the text between
them) or ``read_within`` (a statement the other reader delimited: its labels and references).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from fyan.errors import InputError
from fyan.intake.catalogue import (
    KIND_ALIASES,
    SECTION_LEVELS,
    Catalogue,
    HeadingStack,
    Display,
    IntakeWarning,
    LabelSite,
    LeanPosition,
    ProofBlock,
    Provenance,
    Reference,
    Statement,
    section_title,
)
from fyan.intake.leanarchitect import (
    GeneratedFilesMissing,
    JsonNode,
    ModuleJson,
    apply_json,
    generated_package,
    lake_package_of,
    read_module_json,
    tex_position,
)
from fyan.intake.plaintext import Block, BlockReader, paragraph_blocks
from fyan.intake.texscan import (
    DISPLAY_MATH_ENVS,
    TEXT_MACROS,
    Definition,
    EnvSpan,
    Fault,
    Hider,
    blank_code,
    blank_spans,
    definitions,
    fold_case_kept,
    group_end,
    line_of,
    line_starts,
    math_faults,
    normalize_label,
    paused_gc,
    read_args,
    recover_environments,
    strip_comment,
    tex_text,
)

#: Reference macros: name -> (argument spec for ``read_args``, indices of the label arguments,
#: whether a label argument is a comma list). Sources: the hyperref, cleveref, varioref, nameref
#: and zref-clever manuals; leanblueprint for ``\\uses``.
REFERENCE_FORMS: dict[str, tuple[str, tuple[int, ...], bool]] = {
    **{name: ("*{", (1,), False) for name in (
        "ref", "Ref", "pageref", "eqref", "autoref", "Autoref", "autopageref", "nameref", "Nameref", "vref", "Vref",
        "fullref", "subref")},
    **{name: ("*{", (1,), True) for name in ("cref", "Cref", "cpageref", "Cpageref")},
    **{name: ("{", (0,), True) for name in ("labelcref", "labelcpageref", "uses")},
    **{name: ("{", (0,), False) for name in ("namecref", "nameCref", "lcnamecref", "namecrefs", "nameCrefs",
                                             "lcnamecrefs")},
    **{name: ("*{{", (1, 2), False) for name in ("crefrange", "Crefrange", "cpagerefrange", "Cpagerefrange")},
    "vpageref": ("*[[{", (3,), False),
    "vrefrange": ("*[{{", (2, 3), False),
    "vpagerefrange": ("*[{{", (2, 3), False),
    "hyperref": ("[", (0,), False),
    "zcref": ("*[{", (2,), True),
    "zcpageref": ("*[{", (2,), True),
    "zref": ("[{", (1,), False),
}
#: Names of the reference macros whose labels are brace arguments (for rewriting them).
REFERENCE_MACROS = frozenset(name for name, (spec, idx, _) in REFERENCE_FORMS.items() if spec[idx[0]] == "{")
#: Blueprint macros; a document's own (re)definition of them is not a reference wrapper.
BLUEPRINT_MACROS = frozenset({"uses", "proves", "lean", "leanok", "mathlibok", "notready", "discussion"})
INCLUDE_MACROS = frozenset({"input", "include", "subfile"})
#: The ``import`` package's include commands: name -> whether the folder argument is relative
#: to the folder of the file being read (``\\subimport``) rather than the main file's
#: (``\\import``); each takes ``*{folder}{file}``. Source: the import package's manual.
IMPORT_MACROS = {"import": False, "inputfrom": False, "includefrom": False,
                 "subimport": True, "subinputfrom": True, "subincludefrom": True}
#: Include commands whose missing file LaTeX only warns about (the rest stop LaTeX).
SKIPPABLE_INCLUDES = frozenset({"include", "includefrom", "subincludefrom"})
#: Commands that load a package or a class: a local ``.sty``/``.cls`` file of the document is
#: read like its preamble (its definitions and theorem declarations).
PACKAGE_MACROS = {"usepackage": ".sty", "RequirePackage": ".sty", "documentclass": ".cls", "LoadClass": ".cls"}
PROOF_ENVS = frozenset({"proof", "proof*"})
#: Definition markup: macros whose argument is a term a definition defines.
TERM_MACROS = frozenset({"textbf", "emph", "textit", "textsl", "defn", "term", "keyword", "dfn", "defterm"})
#: Font switches that make a group a term: ``{\\it term}``.
TERM_SWITCHES = frozenset({"it", "em", "bf", "sl", "itshape", "bfseries", "slshape"})
LIST_ENVS = frozenset({"enumerate", "itemize", "description", "enumerate*", "itemize*", "inparaenum", "compactenum"})
SECTION_MACROS = frozenset({"part", "chapter", "section", "subsection", "subsubsection", "paragraph", "subparagraph"})
#: Files LaTeX (or BibTeX, makeindex) writes during its own run: missing ones are a warning.
GENERATED_SUFFIXES = frozenset({".aux", ".out", ".toc", ".bbl", ".ind", ".lof", ".lot", ".glo", ".gls", ".nls",
                                ".idx", ".nav", ".snm", ".vrb", ".thm", ".loa", ".brf", ".acr", ".ist", ".xdy"})
#: Words that are never terms on their own (a single emphasised function word is emphasis).
FUNCTION_WORDS = frozenset(
    "a an and any are as at be but by each every for from has have if iff in into is it its no non nor not of "
    "on one only or some such than that the then there these this those to two we with without all both either "
    "neither also can may must will shall does do is was were been being".split())

#: Environments of LaTeX, its standard packages and common classes that are layout, not
#: statements: used but not classified, they are counted apart from the unclassified ones that
#: the intake report lists (an environment there may be a statement intake did not recognise).
LAYOUT_ENVS = frozenset(
    "document center flushleft flushright figure figure* table table* tabular tabular* tabularx longtable array "
    "matrix pmatrix bmatrix Bmatrix vmatrix Vmatrix smallmatrix cases dcases rcases split aligned gathered "
    "alignedat multlined subequations quote quotation verse minipage abstract thebibliography tikzpicture "
    "tikzcd picture subfigure wrapfigure multicols multicols* titlepage frame block small footnotesize "
    "scriptsize tiny large Large huge appendix appendices itemize* sloppypar CD xy xymatrix diagram "
    "lrbox spacing singlespace doublespace onehalfspace adjustbox scope axis tcolorbox mdframed framed "
    "algorithm algorithmic algorithm2e theindex otherlanguage otherlanguage* caption part chapter section "
    "subsection subsubsection".split())
#: Macros whose brace argument is never a reference, even when it spells a label.
NOT_REFERENCES = frozenset({"label", "begin", "end", "cite", "citep", "citet", "nocite", "index", "lean", "leanok",
                            "mathlibok", "proves", "notready", "discussion", "input", "include", "url", "href",
                            "section", "subsection", "chapter", "paragraph", "caption", "bibitem", "newlabel"})
#: Commands that declare a theorem-like environment (what a declaring wrapper macro expands to).
THEOREM_DECLARERS = ("newtheorem", "spnewtheorem", "declaretheorem", "newmdtheoremenv")
#: Bounds of the macro expander for declaring wrappers: nesting depth and expanded size.
EXPAND_DEPTH = 8
EXPAND_CHARS = 200_000

_MACRO = re.compile(r"\\([A-Za-z@]+)")
#: a call of LeanArchitect's ``\\newleannode`` or ``\\newleanmodule`` (not its definition)
_LEAN_DEFINITION = re.compile(r"\\newlean(node|module)(?![A-Za-z@])")
_REFLIKE_ARG = re.compile(r"\*?[ \t]*\{([^{}\\$#%\n]{1,120})\}")
_DECLARER = re.compile(r"\\(?:" + "|".join(THEOREM_DECLARERS) + r")(?![A-Za-z@])")
_NEWTHEOREM = re.compile(
    (r"\\(?:newtheorem\*?|spnewtheorem\*?|newmdtheoremenv(?:\[[^\]]*\])?)\s*\{([^{}]+)\}"
     r"\s*(?:\[[^\]]*\]\s*)?\{([^{}]*)\}"
     r"|\\declaretheorem\s*(?:\[([^\]]*)\])?\s*\{([^{}]+)\}(?:\s*\[([^\]]*)\])?").replace(r"\s*", r"(?:\s|%)*")
)  # a comment between the arguments (blanked to '%' and spaces) is space to TeX
_WRAPPED = re.compile(r"\\(" + "|".join(sorted(REFERENCE_FORMS, key=len, reverse=True)) + r")(?![A-Za-z@])")
_TERM_BODY = re.compile(
    r"\\(?:" + "|".join(sorted(TERM_MACROS, key=len, reverse=True)) + r")\s*\{\s*#(\d)\s*\}"
    r"|\{\s*\\(?:" + "|".join(sorted(TERM_SWITCHES, key=len, reverse=True)) + r")(?![A-Za-z@])\s*#(\d)\s*\}"
)
_TEXT_BODY = re.compile(r"\\(?:" + "|".join(sorted(TEXT_MACROS, key=len, reverse=True)) + r")\s*\{[^{}]*#\d")
_PROVES = re.compile(r"\\proves\s*\{([^{}]*)\}")
_SECTION_START = re.compile(r"\\(?:" + "|".join(SECTION_MACROS) + r")(?![A-Za-z@])")
_KEYVAL_TITLE = re.compile(r"^\s*(?:name|label|title|note)\s*=", re.IGNORECASE)


def _plain_term(tex: str) -> str:
    text = re.sub(r"\$[^$]*\$", " ", tex)
    text = re.sub(r"\\[a-zA-Z]+\*?", " ", text)
    text = re.sub(r"[{}~\\]", " ", text)
    return " ".join(text.split()).strip(" .,;:").lower()


@dataclass
class _Builder:
    stmt: Statement
    proof_seen: bool = False


@dataclass
class _Frame:
    """An open environment while a region is read."""

    kind: str  # statement, proof, display, list, other
    end: int  # offset of the end of its \end{...}
    builder: _Builder | None = None  # statement and proof frames
    display: int | None = None  # index into displays once a label is seen inside (display frames)
    span: EnvSpan | None = None
    closing_from: int | None = None  # proof frames: where the closing sentence starts


@dataclass
class TexSource:
    """One text read as TeX: ``rel`` names it in provenance (``file:line``), ``text`` is as
    written, ``content`` the same text with what is not content blanked (``Hider.hide``, then
    the definitions), offsets and lines unchanged. A reader of another format builds one for a
    region of its own text and passes it to ``TexStatementReader.read_region``."""

    path: Path
    rel: str
    text: str
    content: str = ""  # ``text`` with everything that is not content blanked (same length and lines)
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.starts = line_starts(self.text)

    def line(self, pos: int) -> int:
        """1-based line of character offset ``pos``."""
        return line_of(self.starts, pos)


def _decode(path: Path, rel: str, data: bytes, warnings: list[IntakeWarning]) -> str:
    if b"\x00" in data[:65536]:
        raise InputError(f"{rel}: binary file, not TeX", hint="give the .tex source of the document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        warnings.append(IntakeWarning(code="encoding", where=f"{rel}:{line}", message="file is not UTF-8; read as Latin-1"))
        return data.decode("latin-1")


def _closing_sentence(content: str, start: int, stop: int) -> int:
    """Offset where the last sentence of ``content[start:stop]`` (a proof body) starts: after
    the last '.', '!' or '?' followed by space and a capital or a macro, before the final
    punctuation; ``stop`` when the body is one sentence."""
    body = content[start:stop].rstrip()
    body = re.sub(r"(?:\\(?:qed|qedhere|hfill|blacksquare|square|Box|qedsymbol)(?![A-Za-z])|[\s$])*$", "", body)
    end = len(body) - 1
    while end > 0 and body[end] in ".!?":
        end -= 1
    for m in reversed(list(re.finditer(r"[.!?][)\]]?\s+(?=[A-Z\\])", body[: end + 1]))):
        return start + m.end()
    return stop


_CUE_BEFORE = re.compile(r"\b(?:called|call|say|says|said(?:\s+to\s+be)?|define[sd]?|term(?:ed)?|known\s+as|denote[sd]?|let"
                         r"|refer(?:red)?\s+to(?:\s+as)?|notion\s+of|name[sd]?|write)\b[^.;]*$", re.IGNORECASE)
_CUE_AFTER = re.compile(r"^[^.;]*?\b(?:if|iff|when|whenever|provided|means|denotes|stands\s+for|consists"
                        r"|is\s+(?:defined|called|said)|are\s+(?:defined|called|said))\b|^[^.;]*?(?::=|\\coloneqq)",
                        re.IGNORECASE)
_SUBJECT = re.compile(r"(?:^|[.:!?\]])\s*(?:(?:an?|the)\s*)?$", re.IGNORECASE)


def _defining_position(before: str, after: str) -> bool:
    """Is the marked-up term at the end of ``before`` (its sentence so far, macros removed) the
    definiendum? A defining cue before it in its sentence ("we say", "is called", "define"), a
    defining clause after it ("... if", "... is defined", ":="), or the subject of its sentence
    ("A \\emph{law} with alphabet X is ...")."""
    sentence = re.split(r"(?<=[.!?])\s", before)[-1]
    if _CUE_BEFORE.search(sentence):
        return True
    rest = re.sub(r"^\\?[A-Za-z@]*\s*\{[^{}]*\}", "", after, count=1)  # the marked-up term itself
    if _CUE_AFTER.search(rest):
        return True
    return bool(_SUBJECT.search(before)) and re.match(r"^[^.;]{0,120}?\b(?:is|are)\b", rest) is not None


class TexStatementReader:
    """Reads theorem-like statements, proofs, labels and references from TeX text, file by file
    (``read_file``) or region by region (``read_region``); ``catalogue`` collects the result.

    ``tolerant``: malformed math and malformed environments are a warning per fault instead of
    an error (``[intake] tolerant``, ``fyan init --tolerant``); ``follow_includes``: read the files
    ``\\input`` names (a Markdown file's LaTeX does not); ``plain_headings``: read each document
    body for plain-text statement headings instead of environments (``read_tex``'s fallback)."""

    def __init__(self, main: Path, source_root: Path, *, tolerant: bool = False,
                 max_file_mib: float | None = None, follow_includes: bool = True,
                 plain_headings: bool = False, origin: Path | None = None, boundary: Path | None = None) -> None:
        self.main = main
        self.root = source_root
        #: the folder the source was copied from (``[intake] source_origin``): an absolute include
        #: path below it is read from the same place below ``source_root``
        self.origin = origin
        #: includes may reach outside the main file's folder (``../../.lake/…``), never outside this
        #: one (default: the Lake package holding the main file, else the source root)
        self.boundary = (boundary or lake_package_of(main) or source_root).resolve()
        #: LeanArchitect's generated macros: label -> (\input path, defining file, line), module ->
        #: (defining file, body start, body end); module JSON files read (None: absent)
        self.lean_nodes: dict[str, tuple[str, TexSource, int]] = {}
        self.lean_modules: dict[str, tuple[TexSource, int, int]] = {}
        self._lean_json: dict[str, ModuleJson | None] = {}
        self._module_nodes: list[set[str]] = []  # the node labels each \\inputleanmodule being read expanded
        self.tolerant = tolerant
        self.max_file_mib = max_file_mib
        self.follow_includes = follow_includes
        self.warnings: list[IntakeWarning] = []
        self.files: list[str] = []
        self.statements: list[Statement] = []
        self.labels: dict[str, LabelSite] = {}
        self.duplicate_labels: dict[str, list[str]] = {}  # label -> every place it is defined ("file:line")
        self.displays: list[Display] = []
        self.theorem_envs: dict[str, str] = {}  # env name -> canonical kind
        self.env_wrappers: dict[str, str] = {}  # \newenvironment{x}{\begin{y}}{\end{y}}: x -> y
        self.ref_wrappers: dict[str, tuple[str, int]] = {}  # macro -> (argument spec, label argument index)
        self.ref_affixes: dict[str, tuple[str, str]] = {}  # \\newcommand{\\propref}[1]{\\ref{prop:#1}}: ("prop:", "")
        self.declaring: dict[str, Definition] = {}  # macros whose expansion declares theorem environments
        #: environments used in the body but not classified: name -> count (``LAYOUT_ENVS`` apart)
        self.unclassified: dict[str, int] = {}
        self.layout_envs: dict[str, int] = {}
        #: a \\ref-like macro intake does not know, with a brace argument, in a statement or proof:
        #: (macro, label, statement index, in proof, closing, file, line); kept if the label exists
        self._reflike: list[tuple[str, str, int, bool, bool, str, int]] = []
        self.defined: set[str] = set()  # macros the document defines
        self.definitions: dict[str, Definition] = {}  # the last definition of each macro
        #: the document's own macros that expand to an include (``\\input``, ``\\import``, ...) or a
        #: ``\\label``, directly or through another such macro: name -> definition
        self.include_wrappers: dict[str, Definition] = {}
        self.label_wrappers: dict[str, Definition] = {}
        #: the folders of the files read through ``\\import``-like commands, innermost last
        self._import_dirs: list[Path] = []
        #: every file the document includes that intake could not find or did not follow:
        #: "file:line \\macro{...}: why"
        self.unfollowed: list[str] = []
        self.empty_labels: list[str] = []  # "file:line" of every \\label{}
        self.empty_references: list[str] = []  # "file:line \\ref{}" of every empty reference
        self.term_macros: dict[str, tuple[str, int]] = {name: ("{", 0) for name in TERM_MACROS}
        self.text_macros: set[str] = set(TEXT_MACROS)
        self.macros: list[str] = []
        self.hider = Hider()
        self.faults: list[tuple[str, int, str, str]] = []  # (file, line, message, statement)
        self._fault_seen: set[tuple[str, int]] = set()
        self._stack: list[str] = []
        #: the document's headings open at the point being read (across ``\\input``: one document)
        self.headings = HeadingStack()
        #: statements under plain-text headings (``plain_headings``), into the same lists
        self.plain_reader = BlockReader(self.statements, self.labels, self.warnings, markdown=False, slugs=False) \
            if plain_headings else None
        self.origin_given, self.boundary_given = origin, boundary  # for the plain-heading reader it may start

    # -- declarations ----------------------------------------------------------------------
    def _learn(self, src: TexSource, defs: list[Definition]) -> None:
        """What a file declares: theorem environments, reference/term/text macros, environment
        wrappers; every definition is kept verbatim for the blueprint export."""
        self._declarations(src.content)
        for d in defs:
            if d.kind == "macro" and d.name and (_DECLARER.search(d.body) or any(
                    re.search(r"\\" + re.escape(w) + r"(?![A-Za-z@])", d.body) for w in self.declaring)):
                self.declaring[d.name] = d
        if self.declaring:
            self._expand_declarations(blank_code(src.content, [(d.start, d.end) for d in defs]))
        for d in defs:
            self.macros.append(src.text[d.start : d.end])
            if d.kind == "macro" and d.name:
                self.defined.add(d.name)
                self.definitions[d.name] = d
                self._learn_wrapper(d)
            if d.kind == "environment":
                inner = re.search(r"\\begin\s*\{([^{}]+)\}", d.body)
                if inner and d.name:
                    self.env_wrappers[d.name] = inner.group(1).strip()
                continue
            if not d.name or d.name in BLUEPRINT_MACROS or d.name in REFERENCE_FORMS or not d.spec:
                continue
            wrapped = self._wrapped_label(d.body)
            if wrapped is not None and wrapped[0] <= len(d.spec):
                self.ref_wrappers[d.name] = (d.spec, wrapped[0] - 1)
                if wrapped[1:] != ("", ""):
                    self.ref_affixes[d.name] = wrapped[1:]
                continue
            term = _TERM_BODY.search(d.body)
            if term is not None:
                index = int(term.group(1) or term.group(2))
                if index <= len(d.spec):
                    self.term_macros[d.name] = (d.spec, index - 1)
            if _TEXT_BODY.search(d.body):
                self.text_macros.add(d.name)

    def _learn_wrapper(self, d: Definition) -> None:
        """Record ``d`` as an include or label wrapper when its body calls an include command,
        ``\\label`` or an earlier wrapper (a later definition of the same name replaces it)."""
        self.include_wrappers.pop(d.name, None)
        self.label_wrappers.pop(d.name, None)
        if d.name in INCLUDE_MACROS or d.name in IMPORT_MACROS or d.name == "label":
            return
        called = {m.group(1) for m in _MACRO.finditer(d.body)}
        if called & (INCLUDE_MACROS | set(IMPORT_MACROS) | set(self.include_wrappers)):
            self.include_wrappers[d.name] = d
        if "label" in called or called & set(self.label_wrappers):
            self.label_wrappers[d.name] = d

    @staticmethod
    def _wrapped_label(body: str) -> tuple[int, str, str] | None:
        """The parameter number a macro body passes as a label (or part of one) to a reference
        macro, with the text around it (``\\ref{prop:#1}``: ``(1, "prop:", "")``), if any."""
        for m in _WRAPPED.finditer(body):
            spec, indices, _ = REFERENCE_FORMS[m.group(1)]
            args, _ = read_args(body, m.end(), spec)
            for i in indices:
                arg = args[i] if i < len(args) else None
                p = re.fullmatch(r"\s*([^#{}\\\s]*)#(\d)([^#{}\\\s]*)\s*", arg or "")
                if p:
                    return int(p.group(2)), p.group(1), p.group(3)
        return None

    def _declarations(self, text: str) -> None:
        """Declare the theorem environments that ``\\newtheorem``, ``\\declaretheorem``, ... in
        ``text`` name (a parameter ``#1`` of a definition body is no name)."""
        for m in _NEWTHEOREM.finditer(text):
            if m.group(1):
                if "#" not in m.group(1):
                    self._declare(m.group(1).strip(), m.group(2))
            elif "#" not in m.group(4):
                env = m.group(4).strip()
                opts = (m.group(3) or "") + "," + (m.group(5) or "")
                name = re.search(r"name\s*=\s*\{?([^,}\]]+)", opts)
                self._declare(env, name.group(1) if name else env)

    def _expand_declarations(self, text: str) -> None:
        """Expand every call of a declaring wrapper (a macro whose body declares theorem
        environments, directly or through another wrapper: ``\\def\\thm#1#2{\\newtheorem{#1}{#2}}``
        then ``\\thm{example}{Example}``) and declare what the expansion declares. A bounded
        expander: the arguments replace ``#1``..``#9`` as TeX substitutes them (undelimited
        parameters, an optional first argument with its default), at most ``EXPAND_DEPTH`` levels
        deep and ``EXPAND_CHARS`` characters in all. (pylatexenc 2, the TeX parser in the
        dependencies, parses macro calls but does not expand a document's own definitions.)"""
        call = re.compile(r"\\(" + "|".join(sorted(map(re.escape, self.declaring), key=len, reverse=True))
                          + r")(?![A-Za-z@])")
        budget = [EXPAND_CHARS]

        def expand(piece: str, depth: int) -> str:
            out: list[str] = []
            pos = 0
            for m in call.finditer(piece):
                if m.start() < pos:
                    continue
                d = self.declaring[m.group(1)]
                args, end = read_args(piece, m.end(), d.spec or "")
                body = d.body
                if d.optional and args and args[0] is None:
                    args[0] = d.default or ""
                for k, arg in enumerate(args, start=1):
                    body = body.replace(f"#{k}", arg or "")
                budget[0] -= len(body)
                if budget[0] < 0 or depth >= EXPAND_DEPTH:
                    break
                out.append(piece[pos : m.start()])
                out.append(expand(body, depth + 1))
                pos = end
            out.append(piece[pos:])
            return "".join(out)

        expanded = expand(text, 0)
        if expanded != text:
            self._declarations(expanded)

    def _declare(self, env: str, display: str | None) -> None:
        words = _plain_term(display or env).split()
        kind = None
        for word in words + [env]:
            kind = KIND_ALIASES.get(word.lower())
            if kind:
                break
        self.theorem_envs[env] = kind or env.lower()

    def _kind_of(self, env: str) -> str | None:
        """Canonical kind of a theorem-like environment (None: not one; "proof" for proofs)."""
        seen: set[str] = set()
        while env in self.env_wrappers and env not in self.theorem_envs and env not in seen:
            seen.add(env)
            env = self.env_wrappers[env]
        if env in PROOF_ENVS:
            return "proof"
        if env in self.theorem_envs:
            return self.theorem_envs[env]
        base = env.rstrip("*")
        if base in self.theorem_envs:
            return self.theorem_envs[base]
        return KIND_ALIASES.get(base)

    # -- files -----------------------------------------------------------------------------
    def _rel(self, path: Path) -> str:
        """``path`` relative to the source root, with ``..`` when it lies outside (an include that
        reaches above the main file's folder, as LaTeX lets it)."""
        return Path(os.path.relpath(path.resolve(), self.root.resolve())).as_posix()

    def _load(self, path: Path) -> TexSource:
        rel = self._rel(path)
        if self.max_file_mib is not None:
            from fyan.intake import check_size

            check_size(path, rel, self.max_file_mib)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise InputError(f"{rel}: cannot read: {e.strerror}") from None
        text = _decode(path, rel, data, self.warnings)
        if not self.files and self.plain_reader is None:  # the main file must look like TeX
            if not re.search(r"\\[a-zA-Z]+", "\n".join(strip_comment(line) for line in text.split("\n"))):
                # unless it is plain text with statement headings ("Theorem 2.1" ... "Proof.")
                plain = TexStatementReader(path, self.root, tolerant=self.tolerant, max_file_mib=self.max_file_mib,
                                           plain_headings=True, origin=self.origin_given,
                                           boundary=self.boundary_given)
                plain.read_file(path)
                if not plain.statements:
                    raise InputError(
                        f"{rel}: does not look like a TeX document (no TeX command in it, no statement heading)",
                        hint="give the .tex source of the document",
                    )
        return TexSource(path, rel, text)

    def _resolve_include(self, name: str, src: TexSource, line: int, macro: str, *,
                         folders: list[Path] | None = None, quiet: bool = False,
                         shown: str | None = None) -> Path | None:
        """The file an include command names, looked for in ``folders`` (default: the folder of
        the innermost ``\\import``, the main file's, the including file's, the source root). A
        missing ``\\include``-like file or a file LaTeX generates itself is a warning (None), as
        it is to LaTeX; a missing ``\\input``/``\\subfile``/``\\import`` raises naming it (or,
        ``quiet``, returns None)."""
        name = name.strip()
        if self.origin is not None and Path(name).is_absolute():  # a path into the folder the source was copied from
            try:
                name = (self.root / Path(name).relative_to(self.origin)).as_posix()
            except ValueError:
                pass
        base = self.main.parent
        if folders is None:
            # LaTeX resolves against the folder it runs in (the main file's), and inside a file
            # read through \import against that file's folder first; a chapter file read as the
            # main file still names its siblings from the blueprint root, so try that too.
            folders = self._import_dirs[-1:] + [base, src.path.parent, self.root]
        for folder in dict.fromkeys(folders):
            for cand in (folder / name, folder / f"{name}.tex"):
                if cand.is_file():
                    return self._inside_boundary(cand, src, line, shown or f"\\{macro}{{{name}}}")
        if quiet:
            return None
        shown = shown or f"\\{macro}{{{name}}}"
        package = generated_package(name, self.main)
        if package is not None:
            raise GeneratedFilesMissing(
                f"{src.rel}:{line}: {shown} names a file LeanArchitect generates, and it is not there (looked in "
                f"{', '.join(self._rel(f) + '/' for f in dict.fromkeys(folders))})", lake_package_of(package) or package)
        if Path(name).suffix.lower() in GENERATED_SUFFIXES:
            self.warnings.append(IntakeWarning(
                code="generated-input", where=f"{src.rel}:{line}",
                message=f"\\{macro}{{{name}}}: file not found; LaTeX (or BibTeX, makeindex) writes it during its "
                "own run, so it is skipped"))
            return None
        if macro in SKIPPABLE_INCLUDES:
            self.unfollowed.append(f"{src.rel}:{line} {shown}: file not found")
            self.warnings.append(IntakeWarning(code="missing-include", where=f"{src.rel}:{line}",
                                               message=f"{shown}: file not found; skipped (LaTeX skips it too)"))
            return None
        hint = "copy the whole source tree, or remove the \\input"
        for up in list(base.parents)[:3]:
            if (up / name).is_file() or (up / f"{name}.tex").is_file():
                hint = (f"it exists relative to {up}: give the main file of the document there "
                        f"(the file that \\inputs {src.rel}) so that paths resolve as LaTeX resolves them")
                break
        looked = ", ".join(f"{self._rel(f)}/" for f in dict.fromkeys(folders))
        raise InputError(
            f"{src.rel}:{line}: included file {name!r} not found ({shown}; looked in {looked})", hint=hint
        )

    def _inside_boundary(self, path: Path, src: TexSource, line: int, shown: str) -> Path:
        """``path`` when it lies inside ``self.boundary``; raises ``InputError`` otherwise (Fyan
        copies every file it reads into the project, and reads nothing outside the package the
        document belongs to without being told)."""
        resolved = path.resolve()
        if resolved == self.boundary or self.boundary in resolved.parents:
            return path
        raise InputError(
            f"{src.rel}:{line}: {shown} reaches {resolved}, outside {self.boundary} (the Lake package or folder the "
            "document belongs to); Fyan copies what it reads into the project and does not read outside it",
            hint="give the main file of a document whose files all lie in one folder (or Lake package), or copy the "
            "included file into it")

    def read_file(self, path: Path, outer: _Frame | None = None) -> None:
        """Read one file of the document (and, where it includes them, the files it names)."""
        key = str(path.resolve())
        if key in self._stack:
            chain = " -> ".join(self._rel(Path(p)) for p in self._stack + [key])
            raise InputError(f"\\input loop: {chain}", hint="remove the circular \\input")
        self._stack.append(key)
        src = self._load(path)
        self.files.append(src.rel)
        self.prepare(src)
        begin = re.search(r"\\begin\s*\{document\}", src.content)
        end = re.search(r"\\end\s*\{document\}", src.content)
        body_start = begin.end() if begin else 0
        body_end = end.start() if end and end.start() >= body_start else len(src.content)
        if begin is not None:  # the preamble: only the files it reads (macros, theorem declarations)
            self._includes_only(src, 0, begin.start(), outer)
        if self.plain_reader is not None:
            self._read_plain(src, body_start, body_end)
        else:
            self.read_region(src, body_start, body_end, outer)
        self._stack.pop()

    def prepare(self, src: TexSource, visible: str | None = None) -> list[Definition]:
        """Set ``src.content``: ``visible`` (default ``src.text``; a reader of another format
        passes its text with its own non-content blanked, e.g. Markdown code blocks) with what
        LaTeX never typesets blanked (``Hider``) and the bodies of macro and environment
        definitions blanked; learn what it declares (``\\newtheorem``, reference and term
        macros, environment wrappers). Offsets and lines are kept. Returns the definitions."""
        src.content = self.hider.hide(src.text if visible is None else visible)
        defs = definitions(src.content)
        self._learn(src, defs)
        src.content = blank_code(src.content, [(d.start, d.end) for d in defs])
        if "\\newlean" in src.content:
            self._lean_definitions(src)
        return defs

    def _lean_definitions(self, src: TexSource) -> None:
        """Record what a LeanArchitect header defines: ``\\newleannode{label}{\\input{path}}`` and
        ``\\newleanmodule{Module}{body}`` (``Architect/Output.lean``, ``moduleToLatexOutputAux``); a
        later definition replaces an earlier one, as ``\\gdef`` does."""
        bodies = TexSource(src.path, src.rel, src.text)  # a module's body, read where it is used
        bodies.content = src.content
        calls: list[tuple[int, int]] = []
        for m in _LEAN_DEFINITION.finditer(src.content):
            args, end = read_args(src.content, m.end(), "{{")
            if args[0] is None or args[1] is None:
                continue
            calls.append((m.start(), end))  # a definition: nothing in it is read here
            key = tex_text(args[0]).strip()
            if m.group(1) == "node":
                target = re.search(r"\\input\s*\{([^{}]*)\}", args[1])
                if target:
                    self.lean_nodes[key] = (target.group(1), src, src.line(m.start()))
            else:
                self.lean_modules[key] = (bodies, end - 1 - len(args[1]), end - 1)  # the body, without its braces
        src.content = blank_code(src.content, calls)

    def starts_statement(self, env: str) -> bool:
        """Is ``env`` a theorem-like or proof environment of this document?"""
        return self._kind_of(env) is not None

    def environments(self, src: TexSource, start: int, stop: int, boundaries: list[int] | None = None) -> list[EnvSpan]:
        """The environments of ``src.content[start:stop]``, paired (``texscan.recover_environments``).
        An environment never closed ends at the next statement, proof or section, or at an offset
        of ``boundaries`` (another format's statement headings). Each malformation is a
        ``malformed-environment`` warning when tolerant; otherwise ``InputError`` naming every one
        with its file and line."""
        cuts = [m.start() for m in _SECTION_START.finditer(src.content, start, stop)] + list(boundaries or [])
        spans, faults = recover_environments(src.content, start, stop, starts_statement=self.starts_statement,
                                             boundaries=cuts)
        if faults:
            self._environment_faults(src, faults)
        return spans

    def _environment_faults(self, src: TexSource, faults: list[Fault]) -> None:
        if self.tolerant:
            for f in faults:
                self.warnings.append(IntakeWarning(code="malformed-environment", where=f"{src.rel}:{src.line(f.offset)}",
                                                   message=f"{f.message}; {f.recovery}"))
            return
        hint = ("fix the environment nesting in the source, or read it anyway with `fyan init --tolerant` ([intake] "
                "tolerant = true): a misnamed \\end then closes the open environment, and one never closed ends at "
                "the next statement or proof, each with a warning")
        if len(faults) == 1:
            raise InputError(f"{src.rel}:{src.line(faults[0].offset)}: {faults[0].message}", hint=hint)
        shown = "\n  ".join(f"{src.rel}:{src.line(f.offset)}: {f.message}" for f in faults[:20])
        more = f"\n  ... and {len(faults) - 20} more" if len(faults) > 20 else ""
        raise InputError(f"malformed environments, {len(faults)} fault(s):\n  {shown}{more}", hint=hint)

    def _includes_only(self, src: TexSource, start: int, stop: int, outer: _Frame | None) -> None:
        """The preamble (or a package file): only the files it reads, local packages included."""
        for m in _MACRO.finditer(src.content, start, stop):
            name = m.group(1)
            if name in INCLUDE_MACROS or name in IMPORT_MACROS or name in self.include_wrappers:
                self._include(name, src, m, stop, outer)
            elif name in PACKAGE_MACROS:
                self._package(name, src, m, stop)

    def _package(self, name: str, src: TexSource, m: re.Match, stop: int) -> None:
        """Read the document's own package or class files that ``\\usepackage{a,b}`` (or
        ``\\documentclass``, ...) at ``m`` loads, found beside the main file or the file being
        read, like the preamble: their definitions, theorem declarations and the files they
        read. A package that is not there is a system one (nothing to read)."""
        args, _ = read_args(src.content, m.end(), "[{", stop)
        for pkg in tex_text(args[1] or "").split(","):
            pkg = pkg.strip()
            if not pkg or "\\" in pkg or "#" in pkg:
                continue
            for folder in dict.fromkeys([self.main.parent, src.path.parent, self.root]):
                path = folder / f"{pkg}{PACKAGE_MACROS[name]}"
                if path.is_file():
                    self._read_style(path)
                    break

    def _read_style(self, path: Path) -> None:
        key = str(path.resolve())
        if key in self._stack or self._rel(path) in self.files:
            return  # loaded once, as LaTeX loads a package once
        self._stack.append(key)
        src = self._load(path)
        self.files.append(src.rel)
        self.prepare(src)
        self._includes_only(src, 0, len(src.content), None)
        self._stack.pop()

    def _include(self, name: str, src: TexSource, m: re.Match, stop: int, outer: _Frame | None,
                 stack: list[_Frame] | None = None) -> None:
        """Read the file an include call at ``m`` names: ``\\input{x}``, ``\\input x``,
        ``\\include*{x}``, the import package's ``\\import{dir/}{x}``, ``\\subimport*{dir/}{x}``, ...
        (``IMPORT_MACROS``), or a macro of the document that expands to one of them (or to a
        ``\\label``; ``_expand_call``)."""
        if name in self.include_wrappers or name in self.label_wrappers:
            self._expand_call(name, src, src.content, m.start(), m.end(), stop, outer, stack or [], 0)
            return
        target, _ = self._include_target(name, src.content, m.end(), stop)
        self._follow(name, target, src, src.line(m.start()), outer)

    @staticmethod
    def _include_target(name: str, text: str, pos: int, stop: int) -> tuple[str | tuple[str, str], int]:
        """The argument(s) of the include command ``name`` whose name ends at ``pos``: the file
        (``\\input``, ``\\include``, ``\\subfile``) or (folder, file) (``IMPORT_MACROS``), with the
        offset after the call."""
        if name in IMPORT_MACROS:
            args, end = read_args(text, pos, "*{{", stop)
            return (args[1] or "", args[2] or ""), end
        i = pos + (1 if text.startswith("*", pos) else 0)
        j = re.compile(r"\s*").match(text, i).end()
        if text.startswith("{", j):
            end = group_end(text, j, stop)
            return text[j + 1 : end - 1], end
        word = re.compile(r"[^\s{}\\%]+").match(text, j)  # the TeX primitive form: \input chapter1
        return (word.group(0) if word else ""), (word.end() if word else j)

    def _path_text(self, text: str) -> str | None:
        """A file argument as TeX reads it, with the document's own argument-free macros in it
        expanded (``\\input{\\chapters/one}``); None when a macro in it is not the document's."""
        text = tex_text(text)
        for _ in range(EXPAND_DEPTH):
            m = re.search(r"\\([A-Za-z@]+)\s*(?:\{\})?", text)
            if m is None:
                return text
            d = self.definitions.get(m.group(1))
            if d is None or d.nargs or d.kind != "macro":
                return None
            text = text[: m.start()] + tex_text(d.body) + text[m.end() :]
        return None

    def _follow(self, name: str, target: str | tuple[str, str], src: TexSource, line: int,
                outer: _Frame | None) -> None:
        """Resolve and read the file an include command names (``_include_target``)."""
        shown = (f"\\{name}{{{target[0]}}}{{{target[1]}}}" if isinstance(target, tuple) else f"\\{name}{{{target}}}")
        shown = " ".join(shown.split())
        if not self.follow_includes:
            return
        if isinstance(target, tuple):
            folder, file = self._path_text(target[0]), self._path_text(target[1])
            if folder is None or file is None:
                self._unfollowed(src, line, shown, "its path holds a macro intake does not expand")
                return
            if not file:
                return
            if IMPORT_MACROS[name]:
                bases = ([self._import_dirs[-1]] if self._import_dirs else []) + [src.path.parent]
            else:
                bases = [self.main.parent]
            path = None
            for base in dict.fromkeys(bases):
                path = self._resolve_include(str(Path(folder) / file) if folder else file, src, line, name,
                                             folders=[base], quiet=True)
                if path is not None:
                    break
            if path is None:
                path = self._resolve_include(str(Path(folder) / file) if folder else file, src, line, name,
                                             folders=list(dict.fromkeys(bases)), shown=shown)
            if path is None:
                return
            self._import_dirs.append(path.parent)
            try:
                self.read_file(path, outer)
            finally:
                self._import_dirs.pop()
            return
        file = self._path_text(target)
        if file is None:
            self._unfollowed(src, line, shown, "its path holds a macro intake does not expand")
            return
        if file.strip():
            path = self._resolve_include(file, src, line, name, shown=shown)
            if path is not None:
                self.read_file(path, outer)

    def _unfollowed(self, src: TexSource, line: int, shown: str, why: str) -> None:
        self.unfollowed.append(f"{src.rel}:{line} {shown}: {why}")
        self.warnings.append(IntakeWarning(code="include-not-followed", where=f"{src.rel}:{line}",
                                           message=f"{shown}: not read ({why}); statements in it are missing"))

    def _expand_call(self, name: str, src: TexSource, text: str, start: int, pos: int, stop: int,
                     frame: _Frame | None, stack: list[_Frame], depth: int) -> int:
        """Expand a call of the document's own include or label wrapper (``\\newcommand{\\chap}[1]
        {\\input{chapters/#1}}``, ``\\DeclareDocumentCommand{\\ollabel}{m}{\\label{ol:#1}}``) whose
        name ends at ``pos`` of ``text`` (a call at ``start`` of ``src``), and do what the
        expansion does: read the files it includes, define the labels it defines (at the call's
        place), through further wrappers up to ``EXPAND_DEPTH`` levels. Returns the offset after
        the call."""
        d = self.include_wrappers.get(name) or self.label_wrappers[name]
        args, end = read_args(text, pos, d.spec or "", stop)
        body = d.body
        if d.optional and args and args[0] is None:
            args[0] = d.default or ""
        for k, arg in enumerate(args, start=1):
            body = body.replace(f"#{k}", arg or "")
        line = src.line(start)
        if depth >= EXPAND_DEPTH or len(body) > EXPAND_CHARS:
            self._unfollowed(src, line, f"\\{name}", "its expansion is too deep or too long")
            return end
        for m in _MACRO.finditer(body):
            inner = m.group(1)
            if inner in self.include_wrappers or inner in self.label_wrappers:
                self._expand_call(inner, src, body, start, m.end(), len(body), frame, stack, depth + 1)
            elif inner in INCLUDE_MACROS or inner in IMPORT_MACROS:
                target, _ = self._include_target(inner, body, m.end(), len(body))
                self._follow(inner, target, src, line, frame)
            elif inner == "label":
                label_args, _ = read_args(body, m.end(), "{")
                if label_args[0] is not None and label_args[0].strip() and "#" not in label_args[0]:
                    self._label(normalize_label(label_args[0]), src, start, frame, stack, False)
        return end

    # -- a region of TeX text --------------------------------------------------------------
    def read_region(self, src: TexSource, start: int, stop: int, outer: _Frame | None = None,
                    spans: list[EnvSpan] | None = None) -> None:
        """Read the statements in ``src.content[start:stop]`` (``src.content`` as ``prepare``
        leaves it). ``spans``: the environments beginning in the region, already paired by
        ``environments`` over a larger text (in ``\\begin`` order); default: paired here. Raises
        ``InputError`` for malformed environments (unless tolerant)."""
        if spans is None:
            spans = self.environments(src, start, stop)
        stack: list[_Frame] = []
        k = 0
        last_section_end = -1

        def current() -> _Frame | None:
            for f in reversed(stack):
                if f.builder is not None:
                    return f
            return outer if outer is not None and outer.builder is not None else None

        def advance(pos: int) -> None:
            """Open every environment that begins before ``pos``, close those that end by it."""
            nonlocal k
            while k < len(spans) and spans[k].begin < pos:
                while stack and stack[-1].end <= spans[k].begin:
                    stack.pop()
                stack.append(self._open(spans[k], src, current(), stack))
                k += 1
            while stack and stack[-1].end <= pos:
                stack.pop()

        for m in _MACRO.finditer(src.content, start, stop):
            name = m.group(1)
            pos = m.start()
            if name in ("begin", "end"):
                # the environment form of a heading: \begin{section}{Title} ... \end{section}
                args, _ = read_args(src.content, m.end(), "{{" if name == "begin" else "{", stop)
                if args[0] in SECTION_MACROS:
                    advance(pos + 1)
                    if current() is None:
                        if name == "end":
                            self.headings.leave(SECTION_LEVELS.index(args[0]))
                        elif args[1] is not None:
                            self.headings.enter(SECTION_LEVELS.index(args[0]), section_title(args[1]))
                continue
            advance(pos + 1)
            frame = current()
            if name == "label":
                args, end = read_args(src.content, m.end(), "{", stop)
                if args[0] is not None and args[0].strip():
                    section = last_section_end >= 0 and not src.content[last_section_end:pos].strip()
                    self._label(normalize_label(args[0]), src, pos, frame, stack, section)
                elif args[0] is not None:
                    self.empty_labels.append(f"{src.rel}:{src.line(pos)}")
                continue
            if name in REFERENCE_FORMS or name in self.ref_wrappers:
                self._references(name, src, m, stop, frame)
                continue
            if name in INCLUDE_MACROS or name in IMPORT_MACROS or name in self.include_wrappers \
                    or name in self.label_wrappers:
                self._include(name, src, m, stop, frame, stack)
                continue
            if name in ("inputleannode", "inputleanmodule"):
                args, _ = read_args(src.content, m.end(), "{", stop)
                if args[0] is not None:
                    self._lean_input(name, tex_text(args[0]).strip(), src, src.line(pos), frame)
                continue
            if name in SECTION_MACROS:
                args, last_section_end = read_args(src.content, m.end(), "*[{", stop)
                if frame is None and args[2] is not None:  # a heading of the document, not one quoted in a statement
                    self.headings.enter(SECTION_LEVELS.index(name), section_title(args[2]))
                continue
            if frame is None:
                continue
            b = frame.builder
            in_proof = frame.kind == "proof"
            if self._maybe_reference(name):
                arg = _REFLIKE_ARG.match(src.content, m.end(), stop)
                if arg is not None:  # kept at the end if its argument is a label (``catalogue``)
                    closing = in_proof and frame.closing_from is not None and pos >= frame.closing_from
                    self._reflike.append((name, normalize_label(arg.group(1)), b.stmt.index, in_proof, closing,
                                          src.rel, src.line(pos)))
            if name == "lean":
                args, _ = read_args(src.content, m.end(), "{", stop)
                b.stmt.lean_names.extend(n.strip() for n in tex_text(args[0] or "").split(",") if n.strip())
            elif name == "leanok":
                if in_proof and b.stmt.proof is not None:
                    b.stmt.proof.leanok = True
                else:
                    b.stmt.leanok = True
            elif name == "mathlibok":
                b.stmt.mathlibok = True
            elif b.stmt.kind == "definition" and not in_proof:
                if name in self.term_macros:
                    spec, index = self.term_macros[name]
                    args, _ = read_args(src.content, m.end(), spec, stop)
                    if index < len(args) and args[index]:
                        self._term(args[index], src, pos, b.stmt)
                elif name in TERM_SWITCHES:
                    before = src.content.rfind("{", start, pos)
                    if before >= 0 and not src.content[before + 1 : pos].strip():
                        end = group_end(src.content, before, stop)
                        self._term(src.content[m.end() : end - 1], src, before, b.stmt)
        advance(stop + 1)

    def _lean_input(self, name: str, key: str, src: TexSource, line: int, frame: _Frame | None) -> None:
        """Expand ``\\inputleannode{key}`` (read the node's generated artifact, then set it from the
        module's JSON when present) or ``\\inputleanmodule{key}`` (read the module's body: its nodes
        and comments in source order). A name the generated files do not define expands to nothing
        in LaTeX (``\\csname`` of an undefined name is ``\\relax``): here a warning, and listed."""
        table = self.lean_nodes if name == "inputleannode" else self.lean_modules
        if key not in table:
            known = "no LeanArchitect header was read" if not self.lean_nodes else \
                f"the generated files define {len(self.lean_nodes)} node(s) and {len(self.lean_modules)} module(s)"
            self.unfollowed.append(f"{src.rel}:{line} \\{name}{{{key}}}: not defined by the generated files")
            self.warnings.append(IntakeWarning(
                code="leanarchitect", where=f"{src.rel}:{line}",
                message=f"\\{name}{{{key}}}: not defined ({known}); LaTeX prints nothing here. Run `lake build "
                ":blueprint` in the package again, or correct the name"))
            return
        if name == "inputleanmodule":
            msrc, start, stop = self.lean_modules[key]
            marker = f"leanmodule:{key}"
            if marker in self._stack:
                raise InputError(f"{src.rel}:{line}: \\inputleanmodule{{{key}}} includes itself",
                                 hint="remove the circular \\inputleanmodule")
            self._stack.append(marker)
            self._module_nodes.append(set())
            try:
                self.read_region(msrc, start, stop, frame)
            finally:
                self._stack.pop()
                self._module_nodes.pop()
            return
        if self._module_nodes:  # a label two declarations of a module share is listed twice: one node
            if key in self._module_nodes[-1]:
                return
            self._module_nodes[-1].add(key)
        target, hsrc, hline = self.lean_nodes[key]
        before = len(self.statements)
        path = self._resolve_include(target, hsrc, hline, "input", shown=f"\\inputleannode{{{key}}}")
        if path is None:
            return
        self.read_file(path, frame)
        for stmt in self.statements[before:]:
            if stmt.parent is not None and stmt.parent >= before:
                continue
            stmt.lean_node = key
            at = tex_position(stmt.body)
            if at is not None:
                stmt.lean_positions = [LeanPosition(name=n, file=at[0], line_start=at[1], line_end=at[3],
                                                    origin=f"{stmt.provenance.file}:{stmt.provenance.line_start}")
                                       for n in stmt.lean_names]
            nodes = self._json_nodes(key)
            if nodes:
                apply_json(stmt, key, nodes, self.warnings)

    def _json_nodes(self, label: str) -> list[tuple[JsonNode, str, int]]:
        """The JSON nodes with LaTeX label ``label`` in every module header read so far whose
        ``:blueprintJson`` output sits beside it (``module/<A>/<B>.json``), in reading order."""
        headers = {str(s.path): s for s, _, _ in self.lean_modules.values()}
        headers.update({str(s.path): s for _, s, _ in self.lean_nodes.values()})
        found: list[tuple[JsonNode, str, int]] = []
        for header in headers.values():
            path = header.path.with_suffix(".json")
            key = str(path)
            if key not in self._lean_json:
                self._lean_json[key] = None
                if path.is_file():
                    self._inside_boundary(path, header, 1, path.name)
                    rel = self._rel(path)
                    if self.max_file_mib is not None:
                        from fyan.intake import check_size

                        check_size(path, rel, self.max_file_mib)
                    self._lean_json[key] = read_module_json(path, rel, path.read_bytes())
                    self.files.append(rel)
            module = self._lean_json[key]
            if module is not None:
                found += [(n, module.file, ln) for n, ln in zip(module.nodes, module.lines) if n.latexLabel == label]
        return found

    def read_within(self, src: TexSource, start: int, stop: int, stmt: Statement, *, in_proof: bool = False,
                    spans: list[EnvSpan] | None = None, label_first: bool = False) -> None:
        """Read ``src.content[start:stop]``, the text of ``stmt`` (or of its proof, ``in_proof``) as
        another reader delimited it (a Markdown statement, a plain-text heading's statement): its
        labels, references and blueprint macros belong to ``stmt`` as if it were an environment.
        ``spans`` as for ``read_region``; ``label_first``: a ``\\label`` in the statement (not in a
        display or a list) becomes its main label, over the one it has (a printed name)."""
        closing = _closing_sentence(src.content, start, stop) if in_proof else None
        frame = _Frame("proof" if in_proof else "statement", stop, _Builder(stmt, proof_seen=in_proof),
                       closing_from=closing)
        kept = stmt.label
        if label_first and not in_proof:
            stmt.label = None
        self.read_region(src, start, stop, frame, spans)
        if stmt.label is None:
            stmt.label = kept

    def _read_plain(self, src: TexSource, start: int, stop: int) -> None:
        """A document body read for plain-text statement headings (``plain_headings``): its
        paragraphs through ``self.plain_reader``, the TeX in each statement, proof and gap read in
        document order (labels, references, ``\\input``)."""
        lines = blank_spans(src.content, [(0, start), (stop, len(src.content))]).split("\n")
        blocks = paragraph_blocks(lines, src.line(start) - 1, src.line(max(start, stop - 1)))
        walk = SegmentWalk(self, src, self.environments(src, start, stop), start, stop,
                           explicit=self.plain_reader.explicit)
        self.plain_reader.read(src.rel, src.text.split("\n"), blocks, walk.block_segment)
        walk.finish()

    def _open(self, span: EnvSpan, src: TexSource, frame: _Frame | None, stack: list[_Frame]) -> _Frame:
        """A new frame for the environment ``span`` (a statement, a proof, a display, ...)."""
        if span.end_start < 0:  # never closed (``environments`` ends or refuses every such span)
            return _Frame("other", span.end, span=span)
        name = span.name
        if name in DISPLAY_MATH_ENVS:
            return _Frame("display", span.end, span=span)
        if name in LIST_ENVS:
            return _Frame("list", span.end, span=span)
        kind = self._kind_of(name)
        if kind is None:
            counts = self.layout_envs if name in LAYOUT_ENVS or name in self.hider.comment_envs else self.unclassified
            counts[name] = counts.get(name, 0) + 1
            return _Frame("other", span.end, span=span)
        self._check_math(src, span, frame)
        if kind == "proof":
            return self._proof(span, src, frame)
        start, end = src.line(span.begin), src.line(span.end - 1)
        args, _ = read_args(src.content, span.body, "[", span.end_start)
        title = tex_text(args[0]) if args[0] else None
        label_from_title = None
        if title and _KEYVAL_TITLE.match(title):  # thmtools: [name=..., label=...]
            keys = dict((k.strip().lower(), v.strip().strip("{}")) for k, _, v in
                        (part.partition("=") for part in title.split(",")) if v)
            title = keys.get("name") or keys.get("title") or keys.get("note")
            label_from_title = keys.get("label")
        in_statement = frame is not None and frame.kind == "statement"
        stmt = Statement(
            index=len(self.statements),
            kind=kind,
            env=name,
            title=title or None,
            body=src.text[span.begin : span.end],
            provenance=Provenance(file=src.rel, line_start=start, line_end=end),
            parent=frame.builder.stmt.index if frame is not None else None,
            in_parent_proof=frame is not None and frame.kind == "proof",
            section=self.headings.path,
        )
        if in_statement:
            outer = frame.builder.stmt
            self.warnings.append(IntakeWarning(
                code="nested-statement", where=f"{src.rel}:{start}",
                message=f"{name} inside {outer.env} {outer.display} (outside a proof): read as its own statement, "
                f"and {outer.display} depends on it; check the \\end of {outer.env} at line {outer.provenance.line_end}"))
        self.statements.append(stmt)
        new = _Frame("statement", span.end, _Builder(stmt), span=span)
        if label_from_title:
            self._label(normalize_label(label_from_title), src, span.begin, new, stack + [new], False)
        return new

    def _check_math(self, src: TexSource, span: EnvSpan, frame: _Frame | None) -> None:
        for fault in math_faults(src.content, span.body, span.end_start, self.text_macros):
            line = src.line(fault.offset)
            if (src.rel, fault.offset) in self._fault_seen:
                continue
            self._fault_seen.add((src.rel, fault.offset))
            what = f"{span.name} at line {src.line(span.begin)}"
            if self.tolerant:
                self.warnings.append(IntakeWarning(
                    code="malformed-math", where=f"{src.rel}:{line}",
                    message=f"{fault.message} (in {what}); the statement is read up to its own \\end{{{span.name}}}"))
            else:
                self.faults.append((src.rel, line, fault.message, what))

    def _proof(self, span: EnvSpan, src: TexSource, frame: _Frame | None) -> _Frame:
        line = src.line(span.begin)
        target: Statement | None = None
        proves: str | None = None
        m = _PROVES.search(src.content, span.body, span.end_start)
        if m:
            proves = normalize_label(m.group(1))
            target = self._statement_of(proves)
            if target is None:
                self.warnings.append(IntakeWarning(code="proof", where=f"{src.rel}:{line}",
                                                   message=f"\\proves{{{proves}}} names no statement defined before it"))
        if target is None:
            args, _ = read_args(src.content, span.body, "[", span.end_start)
            for label in self._labels_in(args[0] or ""):
                target = self._statement_of(label)
                if target is not None:
                    break
        if target is None and self.statements:
            target = self.statements[-1]
            # at the outer level, a proof belongs to the last outer statement (not to a claim
            # or a statement nested in it)
            while target.parent is not None and frame is None:
                target = self.statements[target.parent]
        if target is None:
            self.warnings.append(IntakeWarning(code="proof", where=f"{src.rel}:{line}",
                                               message="proof with no statement before it; ignored"))
            return _Frame("other", span.end, span=span)
        prov = Provenance(file=src.rel, line_start=line, line_end=src.line(span.end - 1))
        if target.proof is None:
            target.proof = ProofBlock(body=src.text[span.begin : span.end], provenance=prov, proves=proves)
        else:
            self.warnings.append(IntakeWarning(
                code="proof", where=f"{src.rel}:{line}",
                message=f"second proof for {target.display} (first at {target.proof.provenance}); its references "
                "count as proof references"))
        closing = _closing_sentence(src.content, span.body, span.end_start)
        return _Frame("proof", span.end, _Builder(target, proof_seen=True), span=span, closing_from=closing)

    def _labels_in(self, text: str) -> list[str]:
        """Labels referenced in a piece of text (a proof's optional argument)."""
        found: list[str] = []
        for m in _MACRO.finditer(text):
            name = m.group(1)
            if name in REFERENCE_FORMS:
                spec, indices, is_list = REFERENCE_FORMS[name]
            elif name in self.ref_wrappers:
                spec, index = self.ref_wrappers[name]
                indices, is_list = (index,), False
            else:
                continue
            args, _ = read_args(text, m.end(), spec)
            for i in indices:
                if i < len(args) and args[i]:
                    found += [normalize_label(x) for x in (args[i].split(",") if is_list else [args[i]]) if x.strip()]
        return found

    def _statement_of(self, label: str) -> Statement | None:
        site = self.labels.get(label)
        if site is None or site.statement_index is None:
            return None
        return self.statements[site.statement_index]

    def _references(self, name: str, src: TexSource, m: re.Match, stop: int, frame: _Frame | None) -> None:
        if name in self.ref_wrappers:
            spec, index = self.ref_wrappers[name]
            indices, is_list = (index,), False
        else:
            spec, indices, is_list = REFERENCE_FORMS[name]
        args, _ = read_args(src.content, m.end(), spec, stop)
        if frame is None:
            return
        line = src.line(m.start())
        in_proof = frame.kind == "proof"
        closing = in_proof and frame.closing_from is not None and m.start() >= frame.closing_from
        prefix, suffix = self.ref_affixes.get(name, ("", ""))
        for i in indices:
            text = args[i] if i < len(args) else None
            if not text or not text.strip():
                if text is not None:
                    self.empty_references.append(f"{src.rel}:{line} \\{name}{{}}")
                continue
            for label in (text.split(",") if is_list else [text]):
                label = normalize_label(label)
                if label:
                    label = prefix + label + suffix
                    frame.builder.stmt.references.append(Reference(
                        label=label, macro=name, file=src.rel, line=line, in_proof=in_proof, closing=closing))

    def _label(self, label: str, src: TexSource, pos: int, frame: _Frame | None, stack: list[_Frame],
               section: bool) -> None:
        line = src.line(pos)
        if label in self.labels:  # LaTeX warns and resolves to the last definition
            first = self.labels[label]
            places = self.duplicate_labels.setdefault(label, [f"{first.file}:{first.line}"])
            places.append(f"{src.rel}:{line}")
            self.warnings.append(IntakeWarning(
                code="duplicate-label", where=f"{src.rel}:{line}",
                message=f"label {label!r} is defined twice: at {first.file}:{first.line} and here; a reference "
                "to it resolves to this one, the last (as LaTeX does), and is flagged in the unit that makes it"))
        b = frame.builder if frame is not None else None
        index = b.stmt.index if b is not None else None
        in_proof = frame is not None and frame.kind == "proof"
        innermost = max((i for i, f in enumerate(stack) if f.builder is not None), default=-1)
        inner = stack[innermost + 1 :]  # environments between the statement (or proof) and the label
        display = next((f for f in reversed(inner) if f.kind == "display"), None)
        site = LabelSite(label=label, file=src.rel, line=line, statement_index=index, in_proof=in_proof,
                         section=section and frame is None,
                         env=inner[-1].span.name if inner and inner[-1].span is not None else None)
        if display is not None and display.span is not None:
            if display.display is None:
                span = display.span
                display.display = len(self.displays)
                self.displays.append(Display(
                    labels=[], env=span.name, body=src.text[span.begin : span.end],
                    provenance=Provenance(file=src.rel, line_start=src.line(span.begin), line_end=src.line(span.end - 1)),
                    statement_index=index, in_proof=in_proof))
            self.displays[display.display].labels.append(label)
            site.display = display.display
        self.labels[label] = site
        if b is not None:
            b.stmt.labels.append(label)
            if b.stmt.label is None and not b.proof_seen and not any(f.kind in ("display", "list") for f in inner):
                b.stmt.label = label

    def _term(self, tex: str, src: TexSource, pos: int, stmt: Statement) -> None:
        """Record a defined term (definition markup) of ``stmt``, folded; a name (capitalised
        inside a sentence) keeps its case."""
        tex = tex_text(tex)  # as TeX reads it: a comment inside the term is no part of it
        folded = " ".join(fold_case_kept(re.sub(r"\\(?:label|index)\s*\{[^{}]*\}", " ", tex)).split()).strip(" .,;:()")
        words = folded.split()
        if not words or len(words) > 6 or len(folded) < 3 or folded.isdigit():
            return
        if all(w.lower() in FUNCTION_WORDS for w in words):
            return
        before = src.content[max(0, pos - 300) : pos]
        before = re.sub(r"\\(?:begin\s*\{[^{}]*\}(?:\[[^\]]*\])?|label\s*\{[^{}]*\}|\w+)", " ", before).rstrip()
        sentence_start = not before or before.endswith((".", ":", "!", "?", "]"))
        if len(words) == 1 and not _defining_position(before, src.content[pos : pos + 300]):
            return  # one emphasised word outside a defining phrase is emphasis, not a definition
        name = any(c.isupper() for c in folded[1:]) or (folded[0].isupper() and not sentence_start)
        term = folded if name else folded.lower()
        if term not in stmt.defined_terms:
            stmt.defined_terms.append(term)

    def catalogue(self) -> Catalogue:
        """The catalogue read so far. Raises ``InputError`` listing every malformed-math fault
        when not tolerant."""
        if self.faults:
            statements = len({(f, what) for f, _, _, what in self.faults})
            shown = "\n  ".join(f"{f}:{line}: {msg} (in {what})" for f, line, msg, what in self.faults[:20])
            more = f"\n  ... and {len(self.faults) - 20} more" if len(self.faults) > 20 else ""
            raise InputError(
                f"malformed math in {statements} statement(s) or proof(s), {len(self.faults)} fault(s):\n  {shown}{more}",
                hint="fix the delimiters in the source, or read it anyway with `fyan init --tolerant` "
                "([intake] tolerant = true): each statement then ends at its own \\end{...}, with a warning",
            )
        self._resolve_reflike()
        return Catalogue(
            source_root=str(self.root),
            main_file=self._rel(self.main),
            files=self.files,
            statements=self.statements,
            labels=self.labels,
            warnings=self.warnings,
            displays=self.displays,
            macros=list(dict.fromkeys(self.macros)),
            theorem_envs=self.theorem_envs,
            duplicate_labels=self.duplicate_labels,
            unclassified_envs=dict(sorted(self.unclassified.items(), key=lambda x: (-x[1], x[0]))),
            layout_envs=dict(sorted(self.layout_envs.items(), key=lambda x: (-x[1], x[0]))),
            empty_labels=self.empty_labels,
            empty_references=self.empty_references,
            unfollowed_includes=self.unfollowed,
        )

    def _maybe_reference(self, name: str) -> bool:
        """Could ``\\name{x}`` be a reference macro intake does not know? Not a known macro of
        another meaning (text and math fonts, markup, blueprint macros), and not one the document
        defines as something else, unless its name says reference (``\\propref``)."""
        if name in NOT_REFERENCES or name in BLUEPRINT_MACROS or name in self.term_macros or name in TEXT_MACROS:
            return False
        if name.startswith(("math", "text")) or name in TERM_SWITCHES:
            return False
        return "ref" in name.lower() or name not in self.defined

    def _resolve_reflike(self) -> None:
        """Keep, as references, the calls of a macro intake does not know whose brace argument
        is a label of the document (``\\propref{x}`` from a style file that is not there); each
        such macro is reported once, as "read as a reference". Idempotent."""
        kept: dict[str, list[str]] = {}
        for name, label, index, in_proof, closing, rel, line in self._reflike:
            if label not in self.labels or name in REFERENCE_FORMS or name in self.ref_wrappers:
                continue
            stmt = self.statements[index]
            stmt.references.append(Reference(label=label, macro=name, file=rel, line=line, in_proof=in_proof,
                                             closing=closing))
            kept.setdefault(name, []).append(f"{rel}:{line}")
        self._reflike = []
        for name, places in kept.items():
            self.warnings.append(IntakeWarning(
                code="read-as-reference", where=places[0],
                message=f"\\{name}{{...}} is no reference macro intake knows, but its argument is a label of the "
                f"document: read as a reference ({len(places)} use(s))"))


class SegmentWalk:
    """Reads a text that another reader cut into segments (statements, proofs, LaTeX
    environment regions), in document order and every character once: ``segment(kind, a, b,
    stmt)`` first reads what lies between the previous segment and ``a`` as running text (its
    labels), then ``[a, b)``: a ``tex`` region with ``read_region`` (its statements are created
    now, in document order), a statement's or proof's text with ``read_within``. A segment never
    runs into the next ``tex`` region (``regions``: their begin offsets, sorted); ``finish`` reads
    the rest. ``spans`` are the environments paired once over the whole text; ``explicit`` the
    statements whose label is an explicit anchor (a ``\\label`` in the others becomes their main
    label)."""

    def __init__(self, reader: TexStatementReader, src: TexSource, spans: list[EnvSpan], start: int, stop: int,
                 regions: list[int] | None = None, explicit: set[int] | None = None) -> None:
        self.reader, self.src, self.spans = reader, src, spans
        self.begins = [s.begin for s in spans]
        self.cursor, self.stop = start, stop
        self.regions = regions or []
        self.explicit = explicit if explicit is not None else set()

    def _inside(self, a: int, b: int) -> list[EnvSpan]:
        return self.spans[bisect_left(self.begins, a) : bisect_left(self.begins, b)]

    def segment(self, kind: str, a: int, b: int, stmt: Statement | None = None) -> None:
        """Read the segment ``[a, b)`` of ``kind`` ``tex``, ``statement``, ``proof`` or ``text``."""
        a, b = max(a, self.cursor), min(b, self.stop)
        if kind != "tex":  # never into the next environment region
            k = bisect_right(self.regions, a)
            if k < len(self.regions):
                b = min(b, self.regions[k])
        if self.cursor < a:
            self.reader.read_region(self.src, self.cursor, a, spans=self._inside(self.cursor, a))
        if a < b:
            if stmt is None:
                self.reader.read_region(self.src, a, b, spans=self._inside(a, b))
            else:
                self.reader.read_within(self.src, a, b, stmt, in_proof=kind == "proof", spans=self._inside(a, b),
                                        label_first=stmt.index not in self.explicit)
        self.cursor = max(self.cursor, b)

    def block_segment(self, kind: str, first: Block, last: Block, stmt: Statement | None) -> None:
        """``segment`` for the blocks ``first``..``last`` (``fyan.intake.plaintext.Segment``)."""
        if first.offsets is not None:
            self.segment(kind, *first.offsets, stmt)
            return
        starts = self.src.starts
        end = starts[last.end] if last.end < len(starts) else len(self.src.text)
        self.segment(kind, starts[first.start], end, stmt)

    def finish(self) -> None:
        """Read what is left after the last segment."""
        self.segment("text", self.stop, self.stop)


def read_tex(main: Path, *, source_root: Path | None = None, max_file_mib: float | None = None,
             tolerant: bool = False, origin: Path | None = None, boundary: Path | None = None) -> Catalogue:
    """Read the TeX document whose main file is ``main`` (following its ``\\input`` tree).

    Provenance paths are relative to ``source_root`` (default: ``main``'s folder); files are
    held to ``max_file_mib`` MiB each. ``tolerant``: malformed math and malformed environments are
    a warning each, not an error. A document without theorem-like environments is read again for
    statements under plain-text headings (``plain_headings``).
    ``origin``: the folder ``source_root`` was copied from (absolute include paths below it are
    read below ``source_root``); ``boundary``: the folder no include may leave (default: the Lake
    package holding ``main``, else ``source_root``).
    Returns a ``Catalogue``; raises ``InputError`` as described in the module docstring.
    """
    with paused_gc():
        return _read_tex(main, source_root, max_file_mib, tolerant, origin, boundary)


def _read_tex(main: Path, source_root: Path | None, max_file_mib: float | None, tolerant: bool,
              origin: Path | None = None, boundary: Path | None = None) -> Catalogue:
    main = main.resolve()
    root = (source_root or main.parent).resolve()
    reader = TexStatementReader(main, root, tolerant=tolerant, max_file_mib=max_file_mib, origin=origin,
                                boundary=boundary)
    reader.read_file(main)
    if not reader.statements:  # no theorem-like environment: statements under plain-text headings
        plain = TexStatementReader(main, root, tolerant=tolerant, max_file_mib=max_file_mib, plain_headings=True,
                                   origin=origin, boundary=boundary)
        plain.read_file(main)
        plain.plain_reader.finish()
        if plain.statements:
            return plain.catalogue()
    return reader.catalogue()
