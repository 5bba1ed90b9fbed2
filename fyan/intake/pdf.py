"""PDF intake: numbered statements, proofs and references found in the text layer (pypdf).

A PDF has no ``\\label``: statements are found by their printed headings at the start of a
line — ``Theorem 2.3.``, ``Lemma 4 (Name).``, ``Definition 1.2``, ``Corollary A.1:``,
``Claim.`` — and references by printed number in the text of statements and proofs (``by
Lemma 2.1``, ``Theorems 3 and 4``). A statement's label is its printed name (``"Theorem
2.3"``), so its unit id is ``theorem-2-3``.

How the text is read: pypdf extracts each page's text once, with a visitor that records where
each line starts (x, y) and the font of its first glyphs; the text is NFKC-normalised (ligatures
``ﬁ`` → ``fi``, math italic ``𝑚`` → ``m``). Provenance = physical page range, line numbers in
those pages' text and character offsets into them (see ``fyan.intake.catalogue``).

Heuristics, all deterministic:

* a margin key printed left of a column before a heading (showkeys' label keys) is cut off its
  line first; a heading whose name and number the text layer runs together ("Example1.2") is
  read; a footnote mark set small after a title is no part of it;
* a heading counts when its first glyphs are in a different font from the document's body
  text (bold ``Theorem``, italic ``Proof``), so a sentence that starts with ``Theorem 2.2, which
  states ...`` is not one; files without font information accept every heading;
* page furniture and floats are dropped from statement text and crossed like a page break:
  running heads (first lines repeated on three or more pages, digits ignored, or on two pages or
  set small above a wide gap), page numbers, footnotes (small lines at a page's foot, below a gap,
  starting near the body text's left edge) and floats (a caption "Figure 2.1:" / "Table 3." with
  its own lines and the figure or table lines beside it that are not running prose; a page with
  a caption and no running prose is a float page);
* a statement ends before the next statement, proof or section heading (a numbered heading in
  a statement heading's bold font at the start of a line counts even with text after it on the
  same line: amsart's run-in headings); a statement set in its own font (amsthm's italic
  theorems) runs while its lines keep that font — through displayed formulas, page breaks and
  its own paragraphs — and ends at a line of body text; a statement in the body font (a
  definition) ends at an indented new paragraph (after a displayed formula an unindented line
  goes on: "... define [display] Then ..."), at a block of prose set apart after a finished
  sentence (an epigraph), at an indented paragraph after a display, or at a vertical gap wider
  than 1.35 line spacings after a finished sentence — that last end is uncertain and gets a
  warning naming the page, as does a cut at ``MAX_STATEMENT_LINES`` lines; each column of a
  two-column page has its own margin; the statement's own font is read from its heading's line;
* any statement ends at a run-in block heading after a finished sentence ("Non-examples.",
  "Remark.", "Note:", "Exercise.", in any font): that block is not part of it; a statement much
  longer than the document's usual (6 times the median in lines, and 20 more) gets a warning;
* in a document without paragraph indents (parskip), a statement in the body font also ends
  after a display that ends a sentence when the prose below it (not "Then ...") is set lower
  than the display's own spacing — an uncertain end, with a warning;
* the body font is the most used upright regular font (a short paper can hold more italic
  theorem text than prose); the line spacing, in a short text, the smallest one found twice;
* lists belong to the statement that opens them; a sentence that starts at the margin or a
  paragraph indent after a finished list ends a statement in the body font (an uncertain end,
  with a warning), and a numbered run-in heading ("2.1.3. Bounds.") after a finished sentence
  ends any statement;
* the printed numbering is checked: a number skipped between two statements of one numbered
  part (one shared counter, or one counter per kind when numbers repeat) is a
  ``numbering-gap`` warning, a statement possibly missed;
* a proof (``Proof.``, ``Proof of Theorem 2.3.``) runs to its end mark (□ ∎ ■, Q.E.D.) or the
  next statement or section heading, and belongs to the statement it names or the one before;
* a definition's defined terms (for the Specifier's term edges) are the words it sets in the
  headings' bold font ("An integer n is **even** if ..."), connectives excepted; one broken
  across lines is joined as the document prints it elsewhere ("semi-/group" -> "semigroup",
  "well-/defined" -> "well-defined");
* references are read also in lower case for theorem-like names ("by lemma 3.8") and across a
  line break ("Lemma\n3.8").

Errors (``InputError``): not a PDF, damaged or truncated, encrypted with a password, no text
layer (a scan: run OCR first). Warnings: opened with an empty user password, pypdf's own
warnings (with the page), references matching no statement, a printed number used twice.
"""

from __future__ import annotations

import logging
import re
import statistics
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from fyan.errors import InputError
from fyan.intake.numbered import find_references, line_heading, resolve
from fyan.intake.catalogue import (
    Catalogue,
    IntakeWarning,
    LabelSite,
    ProofBlock,
    Provenance,
    Reference,
    Statement,
)

MAX_STATEMENT_LINES = 60
_SECTION = re.compile(
    r"^(?:(?:Chapter|CHAPTER|Section|SECTION|Part|PART|Appendix|APPENDIX)\s+[\dA-Z]+\b.*"
    r"|\d+(?:\.\d+)*\.?\s+[A-Z][^.!?]{0,90}"
    r"|References|REFERENCES|Bibliography|BIBLIOGRAPHY|Introduction|INTRODUCTION|Contents|Index|Acknowledgements?)$"
)
_END_MARK = re.compile(r"(?:[□∎■◻☐]|\bQ\.?E\.?D\.?)\s*$")
_CONTINUES = re.compile(r"(?:Then|Hence|Thus|Therefore|Consequently|Moreover|Furthermore|Conversely|Finally|Also|"
                        r"In (?:this case|particular|addition)|Under these|If so)\b")
_ITEM = re.compile(r"^\(?(?:[a-z]|[ivx]{1,4}|\d{1,2})[).]\s")
#: The start of a list item: an enumeration label, a description label in parentheses
#: ("(H1)"), or a bullet (the Computer Modern bullet decodes to U+0088 in some text layers).
_ITEM_START = re.compile(r"^(?:\(?(?:[a-z]|[ivx]{1,4}|\d{1,2})[).]|\([A-Z]{1,3}\d{0,2}\)|[•◦▪▸∙·\x88–∗*])\s")


@dataclass
class _Line:
    page: int  # 1-based
    no: int  # 1-based line number in the page text
    start: int  # offsets in the normalised page text
    end: int
    text: str
    x: float | None = None
    y: float | None = None
    font: str | None = None
    skip: bool = False  # page furniture (running head, page number, footnote) or a float
    runs: list[tuple[str, str | None]] = field(default_factory=list)  # (text, font) pieces
    run_sizes: list[float | None] = field(default_factory=list)  # the size (pt) of each of ``runs``
    key: str = ""  # a margin note printed left of the line's column (showkeys' label), cut off the line
    size: float | None = None  # font size (pt) of most of the line's characters
    furniture: str = ""  # why it is skipped: "head", "page number", "footnote", "float"


@dataclass
class _Heading:
    line: int  # index into the document's lines
    kind: str  # canonical kind, or "proof" / "section"
    word: str = ""
    number: str | None = None
    title: str | None = None
    target: str | None = None  # "Proof of ..." target text


@dataclass
class _Pages:
    texts: list[str] = field(default_factory=list)
    lines: list[_Line] = field(default_factory=list)
    fonts: Counter = field(default_factory=Counter)
    sizes: Counter = field(default_factory=Counter)  # characters by font size (pt, rounded to 0.1)
    warnings: list[IntakeWarning] = field(default_factory=list)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.name


class _PypdfWarnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def open_pdf(path: Path, rel: str, warnings: list[IntakeWarning]):
    """A ``pypdf.PdfReader`` for ``path``, decrypted when an empty password opens it.

    Raises ``InputError`` when the file is not a PDF, cannot be parsed (damaged, truncated) or
    needs a password."""
    import pypdf
    from pypdf.errors import DependencyError, PyPdfError

    with path.open("rb") as f:
        head = f.read(1024)
    if b"%PDF-" not in head:
        raise InputError(f"{rel}: not a PDF (no %PDF- header)", hint="give the PDF file itself, or the TeX source")
    try:
        reader = pypdf.PdfReader(path, strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except (DependencyError, NotImplementedError) as e:
                raise InputError(
                    f"{rel}: encrypted PDF that this installation cannot decrypt ({e})",
                    hint="decrypt it first, e.g. `qpdf --decrypt in.pdf out.pdf`, or give the TeX source",
                ) from None
            if opened == pypdf.PasswordType.NOT_DECRYPTED:
                raise InputError(
                    f"{rel}: encrypted PDF; it needs a password to open",
                    hint="decrypt it first, e.g. `qpdf --decrypt --password=... in.pdf out.pdf`",
                )
            warnings.append(IntakeWarning(code="pdf", where=rel, message="encrypted PDF opened with an empty user password"))
        _ = len(reader.pages)
    except InputError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, AttributeError) as e:
        raise InputError(
            f"{rel}: cannot read the PDF: {type(e).__name__}: {e}",
            hint="the file is damaged or truncated; download or export it again",
        ) from None
    return reader


def _read_pages(path: Path, rel: str) -> _Pages:
    """Extract, normalise and split every page into lines with geometry and fonts."""
    from pypdf.errors import PyPdfError

    out = _Pages()
    reader = open_pdf(path, rel, out.warnings)
    handler = _PypdfWarnings()
    logger = logging.getLogger("pypdf")
    logger.addHandler(handler)
    propagate = logger.propagate
    logger.propagate = False
    try:
        for number, page in enumerate(reader.pages, start=1):
            chunks: list[tuple[str, list, list, str | None, float | None]] = []

            def visit(text, cm, tm, font_dict, font_size, _chunks=chunks):
                font = font_dict.get("/BaseFont") if font_dict else None
                try:  # the size on the page: the font size scaled by the text and user matrices
                    size = abs(float(font_size) * (tm[3] * cm[3] + tm[2] * cm[1]))
                except (TypeError, ValueError, IndexError):
                    size = None
                _chunks.append((text, cm, tm, str(font) if font is not None else None, size))

            handler.messages.clear()
            try:
                raw = page.extract_text(visitor_text=visit)
            except (PyPdfError, ValueError, KeyError, TypeError, AttributeError) as e:
                raise InputError(
                    f"{rel}: page {number}: cannot extract its text: {type(e).__name__}: {e}",
                    hint="the file is damaged or truncated; download or export it again",
                ) from None
            for message in dict.fromkeys(handler.messages):
                out.warnings.append(IntakeWarning(code="pdf", where=f"{rel}: page {number}", message=f"pypdf: {message}"))
            _split_page(number, raw, chunks, out)
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
    return out


def _split_page(number: int, raw: str, chunks: list, out: _Pages) -> None:
    geometry: list[tuple[float | None, float | None, str | None]] = []
    runs: list[list[tuple[str, str | None]]] = [[]]
    run_sizes: list[list[float | None]] = [[]]
    sizes: list[Counter] = [Counter()]
    current: tuple[float | None, float | None, str | None] | None = None
    joined = "".join(c[0] for c in chunks)
    if joined == raw:
        for text, cm, tm, font, size in chunks:
            parts = text.split("\n")
            for i, part in enumerate(parts):
                if part:
                    runs[-1].append((part, font))
                    run_sizes[-1].append(size)
                    if size:
                        sizes[-1][round(size, 1)] += len(part.strip())
                        out.sizes[round(size, 1)] += len(part.strip())
                if current is None and part.strip():
                    x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
                    y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                    current = (x, y, font)
                    if len(part.strip()) > 30:  # a whole line of prose in one run is body text too
                        out.fonts[font] += len(part.strip())
                elif part.strip():
                    out.fonts[font] += len(part.strip())  # body font: text that does not start a line
                if i < len(parts) - 1:
                    geometry.append(current or (None, None, None))
                    runs.append([])
                    run_sizes.append([])
                    sizes.append(Counter())
                    current = None
    geometry.append(current or (None, None, None))
    texts = [unicodedata.normalize("NFKC", t) for t in raw.split("\n")]
    offset = 0
    for no, text in enumerate(texts, start=1):
        x, y, font = geometry[no - 1] if no - 1 < len(geometry) else (None, None, None)
        size = sizes[no - 1].most_common(1)[0][0] if no - 1 < len(sizes) and sizes[no - 1] else None
        out.lines.append(_Line(number, no, offset, offset + len(text), text, x, y, font,
                               runs=runs[no - 1] if no - 1 < len(runs) else [], size=size,
                               run_sizes=run_sizes[no - 1] if no - 1 < len(run_sizes) else []))
        offset += len(text) + 1
    out.texts.append("\n".join(texts))


_CAPTION = re.compile(r"^(?:Figure|FIGURE|Fig\.|Table|TABLE|Algorithm|Listing)\s+"
                      r"(?:[A-Z]\.)?\d+(?:\.\d+)*[a-z]?\s*[.:](?:\s|$)")


def _body_size(pages: _Pages) -> float | None:
    return pages.sizes.most_common(1)[0][0] if pages.sizes else None


def _small(line: _Line, body: float | None) -> bool:
    return line.size is not None and body is not None and line.size < 0.92 * body


def _mark_furniture(pages: _Pages, gap: float | None) -> None:
    """Mark page furniture and floats as ``skip`` (with ``furniture`` saying which):

    * running heads: a page's first line repeated on three or more pages (digits ignored), or on
      two pages or set smaller than the body text when a wide gap (1.8 line spacings) follows it;
      a roman or arabic page number alone at the top or bottom of a page;
    * footnotes: the lines at the bottom of a page set smaller than the body text, below a gap,
      starting near the column's margin (small prose set far in is an epigraph, not furniture);
    * floats: a caption ("Figure 2.1:", "Table 3.", "FIGURE 1.") with the lines of its own
      paragraph, and the figure or table it belongs to: the lines next to it that are not running
      prose at the column's margin, up to a gap of 2.4 line spacings (a float page: all of it).
    """
    body = _body_size(pages)
    by_page: dict[int, list[_Line]] = {}
    for line in pages.lines:
        if line.text.strip():
            by_page.setdefault(line.page, []).append(line)

    def wide_after(ls: list[_Line], k: int, factor: float) -> bool:
        if k + 1 >= len(ls) or gap is None or ls[k].y is None or ls[k + 1].y is None:
            return k + 1 >= len(ls)
        return ls[k].y - ls[k + 1].y > factor * gap

    firsts = Counter(re.sub(r"\d+", "#", ls[0].text.strip()).lower() for ls in by_page.values())
    for ls in by_page.values():
        first, last = ls[0], ls[-1]
        key = re.sub(r"\d+", "#", first.text.strip()).lower()
        if firsts[key] >= 3 or re.fullmatch(r"[\divxlcIVXLC]{1,6}", first.text.strip()) or (
            (firsts[key] >= 2 or _small(first, body)) and len(ls) > 1 and wide_after(ls, 0, 1.8)
        ):
            first.skip, first.furniture = True, "head"
        if re.fullmatch(r"(?:page\s+)?[\divxlcIVXLC]{1,6}(?:\s+of\s+\d+)?", last.text.strip(), re.IGNORECASE):
            last.skip, last.furniture = True, "page number"
    _mark_floats(by_page, gap)
    for page, ls in by_page.items():  # footnotes: small lines at the foot of the page, below a gap
        kept = [ln for ln in ls if not ln.skip]
        k = len(kept)
        while k > 0 and _small(kept[k - 1], body):
            k -= 1
        # a footnote starts near the left of the page's body text; small prose set far in is an epigraph
        left = min((ln.x for ln in kept[:k] if ln.x is not None and not _small(ln, body)), default=None)
        near_margin = k < len(kept) and kept[k].x is not None and left is not None and kept[k].x <= left + 30
        if near_margin and k > 0 and wide_after(kept, k - 1, 1.3):
            for ln in kept[k:]:
                ln.skip, ln.furniture = True, "footnote"


def _mark_floats(by_page: dict[int, list[_Line]], gap: float | None) -> None:
    if gap is None:
        return
    full = {page: _left_margins(ls) for page, ls in by_page.items()}
    counts = {page: sum(1 for ln in ls if not ln.skip) for page, ls in by_page.items()}

    def margins_of(page: int) -> dict[int, list[float]]:
        """The page's column margins, or a fuller page's of the same parity (a float page has
        no running text to measure)."""
        for other in (page, page - 2, page + 2, page - 1, page + 1, page - 4, page + 4):
            if counts.get(other, 0) >= 8:
                return {page: full[other][other]}
        return full[page]

    def prose(line: _Line, margins: dict[int, list[float]]) -> bool:
        return line.x is not None and line.x <= _margin(line, margins) + 20 \
            and len(re.findall(r"[A-Za-z]{2,}", line.text)) >= 4

    def near(a: _Line, b: _Line, factor: float) -> bool:  # b follows a within factor line spacings
        return a.y is not None and b.y is not None and 0 < a.y - b.y <= factor * gap

    def beside(a: _Line, b: _Line, factor: float) -> bool:  # a figure's labels come in any order
        return a.y is not None and b.y is not None and abs(a.y - b.y) <= factor * gap

    for page, ls in by_page.items():
        margins = margins_of(page)
        for k, line in enumerate(ls):
            if line.skip or not _CAPTION.match(line.text.strip()):
                continue
            line.skip, line.furniture = True, "float"
            j = k
            while j + 1 < len(ls) and near(ls[j], ls[j + 1], 1.3) and not ls[j + 1].skip:  # the caption's lines
                j += 1
                ls[j].skip, ls[j].furniture = True, "float"
            while j + 1 < len(ls) and beside(ls[j], ls[j + 1], 2.4) and not prose(ls[j + 1], margins) \
                    and not ls[j + 1].skip:  # a table below its caption
                j += 1
                ls[j].skip, ls[j].furniture = True, "float"
            i = k
            while i > 0 and beside(ls[i - 1], ls[i], 2.4) and not prose(ls[i - 1], margins) \
                    and not ls[i - 1].skip:  # the figure above its caption
                i -= 1
                ls[i].skip, ls[i].furniture = True, "float"
        rest = [ln for ln in ls if not ln.skip]
        if any(ln.furniture == "float" for ln in ls) and not any(prose(ln, margins) for ln in rest):
            for ln in rest:  # a float page: no running text on it
                ln.skip, ln.furniture = True, "float"


def _heading_font_ok(line: _Line, body_font: str | None) -> bool:
    return line.font is None or body_font is None or line.font != body_font


#: A run-in heading of an unnumbered block ("Non-examples.", "Remark:", "Note.") at the start of a
#: line after a finished sentence: it starts a block of its own, whatever its font.
_RUN_IN_BLOCK = re.compile(r"^(?:Non-?[Ee]xamples?|Counter-?examples?|Remarks?|Notes?|Exercises?|Examples?|Warning"
                           r"|Caution|Notation|Comments?|Observation|Questions?|Problems?|Summary|Motivation"
                           r"|Intuition|Discussion|Exercises? for [^.:]{1,40})\s*[.:—]\s")
_RUN_IN = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z](?:\.\d+)+\.?)\s+\S")
#: A numbered run-in heading in any font ("1.0.1. Run-in. ...": amsart's subsubsection), at the
#: start of a line after a finished sentence: two levels of number or more, then a capitalised
#: title that ends with a period.
_NUMBERED_RUN_IN = re.compile(r"^\d+(?:\.\d+)+\.?\s+[A-Z][^.]{0,60}\.\s")


def _run_in_headings(lines: list[_Line], headings: list[_Heading], fonts: set[str | None]) -> list[_Heading]:
    """``headings`` with the numbered section headings set in a statement heading's font at the
    start of a line, even with text after them on the same line (amsart's run-in
    "**2.2.2. Preliminary definitions.** In this section ..."), as section boundaries."""
    taken = {h.line for h in headings}
    extra = []
    for i, line in enumerate(lines):
        if i in taken or line.skip or not line.runs or line.runs[0][1] not in fonts:
            continue
        first = line.runs[0][0].strip()
        if _RUN_IN.match(line.text.strip()) and re.match(r"^(?:\d+(?:\.\d+)*\.?|[A-Z](?:\.\d+)+\.?)(?:\s|$)", first):
            extra.append(_Heading(i, "section"))
    return sorted(headings + extra, key=lambda h: h.line)


def _find_headings(lines: list[_Line], body_font: str | None) -> list[_Heading]:
    """Statement, proof and section headings at the start of a line. Statements and proofs by
    the rule set shared with the plain-text readers (``fyan.intake.numbered.line_heading``),
    held to the layout: a heading's first glyphs are in another font than the body text (files
    without font information accept every heading), and a name the rules do not know ("Skeleton
    Proof 2.48.") counts only in such a font."""
    headings: list[_Heading] = []
    for i, line in enumerate(lines):
        if line.skip:
            continue
        text = line.text.strip()
        if not text or not text[0].isalpha() and not text[0].isdigit():
            continue
        joined = text
        if text.count("(") > text.count(")") and i + 1 < len(lines):
            joined = text + " " + lines[i + 1].text.strip()  # a title that wraps
        distinct = line.font is not None and body_font is not None and line.font != body_font
        if distinct or line.font is None:  # "Example2.2 (Left...)": the name and number run together
            joined = _RUN_TOGETHER.sub(r"\1 \2", joined, count=1)
        h = line_heading(joined, custom_names=distinct)
        if h is not None and _heading_font_ok(line, body_font):
            headings.append(_Heading(i, h.kind, h.word, h.number, _title_without_marks(h.title, line), h.target))
            continue
        if _SECTION.match(text) and len(text.split()) <= 12 and (
            distinct or (line.font is None and not text.endswith("."))
        ):
            headings.append(_Heading(i, "section"))
    return headings


#: A margin key: one token (a label such as ``thm:main`` or ``lem:2.3``, no spaces) printed in the
#: margin left of the column, before the line's own text.
_KEY = re.compile(r"^\S{2,80}$")


def _cut_margin_keys(lines: list[_Line], margins: dict[int, list[float]]) -> None:
    """Cut off every margin key (showkeys prints each ``\\label`` key in the margin, level with
    the heading it labels: ``thm:main Theorem 1.1. ...`` in the text layer): a first run that
    is one token, starts 8 to 150 pt left of a column's margin and is followed on the line by
    text (which starts at that margin). The line's text, offsets, position and font become the
    text's own; the key is kept in ``_Line.key``."""
    for line in lines:
        if line.skip or line.x is None or len(line.runs) < 2:
            continue
        key = line.runs[0][0].strip()
        column = [m for m in margins.get(line.page, []) if 8 <= m - line.x <= 150]
        if not _KEY.match(key) or not column or not line.text.startswith(key):
            continue
        rest = line.text[len(key):]
        cut = len(key) + len(rest) - len(rest.lstrip())
        if not line.text[cut:cut + 1].isalnum():
            continue
        line.key = key
        line.text = line.text[cut:]
        line.start += cut
        line.runs = [(line.runs[1][0].lstrip(), line.runs[1][1])] + line.runs[2:]
        line.run_sizes = line.run_sizes[1:]
        line.font = line.runs[0][1]
        line.x = min(column)  # the text starts at the margin of the column right of the key


#: A heading's name run together with its number in the text layer ("Example2.2 (Left ...").
_RUN_TOGETHER = re.compile(r"^([A-Z][a-z]+(?:-[a-z]+)?)(\d+(?:\.\d+)*\b)")

#: A footnote mark: digits or a reference symbol, set small (below this share of the line's size).
_MARK = re.compile(r"^(?:\d{1,2}|[*†‡§¶‖]{1,3})$")
MARK_SIZE = 0.85


def _footnote_marks(line: _Line) -> list[str]:
    """The footnote marks on ``line``: runs that are a mark (``_MARK``) set smaller than the line."""
    if not line.size:
        return []
    return [text.strip() for (text, _), size in zip(line.runs, line.run_sizes)
            if size and size < MARK_SIZE * line.size and _MARK.match(text.strip())]


def _title_without_marks(title: str | None, line: _Line) -> str | None:
    """A heading's title without the footnote marks the heading's line sets after it."""
    if not title:
        return title
    for mark in _footnote_marks(line):
        if title.endswith(mark) and len(title) > len(mark):
            title = title[: -len(mark)].rstrip()
    return title


def _numbering_gaps(statements: list[Statement], rel: str) -> list[IntakeWarning]:
    """Numbers the sequence of printed statement numbers skips: in each numbered part (the
    number without its last component: ``2`` of ``2.3``), the statements' last components, of all
    kinds together when no number is printed twice (one shared counter), else of each kind; a
    number missing between the first and the last found is a statement intake may have missed
    (or a number the document gives to something else, an equation or a figure)."""
    parts: dict[str, list[Statement]] = {}
    for st in statements:
        if st.number and re.fullmatch(r"(?:[A-Z]|\d+)(?:\.\d+)*", st.number):
            head, _, last = st.number.rpartition(".")
            if last.isdigit():
                parts.setdefault(head, []).append(st)
    out: list[IntakeWarning] = []
    for head, found in parts.items():
        numbers = [int(st.number.rpartition(".")[2]) for st in found]
        groups = [found] if len(set(numbers)) == len(numbers) else \
            [[st for st in found if st.kind == k] for k in dict.fromkeys(st.kind for st in found)]
        for group in groups:
            seen = sorted({int(st.number.rpartition(".")[2]): st for st in group}.items())
            for (a, before), (b, after) in zip(seen, seen[1:]):
                if b - a < 2:
                    continue
                missing = [f"{head}.{n}" if head else str(n) for n in range(a + 1, b)]
                shown = ", ".join(missing[:6]) + (f" ... ({len(missing)})" if len(missing) > 6 else "")
                out.append(IntakeWarning(
                    code="numbering-gap", where=f"{rel}: page {after.provenance.page_start}",
                    message=f"{after.display} follows {before.display} with no statement numbered {shown}: a "
                    "statement may have been missed (or the number went to an equation or a figure); check the "
                    "pages between them"))
    return out


def _line_gap(lines: list[_Line], body_size: float | None = None) -> float | None:
    """The body text's line spacing (pt): the median distance between consecutive lines of the
    body size; in a short text, where the space around statements and displays weighs as much
    as the lines of a paragraph, the smallest distance found twice (to 0.5 pt)."""
    gaps = [
        a.y - b.y
        for a, b in zip(lines, lines[1:])
        if a.page == b.page and a.y is not None and b.y is not None and 4 < a.y - b.y < 40
        and (body_size is None or a.size in (None, body_size) and b.size in (None, body_size))
    ]
    if len(gaps) >= 30:
        return statistics.median(gaps)
    twice = sorted(g for g, n in Counter(round(g * 2) / 2 for g in gaps).items() if n >= 2)
    return twice[0] if twice else (statistics.median(gaps) if gaps else None)


_SLANTED = re.compile(r"Ital|Obl|Slant|CMTI|CMSL|CMBXTI|-It$|-BoldIt|TI\d+$", re.IGNORECASE)
_BOLD = re.compile(r"Bold|CMBX|CMB\d|-Bd|Black|Heavy|Semibold|Demi", re.IGNORECASE)


def _body_font(fonts: Counter) -> str | None:
    """The body text's font: the most used upright, regular one among those used at least a fifth
    as much as the most used font (a short text can hold more italic theorem text than running
    text), else the most used. ``fonts`` counts the characters that do not start a line (a
    heading does), and the runs of more than 30 characters that do (a line of prose in one font)."""
    if not fonts:
        return None
    ranked = fonts.most_common()
    top = ranked[0][1]
    for font, n in ranked:
        if n >= 0.2 * top and font is not None and not _SLANTED.search(font) and not _BOLD.search(font):
            return font
    return ranked[0][0]


def _left_margins(lines: list[_Line], body_size: float | None = None) -> dict[int, list[float]]:
    """Left margin of each column of each page: the most common line start, and on a
    two-column page the other column's (a second frequent start at least a column's width
    away, or three lines of prose starting there, or the most common start of the lines after
    the text goes back up the page far to the right: a short last column; those two count lines
    of ``body_size`` only, so an epigraph set small and far in is no column; a paragraph indent
    is not one)."""
    xs: dict[int, Counter] = {}
    prose: dict[int, Counter] = {}  # starts of lines of running prose (four words or more)
    moved: dict[int, Counter] = {}  # starts of lines after the text went back up the page, far right
    prev: _Line | None = None
    for line in lines:
        if line.x is not None and line.text.strip() and not line.skip:
            xs.setdefault(line.page, Counter())[round(line.x)] += 1
            body = body_size is None or line.size is None or abs(line.size - body_size) <= 0.3
            if body and len(re.findall(r"[A-Za-z]{3,}", line.text)) >= 4:
                prose.setdefault(line.page, Counter())[round(line.x)] += 1
            if body and prev is not None and prev.page == line.page and (line.page in moved or (
                    prev.y is not None and line.y is not None and line.y > prev.y + 100 and line.x > prev.x + 150)):
                moved.setdefault(line.page, Counter())[round(line.x)] += 1
            prev = line
    margins: dict[int, list[float]] = {}
    for page, counts in xs.items():
        total = sum(counts.values())
        first = counts.most_common(1)[0][0]
        found = [float(first)]
        for x, n in counts.most_common():
            # a column holds a fifth of the page's lines, or (a short last column) three lines of
            # prose that start there
            if (n >= max(3, 0.2 * total) or prose.get(page, Counter())[x] >= 3) \
                    and all(abs(x - m) > 150 for m in found):
                found.append(float(x))
        after = [(n, x) for x, n in moved.get(page, Counter()).items() if all(abs(x - m) > 150 for m in found)]
        if after:  # the text went back up the page into a column of its own: its most common start
            found.append(float(max(after)[1] if max(after)[0] >= 2 else min(x for _, x in after)))
        margins[page] = sorted(found)
    return margins


def _margin(line: _Line, margins: dict[int, list[float]]) -> float:
    """The left margin of the column ``line`` is in."""
    cols = margins.get(line.page) or [line.x or 0.0]
    if line.x is None:
        return cols[0]
    left = [m for m in cols if m <= line.x + 2]
    return max(left) if left else cols[0]


def _word_font(line: _Line) -> str | None:
    """The font of the words of a line (runs of three letters or more; math symbols and
    single-letter variables are left out); None for a line of formulas."""
    count: Counter = Counter()
    for text, font in line.runs:
        count[font] += sum(len(w) for w in re.findall(r"[A-Za-z]{3,}", text))
    count.pop(None, None)
    if not count or max(count.values()) == 0:
        return None
    return count.most_common(1)[0][0]


_TAG = re.compile(r"^\((?:[A-Z]\.)?\d+(?:\.\d+)*[a-z]?\)\s")


def _is_display(line: _Line, margins: dict[int, list[float]]) -> bool:
    """A displayed formula: set in from the column's margin, or a formula line that starts with
    its equation number at the margin (amsart's equation numbers on the left)."""
    if line.x is None:
        return False
    if line.x > _margin(line, margins) + 30:
        return True
    return _TAG.match(line.text.strip()) is not None and len(re.findall(r"[A-Za-z]{3,}", line.text)) < 2


def _paragraph_break(prev: _Line, line: _Line, gap: float | None, margins: dict[int, list[float]],
                     jump: bool = False) -> str | None:
    """Does ``line`` start a new paragraph of running text after ``prev``? Returns the reason
    ("indent": an indented new paragraph, "display": an indented paragraph after a displayed
    formula, "gap": a vertical gap only, "epigraph": prose set apart) or None. After a displayed
    formula an unindented line continues the sentence ("Then ..."); across a page break or a
    float (``jump``) there is no gap to measure: an indented line, or prose set far in after a
    finished sentence, counts there."""
    text = line.text.strip()
    if line.x is None or not text or not text[0].isupper() or _ITEM.match(text):
        return None
    ended = re.search(r"[.!?”\"]\s*$", prev.text) is not None
    margin = _margin(line, margins)
    if prev.page == line.page and prev.y is not None and line.y is not None and line.y < prev.y:
        margin = min(margin, _margin(prev, margins))  # below prev, in its column (not the next column's top)
    if jump or prev.page != line.page:
        if line.x > margin + 30:  # prose set apart after a finished sentence: an epigraph
            return "epigraph" if ended and len(re.findall(r"[A-Za-z]{2,}", text)) >= 4 else None
        indented = line.x > margin + 5
        return "indent" if indented and (ended or _is_display(prev, margins)) else None
    if line.x > margin + 30:
        # a displayed formula or a centred line stays in the statement; a block of prose set
        # apart after a finished sentence (an epigraph, a margin note) does not
        prose = len(re.findall(r"[A-Za-z]{2,}", text)) >= 4
        far = gap is not None and prev.page == line.page and prev.y is not None and line.y is not None \
            and prev.y - line.y > 1.35 * gap
        return "epigraph" if ended and prose and far else None
    indented = line.x > margin + 5  # a paragraph indent
    if _is_display(prev, margins):
        # a display ends the statement when a new (indented) paragraph follows it; an unindented
        # line goes on with the sentence: "... define [display] Then ..."
        return "display" if indented else None
    after_list = prev.x is not None and (_ITEM.match(prev.text.strip()) is not None or prev.x > _margin(prev, margins) + 5)
    if after_list and not indented and _CONTINUES.match(text):
        return None  # "(ii) ... Then P(n) is true": the statement's sentence resumes after its list
    in_list = prev.x is not None and (_ITEM.match(prev.text.strip()) is not None or prev.x > _margin(prev, margins) + 5)
    if indented and ended and not in_list:
        return "indent"  # a new paragraph (with or without space above it)
    if in_list and ended and line.x <= margin + 16 and not _CONTINUES.match(text) \
            and len(re.findall(r"[A-Za-z]{3,}", text)) >= 4:
        # a sentence after a finished list, back at the margin or at a paragraph indent (at most
        # 16 pt in; an item's own later lines are set in further, at its text): the paragraph
        # after the statement, or the statement's own sentence resuming
        return "list"
    if gap is None or prev.y is None or line.y is None or prev.y - line.y <= 1.35 * gap:
        return None
    if indented:
        return "indent"
    return "gap" if ended else None


@dataclass
class _Layout:
    """What the extent of a statement is decided from."""

    gap: float | None
    margins: dict[int, list[float]]
    body_font: str | None
    heading_fonts: set[str | None]
    unindented: bool = False  # paragraphs set without an indent (parskip)


def _extent(lines: list[_Line], first: int, stop: int, layout: _Layout) -> tuple[int, str | None]:
    """Last line of the statement whose heading is ``lines[first]`` (the next heading is at
    ``stop``), and why its end is uncertain (None: certain).

    A statement set in its own font (amsthm's italic theorems) runs while its lines keep that
    font, through displayed formulas, page breaks and its own paragraphs; it ends at a line of
    body text. A statement in the body font (a definition) ends at an indented new paragraph,
    prose set apart, or — uncertain — a vertical gap alone."""
    # the statement's own font: its words on the heading's line, else on the next lines (the
    # statement's first lines only: a display may end it, and the prose after it is no sample)
    sample = [lines[first]] + [ln for ln in lines[first + 1 : min(stop, first + 4)] if not ln.skip]
    own = None
    for k, ln in enumerate(sample):
        words: Counter = Counter()
        for text, font in ln.runs[1:] if k == 0 else ln.runs:
            words[font] += sum(len(w) for w in re.findall(r"[A-Za-z]{3,}", text))
        words.pop(None, None)
        if words and max(words.values()) >= 3:
            own = words.most_common(1)[0][0]
            break
    distinct = own is not None and layout.body_font is not None and own != layout.body_font \
        and own not in layout.heading_fonts
    last = first
    prev = lines[first]
    count = 0
    listing = False  # inside a list set in the body font within a statement in its own font
    jump = False  # a float or footnote lies between prev and line
    above: float | None = None  # the space above the display prev ends, when prev is one
    for j in range(first + 1, stop):
        line = lines[j]
        if line.skip and line.furniture in ("float", "footnote"):
            jump = True
        if line.skip or not line.text.strip():
            continue
        if (_RUN_IN_BLOCK.match(line.text.strip()) or _NUMBERED_RUN_IN.match(line.text.strip())) and (
            re.search(r"[.!?:”\"]\s*$", prev.text) is not None or _is_display(prev, layout.margins)
        ):
            return last, None  # "Non-examples. ...", "Remark. ...", "2.1.3. Bounds. ...": a block of its own
        if distinct:
            font = _word_font(line)
            if font == layout.body_font and not _is_display(line, layout.margins):
                # a list set upright inside the statement ("Every map g with [items] is odd"):
                # an item after an unfinished sentence or inside the list, or an item's later
                # line set in from the margin, is the statement's; the body text after it ends it
                item = _ITEM_START.match(line.text.strip()) is not None
                inside = line.x is not None and line.x > _margin(line, layout.margins) + 5
                if (item and (listing or not re.search(r"[.!?]\s*$", prev.text))) or (listing and inside):
                    listing = True
                    count += 1
                    last, prev, jump = j, line, False
                    continue
                if listing:
                    return last, "it ends after its list, where a sentence starts at the margin"
                return last, None  # back to body text
            if font is not None and font != own and font != layout.body_font and not _is_display(line, layout.margins):
                return last, "a line in another font follows it"
            if font == own:
                listing = False
        else:
            reason = _paragraph_break(prev, line, layout.gap, layout.margins, jump)
            if reason is not None:
                return last, {"gap": "it ends at a vertical gap, without a change of font or an indented paragraph",
                              "list": "it ends after its list, where a sentence starts at the margin"}.get(reason)
            if layout.unindented and _display_then_prose(prev, line, above, layout, jump):
                return last, "it ends after a display, where prose follows lower than the display's own spacing"
        if _is_display(line, layout.margins):
            if not _is_display(prev, layout.margins):
                same = prev.page == line.page and prev.y is not None and line.y is not None and not jump
                above = prev.y - line.y if same else None
        else:
            above = None
        count += 1
        if count >= MAX_STATEMENT_LINES:
            return last, f"it runs past {MAX_STATEMENT_LINES} lines; cut there"
        last = j
        prev = line
        jump = False
    return last, None


def _display_then_prose(prev: _Line, line: _Line, above: float | None, layout: _Layout, jump: bool) -> bool:
    """Does the unindented prose ``line`` start a paragraph after the display ``prev`` in a
    document without paragraph indents (parskip)? When the display ends a sentence, ``line`` does
    not go on with it ("Then ...", "Hence ...") and the space below the display exceeds the space
    above it (``above``) by 0.3 line spacings: the space a statement's end adds."""
    if above is None or jump or layout.gap is None or not _is_display(prev, layout.margins):
        return False
    if prev.page != line.page or prev.y is None or line.y is None or _is_display(line, layout.margins):
        return False
    text = line.text.strip()
    if not re.search(r"[.!?]\s*$", prev.text) or not text[:1].isupper() or _CONTINUES.match(text):
        return False
    if len(re.findall(r"[A-Za-z]{3,}", text)) < 4:
        return False
    return prev.y - line.y > above + 0.3 * layout.gap


def _unindented(lines: list[_Line], margins: dict[int, list[float]]) -> bool:
    """Does the document set its paragraphs without an indent (parskip)? No line after a finished
    sentence starts with a paragraph indent (5 to 30 pt in from its column's margin), among 8
    lines or more."""
    prev = None
    seen = 0
    for line in lines:
        if line.skip or not line.text.strip() or line.x is None:
            continue
        seen += 1
        if prev is not None and prev.page == line.page and re.search(r"[.!?]\s*$", prev.text) \
                and line.text.strip()[:1].isupper() and 5 < line.x - _margin(line, margins) <= 30:
            return False
        prev = line
    return seen >= 8


def read_pdf(path: Path, *, source_root: Path | None = None) -> Catalogue:
    """Read the PDF at ``path`` into a ``Catalogue`` (see the module docstring).

    Raises ``InputError`` for a file that is not a PDF, is damaged, needs a password, or has
    no text layer."""
    return read_pdf_pages(path, source_root=source_root)[0]


def read_pdf_pages(path: Path, *, source_root: Path | None = None) -> tuple[Catalogue, list[str]]:
    """``read_pdf`` and the page texts its provenance indexes into (one extraction)."""
    path = path.resolve()
    root = (source_root or path.parent).resolve()
    rel = _rel(path, root)
    pages = _read_pages(path, rel)
    warnings = pages.warnings
    chars = sum(len(t.strip()) for t in pages.texts)
    if chars == 0:
        raise InputError(
            f"{rel}: the PDF has no text layer ({len(pages.texts)} page(s) of images: a scan?)",
            hint="run OCR first (e.g. `ocrmypdf in.pdf out.pdf`), or give the TeX source",
        )
    _mark_furniture(pages, _line_gap(pages.lines, _body_size(pages)))
    lines = pages.lines
    body_font = _body_font(pages.fonts)
    margins = _left_margins(lines, _body_size(pages))
    _cut_margin_keys(lines, margins)
    headings = _find_headings(lines, body_font)
    heading_fonts = {lines[h.line].font for h in headings if h.kind not in ("section", "proof")} - {None, body_font}
    headings = _run_in_headings(lines, headings, heading_fonts)
    layout = _Layout(_line_gap(lines, _body_size(pages)), margins, body_font, heading_fonts,
                     _unindented(lines, margins))
    boundaries = [h.line for h in headings]
    vocabulary = _vocabulary(pages.texts)

    statements: list[Statement] = []
    labels: dict[str, LabelSite] = {}
    by_number: dict[str, list[int]] = {}
    bodies: list[tuple[Statement, int, int, bool]] = []  # statement, first, last line, in proof

    def span(first: int, last: int) -> tuple[str, Provenance]:
        kept = [ln for ln in lines[first : last + 1] if not ln.skip]
        a, b = lines[first], kept[-1] if kept else lines[first]
        prov = Provenance(file=rel, line_start=a.no, line_end=b.no, page_start=a.page, page_end=b.page,
                          char_start=a.start, char_end=b.end)
        return "\n".join(ln.text for ln in kept).strip(), prov

    for k, h in enumerate(headings):
        next_boundary = boundaries[k + 1] if k + 1 < len(boundaries) else len(lines)
        if h.kind == "section":
            continue
        last = h.line
        if h.kind == "proof":
            for j in range(h.line, next_boundary):
                if lines[j].skip:
                    continue
                last = j
                if _END_MARK.search(lines[j].text):
                    break
            body, prov = span(h.line, last)
            target = _proof_target(h.target, statements, labels, by_number)
            if target is None:
                if not statements:
                    warnings.append(IntakeWarning(code="proof", where=f"{rel}: page {lines[h.line].page}",
                                                  message="proof with no statement before it; ignored"))
                    continue
                target = statements[-1]
            if target.proof is None:
                target.proof = ProofBlock(body=body, provenance=prov)
                bodies.append((target, h.line, last, True))
            else:
                warnings.append(IntakeWarning(code="proof", where=f"{rel}: page {lines[h.line].page}",
                                              message=f"second proof for {target.display}; ignored"))
            continue
        last, doubt = _extent(lines, h.line, next_boundary, layout)
        if doubt is not None:
            warnings.append(IntakeWarning(
                code="pdf-extent", where=f"{rel}: page {lines[last].page}",
                message=f"{h.word} {h.number or ''}".strip() + f": where it ends is uncertain ({doubt}); check the "
                "statement against the page"))
        body, prov = span(h.line, last)
        label = f"{h.word} {h.number}" if h.number else None
        index = len(statements)
        if label is not None and label in labels:
            warnings.append(IntakeWarning(
                code="printed-twice", where=f"{rel}: page {prov.page_start}",
                message=f"'{label}' is printed twice (first on page "
                f"{statements[labels[label].statement_index].provenance.page_start}); the second is left unlabelled"))
            label = None
        terms = _defined_terms(lines[h.line : last + 1], heading_fonts, vocabulary) if h.kind == "definition" else []
        stmt = Statement(index=index, kind=h.kind, env=h.word.lower(), label=label, labels=[label] if label else [],
                         title=h.title, number=h.number, body=body, provenance=prov, defined_terms=terms)
        statements.append(stmt)
        if label is not None:
            labels[label] = LabelSite(label=label, file=rel, line=prov.line_start, statement_index=index)
        if h.number:
            by_number.setdefault(h.number, []).append(index)
        bodies.append((stmt, h.line, last, False))

    warnings += _long_statements(lines, [(st, a, b) for st, a, b, in_proof in bodies if not in_proof], rel)
    warnings += _numbering_gaps(statements, rel)
    unresolved: dict[str, str] = {}
    for stmt, first, last, in_proof in bodies:
        kept = [j for j in range(first, last + 1) if not lines[j].skip]
        for n, j in enumerate(kept):
            line = lines[j]
            # the next line's start too: a reference broken across lines ("as in Lemma\n3.8")
            text = line.text
            if n + 1 < len(kept):
                text += " " + lines[kept[n + 1]].text[:40]
            text = _capitalise_references(text)
            for offset, word, number in find_references(text):
                if offset >= len(line.text):
                    continue  # the next line's own
                if j == first and offset == 0 and not in_proof:
                    continue  # the heading itself
                label = resolve(word, number, labels, by_number, statements)
                if label is None:
                    unresolved.setdefault(f"{word} {number}", f"page {line.page}")
                    continue
                if label == stmt.label:
                    continue
                stmt.references.append(
                    Reference(label=label, macro="text", file=rel, line=line.no, page=line.page, in_proof=in_proof)
                )
    for name, where in unresolved.items():
        warnings.append(IntakeWarning(code="printed-reference", where=f"{rel}: {where}",
                                      message=f"'{name}' matches no statement of the document; no edge"))
    return Catalogue(source_root=str(root), format="pdf", main_file=rel, files=[rel], statements=statements,
                     labels=labels, warnings=warnings), pages.texts


def _long_statements(lines: list[_Line], extents: list[tuple[Statement, int, int]], rel: str) -> list[IntakeWarning]:
    """A warning for each statement much longer (in printed lines) than the document's usual: at
    least 6 times the median and 20 lines more (documents of 4 statements or more), so its end
    is worth checking against the page."""
    sizes = [sum(1 for ln in lines[a : b + 1] if not ln.skip and ln.text.strip()) for _, a, b in extents]
    if len(sizes) < 4:
        return []
    usual = statistics.median(sizes)
    out = []
    for (stmt, _, _), n in zip(extents, sizes):
        if n >= max(6 * usual, usual + 20):
            out.append(IntakeWarning(
                code="pdf-extent", where=f"{rel}: page {stmt.provenance.page_start}",
                message=f"{stmt.label or 'unnumbered ' + stmt.env}: {n} lines long, where the document's "
                f"statements usually take {usual:g}; check where it ends against the page"))
    return out


# names that prose uses lower-case without naming a statement ("for example 011101", "problem 3
# asks") are left out
_LOWER_NAMES = ("theorem", "lemma", "sublemma", "proposition", "corollary", "definition", "conjecture", "remark")
_LOWER_REFERENCE = re.compile(r"\b(" + "|".join(_LOWER_NAMES) + r")(s?\s+(?:[A-Z]\.)?\d)")


def _capitalise_references(text: str) -> str:
    """``text`` with lower-case printed references capitalised ("by lemma 3.8" -> "by Lemma
    3.8"; theorems, lemmas, propositions, corollaries, definitions, conjectures and remarks),
    the same length, so that ``find_references`` reads them."""
    return _LOWER_REFERENCE.sub(lambda m: m.group(1).title() + m.group(2), text)


_STOPWORDS = frozenset("a an and are as at be by for from if iff in is it not of on only or so such than that "
                       "the then there to we with".split())


def _vocabulary(texts: list[str]) -> set[str]:
    """The lower-case words and hyphenated compounds printed whole somewhere in the document."""
    words: set[str] = set()
    for text in texts:
        whole = re.sub(r"[a-z]+(?:-[a-z]+)*-[ \t]*\n\s*[a-z]+", " ", unicodedata.normalize("NFKC", text).lower())
        words.update(re.findall(r"[a-z]+(?:-[a-z]+)*", whole))  # words broken across lines left out
    return words


def _join_broken(text: str, vocabulary: set[str]) -> str:
    """``text`` with words broken across lines ("semi-\ngroup", "well-\ndefined") joined: with the
    hyphen when the document prints the compound whole elsewhere, or both halves are words of it
    and the joined word is not; without it otherwise (TeX's own hyphenation)."""
    def join(m: re.Match) -> str:
        a, b = m.group(1), m.group(2)
        low_a, low_b = a.lower(), b.lower()
        if f"{low_a}-{low_b}" in vocabulary:
            return f"{a}-{b}"
        if low_a + low_b in vocabulary:
            return a + b
        if low_a.split("-")[-1] in vocabulary and low_b in vocabulary and len(low_a.split("-")[-1]) > 2:
            return f"{a}-{b}"
        return a + b
    return re.sub(r"([A-Za-z]+(?:-[A-Za-z]+)*)-\s*\n\s*([A-Za-z]+)", join, text)


def _defined_terms(span: list[_Line], fonts: set[str | None], vocabulary: set[str] | None = None) -> list[str]:
    """Words a definition sets in its headings' (bold) font: the terms it defines ("An integer n
    is **even** if ..."), after the heading itself. A term hyphenated across lines is joined
    (``_join_broken``: "semi-/group" is "semigroup", "well-/defined" stays "well-defined" when the
    document prints it so); connectives set in bold ("not", "and", "if and only if") are not
    terms."""
    pieces: list[tuple[str, bool]] = []
    for k, line in enumerate(span):
        if line.skip:
            continue
        runs = line.runs[1:] if k == 0 else line.runs  # the first run of the first line is the heading
        pieces += [(text, font in fonts and bool(text.strip())) for text, font in runs]
        pieces.append(("\n", pieces[-1][1] if pieces and pieces[-1][0].rstrip().endswith("-") else False))
    terms: list[str] = []
    current = ""
    for text, bold in pieces + [("", False)]:
        if bold:
            current += text
            continue
        joined = _join_broken(unicodedata.normalize("NFKC", current), vocabulary or set())
        term = " ".join(re.sub(r"[^\w\s'-]", " ", joined).split()).lower().strip("-")
        if len(term) >= 3 and term not in terms and not set(term.split()) <= _STOPWORDS and not term.isdigit():
            terms.append(term)
        current = ""
    return terms


def _proof_target(target: str | None, statements: list[Statement], labels: dict[str, LabelSite],
                  by_number: dict[str, list[int]]) -> Statement | None:
    for _, word, number in find_references(target or ""):
        label = resolve(word, number, labels, by_number, statements)
        if label is not None:
            return statements[labels[label].statement_index]
    return None
