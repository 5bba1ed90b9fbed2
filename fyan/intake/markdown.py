"""Markdown intake: Markdown as people write it for MathJax/KaTeX renderers (markdown-it-py).

The document is parsed with markdown-it-py (CommonMark) for its block structure and line map;
every statement's text is taken **verbatim from the source lines**, so ``$…$``, ``$$…$$`` and
``\\[…\\]`` math is kept exactly as written (markdown-it never rewrites it). Statements come in
three shapes, freely mixed in one file, read in document order into one list:

* **LaTeX environments**: ``\\begin{theorem}[Name] … \\end{theorem}`` and
  ``\\begin{proof} … \\end{proof}`` wherever they stand outside code (fenced and indented code
  blocks, code spans, HTML comments). They are read by the TeX reader itself
  (``fyan.intake.tex.TexStatementReader``, through its ``TexSource`` seam), so a ``.md`` file and
  the same text as ``.tex`` give the same statements: the same environment names and
  ``\\newtheorem`` rules (the standard names when the file declares none), ``\\label``,
  ``\\ref``/``\\eqref``, lists, nested claims, malformed math and malformed environments
  (``tolerant``). An indented block inside an open environment is its content, not code. A
  ``%`` starts a LaTeX comment inside an environment, as in LaTeX; outside, it is a percent sign.
* **Emphasised or heading names**: a paragraph that starts with ``**Theorem 1.**``,
  ``**Lemma 2.3** (Name).``, ``*Definition 4.*``, or a heading that is one (``## Theorem 2``).
* **Plain-text headings**: a paragraph whose first line is ``Lemma (coeff_zero_of_lt)``,
  ``Definition (krullDim)``, ``Theorem 2.1``, or ``Lemma 3. Let …``; ``Proof.`` / ``Proof)``
  lines open proofs.

Where the last two end, their labels (an anchor ``{#thm-main}`` or ``<a id="thm-main"></a>``, else
the parenthesised name, else the printed name) and proofs: ``fyan.intake.plaintext``. References:
links to an anchor (``[Theorem 2](#thm-fermat)``), printed references (``by Lemma 2.1``, ``Lemma
(coeff_zero_of_lt)``), and TeX references (``\\ref{x}``, ``\\eqref{x}``) anywhere in a statement or
proof, whatever its shape (in a LaTeX environment, a printed reference that matches no statement
is no warning: LaTeX numbers what the author did not print). Headings that are not statements register their GitHub-style slugs as labels outside any
statement, so links to sections are not unknown.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from pathlib import Path

from markdown_it import MarkdownIt

from fyan.errors import InputError
from fyan.intake.catalogue import Catalogue, HeadingStack, IntakeWarning, Statement
from fyan.intake.plaintext import Block, BlockReader, opening
from fyan.intake.tex import SegmentWalk, TexSource, TexStatementReader
from fyan.intake.texscan import EnvSpan, blank_spans, line_of, line_starts

_BEGIN_END = re.compile(r"\\(begin|end)\s*\{([^{}\n]*)\}")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_BACKTICKS = re.compile(r"`+")
_KINDS = {"heading_open": "heading", "paragraph_open": "paragraph", "bullet_list_open": "list",
          "ordered_list_open": "list", "blockquote_open": "quote", "fence": "code", "code_block": "code",
          "html_block": "html", "hr": "hr", "table_open": "table"}


def _parse(text: str) -> list:
    return MarkdownIt("commonmark").parse(text)


def _blocks(tokens: list) -> list[Block]:
    """The top-level blocks of a parsed text with their inline text and the anchors they link to."""
    blocks: list[Block] = []
    current: Block | None = None
    for tok in tokens:
        if tok.level == 0 and tok.type in _KINDS and tok.map is not None:
            current = Block(_KINDS[tok.type], tok.map[0], tok.map[1],
                            level=int(tok.tag[1]) if tok.type == "heading_open" else 0)
            blocks.append(current)
            continue
        if current is None or tok.type != "inline":
            continue
        if not current.text and current.kind in ("heading", "paragraph", "quote"):
            current.text = tok.content
        line = tok.map[0] if tok.map else current.start
        for child in tok.children or []:
            if child.type == "link_open":
                href = str(child.attrs.get("href", ""))
                if href.startswith("#") and len(href) > 1:
                    current.links.append((href[1:], line))
    return blocks


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Inline code spans (a run of backticks to the next run of the same length, within a
    paragraph), as character ranges."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        m = _BACKTICKS.search(text, pos)
        if m is None:
            return spans
        run = m.group(0)
        close = re.compile(rf"(?<!`){run}(?!`)").search(text, m.end())
        if close is None or re.search(r"\n[ \t]*\n", text[m.end() : close.start()]):
            pos = m.end()
            continue
        spans.append((m.start(), close.end()))
        pos = close.end()


def visible_text(text: str, tokens: list | None = None) -> str:
    """``text`` with what is not content blanked (offsets and lines kept): fenced code blocks,
    HTML comments, code spans, and indented code blocks that are not inside a LaTeX environment
    (an indented paragraph between ``\\begin{proof}`` and ``\\end{proof}`` is the proof's text:
    pandoc reads it so). ``tokens``: markdown-it's parse of ``text``, when already made."""
    starts = line_starts(text)

    def offset(line: int) -> int:
        return starts[line] if line < len(starts) else len(text)

    fences: list[tuple[int, int]] = []
    indented: list[tuple[int, int]] = []
    for tok in tokens if tokens is not None else _parse(text):
        if tok.type in ("fence", "code_block") and tok.map is not None:
            (fences if tok.type == "fence" else indented).append((offset(tok.map[0]), offset(tok.map[1])))
    out = blank_spans(text, fences)
    out = blank_spans(out, [(m.start(), m.end()) for m in _HTML_COMMENT.finditer(out)])
    out = blank_spans(out, _code_spans(out))
    if not indented:
        return out
    marks = list(_BEGIN_END.finditer(out))
    depth, j, code = 0, 0, []
    for a, b in sorted(indented):
        while j < len(marks) and marks[j].start() < a:
            depth = depth + 1 if marks[j].group(1) == "begin" else max(0, depth - 1)
            j += 1
        if depth == 0:  # code: what it shows is not read
            code.append((a, b))
            while j < len(marks) and marks[j].start() < b:
                j += 1
    return blank_spans(out, code)


def _decode(path: Path, rel: str, warnings: list[IntakeWarning]) -> str:
    data = path.read_bytes()
    if b"\x00" in data[:65536]:
        raise InputError(f"{rel}: binary file, not Markdown", hint="give the .md source of the document")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        warnings.append(IntakeWarning(code="encoding", where=f"{rel}:{line}", message="file is not UTF-8; read as Latin-1"))
        text = data.decode("latin-1")
    if not text.strip():
        raise InputError(f"{rel}: the file is empty", hint="give the Markdown document with its statements")
    return text


def read_markdown(path: Path, *, source_root: Path | None = None, tolerant: bool = False) -> Catalogue:
    """Read the Markdown document at ``path`` into a ``Catalogue`` (see the module docstring).

    ``tolerant`` (``[intake] tolerant``): malformed LaTeX environments and malformed math in
    them are a warning each (the structure read anyway: a statement never closed ends at the
    next statement, proof or heading), not an error. Raises ``InputError`` for a binary or empty
    file, an anchor or label given to two statements, and (unless tolerant) malformed
    environments or math, each named with its line."""
    path = path.resolve()
    root = (source_root or path.parent).resolve()
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.name
    reader = TexStatementReader(path, root, tolerant=tolerant, follow_includes=False)
    text = _decode(path, rel, reader.warnings)
    reader.files.append(rel)
    lines = text.split("\n")
    src = TexSource(path, rel, text)
    tokens = _parse(text)
    visible = visible_text(text, tokens)
    defs = reader.prepare(src, visible)

    # LaTeX environments, paired once over the whole file; a statement never closed ends at the
    # next Markdown statement, proof or heading too
    boundaries = [src.starts[b.start] for b in _blocks(tokens)
                  if b.kind == "heading" or opening(b) is not None]
    spans = reader.environments(src, 0, len(text), boundaries)
    # outside LaTeX environments a % is a percent sign ("50% of primes, by \ref{a}"), not a comment
    src.content = _percent_outside(src.content, blank_spans(visible, [(d.start, d.end) for d in defs]), spans)
    regions = _regions(spans, reader)
    blocks = _blocks(_parse(blank_spans(text, [(r.begin, r.end) for r in regions])) if regions else tokens)
    _mark_inside(blocks, spans, regions, src.starts)
    for r in regions:
        blocks.append(Block("tex", line_of(src.starts, r.begin) - 1, line_of(src.starts, r.end - 1),
                            offsets=(r.begin, r.end)))
    blocks.sort(key=lambda b: (b.start, b.kind == "tex"))

    # every character is read once, in document order: statement environments by the TeX
    # reader, Markdown statements and proofs for their labels and references, the rest for labels
    statements = BlockReader(reader.statements, reader.labels, reader.warnings, markdown=True, slugs=True)
    walk = SegmentWalk(reader, src, spans, 0, len(text), [r.begin for r in regions], statements.explicit)
    statements.read(rel, lines, blocks, walk.block_segment)
    walk.finish()
    for s in reader.statements:  # printed references ("by Theorem 3") inside LaTeX environments too
        if s.body.lstrip().startswith("\\begin") and s.parent is None:
            statements.add_extent(s, rel, lines, in_proof=False)
        if s.proof is not None and s.proof.body.lstrip().startswith("\\begin") and s.parent is None:
            statements.add_extent(s, rel, lines, in_proof=True)
    statements.finish()
    _sections(reader.statements, _blocks(tokens))
    return reader.catalogue().model_copy(update={"format": "markdown"})


def _sections(statements: list[Statement], blocks: list[Block]) -> None:
    """Each statement's ``section``: the Markdown headings open at its first line (a heading
    that is itself a statement's, ``## Theorem 3``, is not a section)."""
    own = {s.provenance.line_start for s in statements}
    headings = [b for b in blocks if b.kind == "heading" and b.start + 1 not in own]
    stack, k = HeadingStack(), 0
    for s in sorted(statements, key=lambda s: s.provenance.line_start):
        while k < len(headings) and headings[k].start + 1 < s.provenance.line_start:
            stack.enter(headings[k].level, " ".join(headings[k].text.replace("*", "").split()) or "(untitled)")
            k += 1
        s.section = stack.path


def _percent_outside(content: str, plain: str, spans: list[EnvSpan]) -> str:
    """``content`` (LaTeX's reading: ``%`` comments blanked) inside the outermost environments,
    ``plain`` (Markdown's: ``%`` is a character) outside them."""
    out: list[str] = []
    pos = 0
    for s in spans:
        if s.parent is None:
            out += [plain[pos : s.begin], content[s.begin : s.end]]
            pos = s.end
    out.append(plain[pos:])
    return "".join(out)


def _regions(spans: list[EnvSpan], reader: TexStatementReader) -> list[EnvSpan]:
    """The outermost environments that are or hold a statement or a proof (in order)."""
    holds = [reader.starts_statement(s.name) for s in spans]
    for i in range(len(spans) - 1, -1, -1):  # children come after their parent
        if holds[i] and spans[i].parent is not None:
            holds[spans[i].parent] = True
    return [s for i, s in enumerate(spans) if s.parent is None and holds[i]]


def _mark_inside(blocks: list[Block], spans: list[EnvSpan], regions: list[EnvSpan], starts: list[int]) -> None:
    """Mark the blocks that start inside an outermost environment opened in an earlier block
    (an ``align`` or ``enumerate`` with a blank line in it): they continue the block before."""
    taken = {id(r) for r in regions}
    ranges = [(line_of(starts, s.begin) - 1, line_of(starts, s.end - 1) - 1) for s in spans
              if s.parent is None and id(s) not in taken]  # in order, not overlapping
    firsts = [a for a, _ in ranges]
    for block in blocks:
        k = bisect_left(firsts, block.start) - 1  # the last one opened on an earlier line
        block.inside = k >= 0 and block.start <= ranges[k][1]
