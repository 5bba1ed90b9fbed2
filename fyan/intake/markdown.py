"""Markdown intake: statements with printed labels, proofs and references (markdown-it-py).

The document is parsed once with markdown-it-py (CommonMark); Fyan uses the block structure
and the line map it gives, and takes every statement's text **verbatim from the source lines**,
so ``$…$`` and ``$$…$$`` math is kept exactly as written (markdown-it never rewrites it).

What counts as a statement:

* a paragraph (or a block quote) that starts with an emphasised printed name —
  ``**Theorem 1.**``, ``**Lemma 2.3** (Name).``, ``*Definition 4.*``, ``__Claim.__``; it runs on
  through the lists and displayed formulas (``$$``/``\\[``) that follow it, and through
  paragraphs starting in lower case ("where ..."), up to the next prose paragraph;
* a heading that is a printed name (``## Theorem 2 (Fermat)``); it runs to the next heading of
  the same or a higher level, statement or proof.

A proof is a paragraph starting with ``*Proof.*`` (or ``**Proof.**``, ``Proof of Theorem 2.``);
it runs to its end mark (∎ □ ■ ``$\\square$`` ``$\\blacksquare$`` ``\\qed`` Q.E.D.) or the next
heading or statement, and belongs to the statement it names or the one before.

Labels: the printed name (``"Theorem 1"``), plus explicit anchors written in the statement —
``{#thm-fermat}`` after the name or heading, ``<a id="thm-fermat"></a>`` — and the GitHub-style
slug of a statement heading. The first explicit anchor is the statement's main label (its unit
id), else the printed name. Headings that are not statements register their slugs as labels
outside any statement, so links to sections are not unknown.

References: links to an anchor (``[Theorem 2](#thm-fermat)``, reference-style links too; an
anchor defined nowhere is an unknown label, like a TeX ``\\ref``) and printed references by
number (``by Lemma 2.1``), resolved like in PDFs (``fyan.intake.numbered``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

from fyan.errors import InputError
from fyan.intake.catalogue import Catalogue, IntakeWarning, LabelSite, ProofBlock, Provenance, Reference, Statement
from fyan.intake.numbered import PROOF, Heading, find_references, parse_heading, resolve

_ANCHOR = re.compile(r"\{#([A-Za-z][\w:.-]*)\}|<a\s+(?:id|name)\s*=\s*[\"']([^\"']+)[\"']\s*/?>")
_EMPHASIS = re.compile(r"^(\*\*|__|\*|_)(.+?)\1")
_END_MARK = re.compile(r"[∎□■◻☐]|\\(?:square|blacksquare|qed|qedsymbol|Box)\b|\bQ\.?E\.?D\.?")
_TERM = re.compile(r"\*\*([^*$]+)\*\*|__([^_$]+)__|(?<![*\w])\*([^*$]+)\*(?!\*)|(?<![_\w])_([^_$]+)_(?![_\w])")
_DISPLAY = re.compile(r"^\s*(?:\$\$|\\\[|\\begin\{(?:equation|align|gather|multline)\*?\})")


@dataclass
class _Block:
    kind: str  # heading, paragraph, list, quote, code, html, hr, table
    start: int  # 0-based first line
    end: int  # 0-based line after the last
    text: str = ""  # inline content of a heading/paragraph (first paragraph of a quote)
    level: int = 0  # heading level
    links: list[tuple[str, int]] = field(default_factory=list)  # (anchor, 0-based line)


def _slug(text: str) -> str:
    """GitHub-style heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = _ANCHOR.sub("", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _blocks(text: str) -> list[_Block]:
    tokens = MarkdownIt("commonmark").parse(text)
    blocks: list[_Block] = []
    kinds = {"heading_open": "heading", "paragraph_open": "paragraph", "bullet_list_open": "list",
             "ordered_list_open": "list", "blockquote_open": "quote", "fence": "code", "code_block": "code",
             "html_block": "html", "hr": "hr", "table_open": "table"}
    current: _Block | None = None
    for tok in tokens:
        if tok.level == 0 and tok.type in kinds and tok.map is not None:
            current = _Block(kinds[tok.type], tok.map[0], tok.map[1],
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


def _statement_heading(block: _Block) -> tuple[Heading, str] | None:
    """The printed heading that opens ``block`` and the text after it, if any."""
    text = block.text.strip()
    if block.kind == "heading":
        h = parse_heading(_ANCHOR.sub("", text).strip())
        return (h, "") if h is not None else None
    if block.kind not in ("paragraph", "quote"):
        return None
    m = _EMPHASIS.match(text)
    if m is None:
        return None
    inner = m.group(2).strip()
    h = parse_heading(inner)
    if h is not None and h.end == len(inner) and inner[-1:] not in ".:—–":
        # "**Theorem 1** (Name)." : the title and the full stop come after the emphasis
        joined = inner + text[m.end():]
        after = parse_heading(joined)
        if after is not None and after.end > len(inner):
            return after, joined[after.end:]
    if h is None:
        return None
    return h, text[m.end():]


def _is_proof(block: _Block) -> re.Match | None:
    if block.kind != "paragraph":
        return None
    text = block.text.strip()
    m = _EMPHASIS.match(text)
    head = (m.group(2) + text[m.end():]) if m else text
    return PROOF.match(head.strip())


def read_markdown(path: Path, *, source_root: Path | None = None) -> Catalogue:
    """Read the Markdown document at ``path`` into a ``Catalogue`` (see the module docstring).

    Raises ``InputError`` for a binary or empty file."""
    path = path.resolve()
    root = (source_root or path.parent).resolve()
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.name
    data = path.read_bytes()
    warnings: list[IntakeWarning] = []
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
    lines = text.split("\n")
    blocks = _blocks(text)

    statements: list[Statement] = []
    labels: dict[str, LabelSite] = {}
    by_number: dict[str, list[int]] = {}
    extents: list[tuple[Statement, int, int, bool]] = []  # statement, first block, last block, proof
    heads = [_statement_heading(b) for b in blocks]
    proofs = [_is_proof(b) for b in blocks]

    def source(first: int, last: int) -> tuple[str, Provenance]:
        a, b = blocks[first].start, blocks[last].end
        while b > a + 1 and not lines[b - 1].strip():
            b -= 1
        return "\n".join(lines[a:b]), Provenance(file=rel, line_start=a + 1, line_end=b)

    def add_label(label: str, line: int, index: int | None) -> None:
        if label in labels:
            first = labels[label]
            if index is None or first.statement_index is None:
                return  # a repeated section name: links go to the first, like on GitHub
            raise InputError(
                f"{rel}:{line}: label {label!r} is defined twice (first at {first.file}:{first.line})",
                hint="rename one of the anchors or numbers",
            )
        labels[label] = LabelSite(label=label, file=rel, line=line, statement_index=index)

    i = 0
    while i < len(blocks):
        block = blocks[i]
        head = heads[i]
        if proofs[i] is not None:
            last = i
            while last + 1 < len(blocks) and not _END_MARK.search("\n".join(lines[blocks[last].start:blocks[last].end])):
                nxt = last + 1
                if blocks[nxt].kind == "heading" or heads[nxt] is not None or proofs[nxt] is not None:
                    break
                last = nxt
            target = None
            for _, word, number in find_references(proofs[i].group("target") or ""):
                label = resolve(word, number, labels, by_number, statements)
                if label is not None:
                    target = statements[labels[label].statement_index]
                    break
            if target is None and statements:
                target = statements[-1]
            if target is None:
                warnings.append(IntakeWarning(code="proof", where=f"{rel}:{block.start + 1}",
                                              message="proof with no statement before it; ignored"))
            elif target.proof is not None:
                warnings.append(IntakeWarning(code="proof", where=f"{rel}:{block.start + 1}",
                                              message=f"second proof for {target.display}; ignored"))
            else:
                body, prov = source(i, last)
                target.proof = ProofBlock(body=body, provenance=prov)
                extents.append((target, i, last, True))
            i = last + 1
            continue
        if head is None:
            if block.kind == "heading":
                add_label(_slug(block.text), block.start + 1, None)
            i += 1
            continue
        h, _ = head
        last = i
        while last + 1 < len(blocks):
            nxt = blocks[last + 1]
            if heads[last + 1] is not None or proofs[last + 1] is not None or nxt.kind in ("hr",):
                break
            if block.kind == "heading":
                if nxt.kind == "heading" and nxt.level <= block.level:
                    break
            elif block.kind == "quote":
                break
            else:
                starts = nxt.text.lstrip()[:1]
                display = _DISPLAY.match(lines[nxt.start])
                if not (nxt.kind == "list" or display or (nxt.kind == "paragraph" and starts.islower())):
                    break
            last += 1
        body, prov = source(i, last)
        index = len(statements)
        anchors = [a or b for a, b in _ANCHOR.findall(body)]
        names = anchors + ([_slug(block.text)] if block.kind == "heading" else [])
        printed = h.label
        if printed is not None and printed in labels:
            warnings.append(IntakeWarning(code="printed-twice", where=f"{rel}:{prov.line_start}",
                                          message=f"'{printed}' is printed twice; the second is not a label"))
            printed = None
        all_labels = list(dict.fromkeys(names + ([printed] if printed else [])))
        terms: list[str] = []
        if h.kind == "definition":
            for t in _TERM.findall(head[1]):
                term = " ".join(next(x for x in t if x).split()).strip(" .,;:").lower()
                if len(term) >= 3 and term not in terms:
                    terms.append(term)
        stmt = Statement(index=index, kind=h.kind, env=h.word.lower(), label=(anchors[0] if anchors else printed),
                         labels=all_labels, title=h.title, number=h.number, body=body, provenance=prov,
                         defined_terms=terms)
        statements.append(stmt)
        for label in all_labels:
            add_label(label, prov.line_start, index)
        if h.number:
            by_number.setdefault(h.number, []).append(index)
        extents.append((stmt, i, last, False))
        i = last + 1

    unresolved: dict[str, int] = {}
    for stmt, first, last, in_proof in extents:
        for b in range(first, last + 1):
            block = blocks[b]
            for anchor, line in block.links:
                stmt.references.append(Reference(label=anchor, macro="link", file=rel, line=line + 1, in_proof=in_proof))
            for n in range(block.start, block.end):
                for offset, word, number in find_references(lines[n]):
                    if b == first and n == block.start and not in_proof and offset < 8:
                        continue  # the statement's own heading
                    label = resolve(word, number, labels, by_number, statements)
                    if label is None:
                        unresolved.setdefault(f"{word} {number}", n + 1)
                    elif label not in stmt.labels:
                        stmt.references.append(
                            Reference(label=label, macro="text", file=rel, line=n + 1, in_proof=in_proof)
                        )
    for name, line in unresolved.items():
        warnings.append(IntakeWarning(code="printed-reference", where=f"{rel}:{line}",
                                      message=f"'{name}' matches no statement of the document; no edge"))
    return Catalogue(source_root=str(root), format="markdown", main_file=rel, files=[rel], statements=statements,
                     labels=labels, warnings=warnings)
