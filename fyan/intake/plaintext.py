"""Statements written as text: a printed heading at the start of a block.

Shared by the Markdown reader (blocks from markdown-it) and the TeX reader's fallback for files
without theorem-like environments (blocks = paragraphs). A *block* is a paragraph, a heading, a
list, a quote, ... with its line range; a ``tex`` block is a region of LaTeX environments that
another reader reads (the TeX reader, through the caller). ``BlockReader.read`` walks the
blocks in order and calls back for every statement, proof and ``tex`` block, so the caller can
read the LaTeX inside each (labels, ``\\ref``) in document order.

What opens a statement: a block whose first line starts with a printed heading by the rule set
of ``fyan.intake.numbered.line_heading`` — emphasised (``**Theorem 1.**``, ``*Lemma 2* (Name).``;
in TeX ``\\textbf{Theorem 1.}``), plain (``Lemma (coeff_zero_of_lt)``, ``Theorem 2.1``,
``Claim.``), or a heading (``## Theorem 3``).

Where it ends:

* a paragraph statement runs on through the lists, displayed formulas (``$$``, ``\\[``, any
  ``\\begin{...}`` that is not a statement) and paragraphs starting in lower case ("where ...")
  that follow it, and through paragraphs in its own style (a statement set in italics,
  ``*...*``, goes on through the italic paragraphs after it); it ends at the next heading,
  statement, proof, ``tex`` block or rule, or at a blank-line-separated prose paragraph in
  another style. A heading with nothing after it on its line ("Lemma (coeff_zero_of_lt)" then a
  blank line) takes the next block as its statement; with no block to take, it is not a
  statement;
* a statement in a heading (``## Theorem 3``) runs to the next heading of the same or a higher
  level, statement, proof or ``tex`` block; a heading with nothing under it, or a bare one
  ("## Theorem") whose section holds a LaTeX environment, is a section title, not a statement;
* a quote is a statement on its own.

A proof opens with ``Proof.``, ``Proof)``, ``Proof:``, ``Proof of Theorem 2.``, ``Proof`` alone
on its line (emphasised or not), or a ``## Proof`` heading; it runs to its end mark (∎ □ ■
``$\\square$`` ``\\qed`` Q.E.D.), the next heading (for a proof in a heading: of the same or a
higher level), statement or ``tex`` block, and belongs to the statement it names ("Proof of
Lemma 2", "Proof of Lemma (name)") or the one before it.

Labels: an explicit anchor in the statement (``{#thm-main}``, ``<a id="thm-main">``; the caller
reads a ``\\label`` in it, which comes next), else, for a plain-text heading, the parenthesised
name when the heading has no number or the name is one word (``Lemma (coeff_zero_of_lt)`` →
``coeff_zero_of_lt``; ``Theorem 2 (Fermat)`` → ``Fermat``), else the printed name (``"Theorem
2.1"``; emphasised and Markdown headings are named by it, as in a printed document: ``**Lemma 2**
(Name).`` is ``Lemma 2``); the printed name, the name and the heading's slug (Markdown headings)
are labels too. A printed name or name given twice labels only its first statement
(a ``printed-twice`` warning).

References (``BlockReader.finish``, once every block of the document is read): links to an anchor
(Markdown), printed references by number (``by Lemma 2.1``, resolved by
``fyan.intake.numbered.resolve``) and by name (``Lemma (coeff_zero_of_lt)``), in the statement
and in its proof.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from fyan.errors import InputError
from fyan.intake.catalogue import IntakeWarning, LabelSite, ProofBlock, Provenance, Reference, Statement
from fyan.intake.numbered import STATEMENT_WORDS, LineHeading, find_references, line_heading, resolve

ANCHOR = re.compile(r"\{#([A-Za-z][\w:.-]*)\}|<a\s+(?:id|name)\s*=\s*[\"']([^\"']+)[\"']\s*/?>")
#: Emphasis that can set a heading apart: Markdown's, and TeX's font macros.
MARKDOWN_EMPHASIS = re.compile(r"^(\*\*|__|\*|_)(?P<inner>.+?)\1")
TEX_EMPHASIS = re.compile(r"^(?:\\(?:noindent|par|smallskip|medskip|bigskip)(?![A-Za-z@])\s*)*"
                          r"(?:\\(?:textbf|textit|emph|textsc|textsl)\s*\{(?P<inner>[^{}]+)\}"
                          r"|\{\\(?:bf|it|em|sc|sl|bfseries|itshape)\s+(?P<inner2>[^{}]+)\})")
_TEX_LEAD = re.compile(r"^(?:\\(?:noindent|par|smallskip|medskip|bigskip)(?![A-Za-z@])\s*)+")
END_MARK = re.compile(r"[∎□■◻☐]|\\(?:square|blacksquare|qed|qedsymbol|Box)\b|\bQ\.?E\.?D\.?")
_TERM = re.compile(r"\*\*([^*$]+)\*\*|__([^_$]+)__|(?<![*\w])\*([^*$]+)\*(?!\*)|(?<![_\w])_([^_$]+)_(?![_\w])")
#: A block that continues a statement: a displayed formula or a LaTeX environment (lists, align).
_DISPLAY = re.compile(r"^\s*(?:\$\$|\\\[|\\begin\s*\{)")
_ITALIC = re.compile(r"^(\*|_)(?!\1).+(?<!\s)\1[.,;:]?$", re.DOTALL)
_NAMED = re.compile(rf"\b(?P<word>{'|'.join(STATEMENT_WORDS)})\s*\((?P<name>[^()\s]+)\)")
#: Blocks that can be the statement under a heading line.
_BODY_KINDS = frozenset({"paragraph", "list", "quote", "table"})


@dataclass
class Block:
    """A block of a document: ``kind`` (heading, paragraph, list, quote, code, html, hr, table,
    or ``tex``: a region of LaTeX environments), its lines ``start`` (0-based) to ``end``
    (exclusive), its inline ``text`` (a heading's or paragraph's; a quote's first paragraph), a
    heading's ``level``, the anchors it links to with their lines (Markdown), and ``inside``:
    it starts inside a LaTeX environment opened before it (an ``align`` with a blank line in it),
    so it continues what precedes it."""

    kind: str
    start: int
    end: int
    text: str = ""
    level: int = 0
    links: list[tuple[str, int]] = field(default_factory=list)
    inside: bool = False
    offsets: tuple[int, int] | None = None  # a tex block: its character range


@dataclass
class Opening:
    """What opens a block: its ``heading`` and the text after it in the block (``rest``)."""

    heading: LineHeading
    rest: str
    plain: bool  # neither emphasised nor a Markdown heading


def slug(text: str) -> str:
    """GitHub-style heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = ANCHOR.sub("", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def paragraph_blocks(lines: list[str], first: int, last: int) -> list[Block]:
    """Lines ``first``..``last - 1`` split into paragraphs at blank lines (plain text, or TeX
    with its comments blanked, ``%`` kept: a line holding only a comment is not blank, and the
    ``%`` is left out of the block's text); a paragraph that starts with a ``\\section``-like
    command is a heading of its level."""
    blocks: list[Block] = []
    i = first
    while i < last:
        if not lines[i].strip():
            i += 1
            continue
        j = i
        while j < last and lines[j].strip():
            j += 1
        text = "\n".join(t for t in (re.sub(r"(?<!\\)%\s*$", "", line).strip() for line in lines[i:j]) if t)
        sec = re.match(r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\s*\{", text)
        if sec:
            level = ["part", "chapter", "section", "subsection", "subsubsection", "paragraph"].index(sec.group(1)) + 1
            blocks.append(Block("heading", i, j, text, level=level))
        else:
            blocks.append(Block("paragraph", i, j, text))
        i = j
    return blocks


def opening(block: Block, *, tex: bool = False) -> Opening | None:
    """The printed statement or proof heading ``block`` opens with, if any (see module
    docstring); ``tex``: the block is TeX (font macros are its emphasis)."""
    text = block.text.strip()
    if block.kind == "heading":
        text = ANCHOR.sub("", text).strip()
        if tex:
            m = re.match(r"\\[A-Za-z]+\*?\s*\{(.*)\}", text, re.DOTALL)
            text = m.group(1).strip() if m else text
        h = line_heading(text)
        return Opening(h, "", False) if h is not None else None
    if block.kind not in ("paragraph", "quote"):
        return None
    m = (TEX_EMPHASIS if tex else MARKDOWN_EMPHASIS).match(text)
    if m is None:
        if tex:
            text = _TEX_LEAD.sub("", text)
        h = line_heading(text)
        return Opening(h, text[h.end:], True) if h is not None else None
    inner = (m.group("inner") or m.groupdict().get("inner2") or "").strip()
    h = line_heading(inner)
    if h is None:
        return None
    if h.end == len(inner) and inner[-1:] not in ".:—–)":
        # "**Theorem 1** (Name)." : the title and the full stop come after the emphasis
        joined = inner + text[m.end():]
        after = line_heading(joined)
        if after is not None and after.kind == h.kind and after.end > len(inner):
            return Opening(after, joined[after.end:], False)
    return Opening(h, text[m.end():], False)


def _is_identifier(name: str) -> bool:
    return re.fullmatch(r"[^\s,;]+", name) is not None


@dataclass
class _Extent:
    stmt: Statement
    rel: str
    lines: list[str]
    blocks: list[Block]
    in_proof: bool
    quiet: bool = False  # a printed reference matching no statement is no warning here


#: ``segment(kind, first, last, statement)``: ``kind`` is ``statement``, ``proof`` or ``tex``;
#: ``first``..``last`` the blocks (inclusive); ``statement`` the one they belong to (None for tex).
Segment = Callable[[str, Block, Block, Statement | None], None]


class BlockReader:
    """Reads statements and proofs from blocks into shared ``statements``, ``labels`` and
    ``warnings`` (those of the TeX reader that reads the LaTeX in between, so statements of
    both kinds are one list in document order). ``slugs``: headings that are not statements
    register their GitHub-style slug as a label (Markdown); ``markdown``: definitions take their
    terms from Markdown emphasis, and emphasis is Markdown's (else TeX's font macros)."""

    def __init__(self, statements: list[Statement], labels: dict[str, LabelSite], warnings: list[IntakeWarning],
                 *, markdown: bool = True, slugs: bool = True) -> None:
        self.statements = statements
        self.labels = labels
        self.warnings = warnings
        self.markdown = markdown
        self.slugs = slugs
        self.extents: list[_Extent] = []
        #: indices of the statements labelled by an explicit anchor (not a printed name)
        self.explicit: set[int] = set()

    def _add_label(self, label: str, rel: str, line: int, index: int | None) -> None:
        if label in self.labels:
            first = self.labels[label]
            if index is None or first.statement_index is None:
                return  # a repeated section name: links go to the first, like on GitHub
            raise InputError(
                f"{rel}:{line}: label {label!r} is defined twice (first at {first.file}:{first.line})",
                hint="rename one of the anchors or numbers",
            )
        self.labels[label] = LabelSite(label=label, file=rel, line=line, statement_index=index)

    def read(self, rel: str, lines: list[str], blocks: list[Block], segment: Segment | None = None) -> None:
        """Read the statements and proofs of ``blocks`` (in line order) of the file ``rel``
        whose text is ``lines``. Raises ``InputError`` for an anchor given to two statements."""
        openings = [opening(b, tex=not self.markdown) if b.kind != "tex" else None for b in blocks]
        n = len(blocks)

        def source(first: int, last: int) -> tuple[str, Provenance]:
            a, b = blocks[first].start, blocks[last].end
            while b > a + 1 and not lines[b - 1].strip():
                b -= 1
            return "\n".join(lines[a:b]), Provenance(file=rel, line_start=a + 1, line_end=b)

        def stops(j: int) -> bool:
            return blocks[j].kind in ("tex", "hr") or openings[j] is not None

        i = 0
        while i < n:
            block, op = blocks[i], openings[i]
            if block.kind == "tex":
                if segment is not None:
                    segment("tex", block, block, None)
                i += 1
                continue
            if op is not None and op.heading.kind == "proof":
                last = self._proof_extent(blocks, openings, i, lines)
                if last is None:
                    op = None
                else:
                    self._proof(op.heading, rel, lines, i, last, blocks, source, segment)
                    i = last + 1
                    continue
            last = self._statement_extent(blocks, openings, i, stops) if op is not None else None
            if last is None:
                if block.kind == "heading" and self.slugs:
                    self._add_label(slug(block.text), rel, block.start + 1, None)
                i += 1
                continue
            stmt = self._statement(op, rel, i, last, blocks, source)
            self.extents.append(_Extent(stmt, rel, lines, blocks[i : last + 1], False))
            if segment is not None:
                segment("statement", blocks[i], blocks[last], stmt)
            i = last + 1

    def _statement_extent(self, blocks: list[Block], openings: list[Opening | None], i: int,
                          stops: Callable[[int], bool]) -> int | None:
        """Index of the last block of the statement opening at ``i``; None: not a statement."""
        block, op, n = blocks[i], openings[i], len(blocks)
        if block.kind == "heading":
            j = i + 1
            while j < n and not stops(j) and not (blocks[j].kind == "heading" and blocks[j].level <= block.level):
                j += 1
            bare = op.heading.number is None and op.heading.title is None
            if j == i + 1 or (bare and j < n and blocks[j].kind == "tex"):
                return None  # nothing under it, or a section named "Theorem" holding the environment
            return j - 1
        if block.kind == "quote":
            return i
        last = i
        body = ANCHOR.sub("", op.rest).strip(" \t\n.:—–")
        if not body:  # the heading alone: its statement is the next block
            if i + 1 >= n or stops(i + 1) or (blocks[i + 1].kind not in _BODY_KINDS and not blocks[i + 1].inside):
                return None
            last = i + 1
            body = blocks[last].text.strip()
        italic = _ITALIC.match(body) is not None
        while last + 1 < n and not stops(last + 1):
            nxt = blocks[last + 1]
            text = nxt.text.strip()
            if not (nxt.inside or nxt.kind == "list" or _DISPLAY.match(text or "")
                    or (nxt.kind == "paragraph" and text[:1].islower())
                    or (italic and nxt.kind == "paragraph" and _ITALIC.match(text))):
                break
            last += 1
        return last

    def _proof_extent(self, blocks: list[Block], openings: list[Opening | None], i: int,
                      lines: list[str]) -> int | None:
        """Index of the last block of the proof opening at ``i``; None: a proof heading with
        nothing under it (a section title)."""
        block, n = blocks[i], len(blocks)
        last = i
        while last + 1 < n and not END_MARK.search("\n".join(lines[blocks[last].start : blocks[last].end])):
            nxt = blocks[last + 1]
            if nxt.kind == "tex" or openings[last + 1] is not None:
                break
            if nxt.kind == "heading" and (block.kind != "heading" or nxt.level <= block.level):
                break
            last += 1
        if block.kind == "heading" and last == i:
            return None
        return last

    def _proof(self, heading: LineHeading, rel: str, lines: list[str], i: int, last: int, blocks: list[Block],
               source: Callable[[int, int], tuple[str, Provenance]], segment: Segment | None) -> None:
        block = blocks[i]
        target = self._named(heading.target or "")
        if target is None and self.statements:
            target = self.statements[-1]
            while target.parent is not None:  # a claim nested in a proof: the proof after it is the outer one's
                target = self.statements[target.parent]
        where = f"{rel}:{block.start + 1}"
        if target is None:
            self.warnings.append(IntakeWarning(code="proof", where=where,
                                               message="proof with no statement before it; ignored"))
            return
        if target.proof is not None:
            self.warnings.append(IntakeWarning(code="proof", where=where,
                                               message=f"second proof for {target.display}; ignored"))
            return
        body, prov = source(i, last)
        target.proof = ProofBlock(body=body, provenance=prov)
        self.extents.append(_Extent(target, rel, lines, blocks[i : last + 1], True))
        if segment is not None:
            segment("proof", blocks[i], blocks[last], target)

    def _named(self, target: str) -> Statement | None:
        """The statement a proof heading names ("Proof of Lemma 2.1", "Proof of Lemma (name)")."""
        for _, word, number in find_references(target):
            label = resolve(word, number, self.labels, self._by_number(), self.statements)
            if label is not None:
                return self.statements[self.labels[label].statement_index]
        for m in _NAMED.finditer(target):
            site = self.labels.get(m.group("name"))
            if site is not None and site.statement_index is not None:
                return self.statements[site.statement_index]
        return None

    def _by_number(self) -> dict[str, list[int]]:
        by_number: dict[str, list[int]] = {}
        for s in self.statements:
            if s.number:
                by_number.setdefault(s.number, []).append(s.index)
        return by_number

    def _statement(self, op: Opening, rel: str, i: int, last: int, blocks: list[Block],
                   source: Callable[[int, int], tuple[str, Provenance]]) -> Statement:
        h = op.heading
        block = blocks[i]
        body, prov = source(i, last)
        index = len(self.statements)
        anchors = [a or b for a, b in ANCHOR.findall(body)]
        names = anchors + ([slug(block.text)] if block.kind == "heading" and self.slugs else [])
        name = h.title if h.title and op.plain and (h.number is None or _is_identifier(h.title)) else None
        printed = h.label
        for which in ("printed", "name"):
            value = printed if which == "printed" else name
            if value is not None and value in self.labels and value not in names:
                self.warnings.append(IntakeWarning(
                    code="printed-twice", where=f"{rel}:{prov.line_start}",
                    message=f"'{value}' names two statements (first at {self.labels[value].file}:"
                    f"{self.labels[value].line}); it labels only the first"))
                if which == "printed":
                    printed = None
                else:
                    name = None
        all_labels = list(dict.fromkeys(names + [x for x in (name, printed) if x]))
        terms: list[str] = []
        if h.kind == "definition" and self.markdown:
            texts = [op.rest] + [b.text for b in blocks[i + 1 : last + 1]]
            for t in _TERM.findall("\n".join(texts)):
                term = " ".join(next(x for x in t if x).split()).strip(" .,;:").lower()
                if len(term) >= 3 and term not in terms:
                    terms.append(term)
        stmt = Statement(index=index, kind=h.kind, env=h.word.lower(), label=anchors[0] if anchors else (name or printed),
                         labels=all_labels, title=h.title, number=h.number, body=body, provenance=prov,
                         defined_terms=terms)
        self.statements.append(stmt)
        if anchors:
            self.explicit.add(index)
        for label in all_labels:
            self._add_label(label, rel, prov.line_start, index)
        return stmt

    def add_extent(self, stmt: Statement, rel: str, lines: list[str], in_proof: bool) -> None:
        """Also read the printed references of ``stmt`` (or its proof) as another reader
        delimited it (a LaTeX environment in a Markdown file); one that matches no statement is
        left alone (LaTeX numbers what the author did not print)."""
        prov = stmt.proof.provenance if in_proof else stmt.provenance
        block = Block("tex", prov.line_start - 1, prov.line_end)
        self.extents.append(_Extent(stmt, rel, lines, [block], in_proof, quiet=True))

    def finish(self) -> None:
        """References of every statement and proof read (see module docstring); a printed
        reference matching no statement is a ``printed-reference`` warning."""
        by_number = self._by_number()
        unresolved: dict[str, str] = {}
        for ext in self.extents:
            stmt, in_proof = ext.stmt, ext.in_proof
            for b, block in enumerate(ext.blocks):
                for anchor, line in block.links:
                    stmt.references.append(Reference(label=anchor, macro="link", file=ext.rel, line=line + 1,
                                                     in_proof=in_proof))
                for n in range(block.start, block.end):
                    text = ext.lines[n]
                    own = b == 0 and n == block.start and not in_proof and not ext.quiet  # its own heading
                    for offset, word, number in find_references(text):
                        if own and offset < 8:
                            continue
                        label = resolve(word, number, self.labels, by_number, self.statements)
                        if label is None:
                            if not ext.quiet:
                                unresolved.setdefault(f"{word} {number}", f"{ext.rel}:{n + 1}")
                        elif label not in stmt.labels:
                            stmt.references.append(Reference(label=label, macro="text", file=ext.rel, line=n + 1,
                                                             in_proof=in_proof))
                    for m in _NAMED.finditer(text):
                        site = self.labels.get(m.group("name"))
                        if own and m.start() < 8 or site is None or site.statement_index is None:
                            continue
                        if m.group("name") not in stmt.labels:
                            stmt.references.append(Reference(label=m.group("name"), macro="text", file=ext.rel,
                                                             line=n + 1, in_proof=in_proof))
        for name, where in unresolved.items():
            self.warnings.append(IntakeWarning(code="printed-reference", where=where,
                                               message=f"'{name}' matches no statement of the document; no edge"))
