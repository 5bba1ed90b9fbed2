"""Printed statement names and references by number, shared by the PDF, Markdown and
plain-text readers.

Documents without labels name their statements in print: ``Theorem 2.3.``, ``Lemma 4 (Name).``,
``Definition 1.2``, ``Corollary A.1:``, ``Claim.``, ``Lemma (coeff_zero_of_lt)`` on a line of its
own; and cite them the same way (``by Lemma 2.1``, ``Theorems 3 and 4``). ``line_heading`` is the
one rule set for a statement or proof heading at the start of a line (the PDF reader applies it
to each line of the text layer, the Markdown and plain-text readers to the first line of each
block); ``parse_heading`` is its run-in part; ``find_references`` lists the printed references in
a text; ``resolve`` maps one to the label of a catalogued statement (its printed name, e.g.
``"Theorem 2.3"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fyan.intake.catalogue import KIND_ALIASES, LabelSite, Statement

#: Printed statement names; the canonical kind comes from ``KIND_ALIASES`` of the last word.
STATEMENT_WORDS = (
    "Main Theorem", "Key Lemma", "Theorem", "Lemma", "Sublemma", "Proposition", "Corollary",
    "Definition", "Claim", "Conjecture", "Remark", "Example", "Problem", "Exercise", "Question",
    "Fact", "Observation", "Notation", "Axiom", "Hypothesis", "Assumption", "Construction", "Principle",
)
_WORDS = "|".join(STATEMENT_WORDS) + "|" + "|".join(w.upper() for w in STATEMENT_WORDS)
NUMBER = r"(?:[A-Z]\.)?\d+(?:\.\d+)*[a-z]?|[A-Z](?:\.\d+)*(?![A-Za-z])"
_HEADING = re.compile(rf"^(?P<word>{_WORDS})(?:\s+(?P<num>{NUMBER}))?(?![\w.]\w)")
# a list goes on after ",", "and", "or", "&", ", and", or a range dash; an element followed by
# ")" or "of" is an item of the statement named next ("Lemma 2.3 and 2) of Proposition 3.2")
_SEPARATOR = r"\s*(?:,\s*(?:(?:and|or)\b)?|\b(?:and|or|to)\b|&|[–-])\s*"
_ELEMENT = rf"(?:{NUMBER})(?!\s*\)|\s+of\b|\w)"
_REFERENCE = re.compile(
    rf"\b(?P<word>{'|'.join(STATEMENT_WORDS)})s?\s+(?P<nums>(?:{NUMBER})"
    rf"(?:{_SEPARATOR}(?:(?:{'|'.join(STATEMENT_WORDS)})s?\s+)?{_ELEMENT})*)"
)
_NUMBER_RE = re.compile(NUMBER)
#: A proof heading: ``Proof.``, ``Proof:``, ``Proof)``, ``Proof of Theorem 2.``, or ``Proof`` ending the text.
PROOF = re.compile(r"^(?:Proof|PROOF)(?:(?:\s+of\s+(?P<target>[^.:]{1,120}?))?\s*[.:—–]|\s*\)|[ \t]*$)")
# Any other name with a sectioned number ("Skeleton Proof 2.48 (...).", "Axioms 5.1."): a custom
# environment the document declared; plain integers are left alone ("Case 1.", "Step 2.").
_CUSTOM = re.compile(r"^(?P<word>[A-Z][a-z]+(?:-[a-z]+)?(?: [A-Z][a-z]+(?:-[a-z]+)?){0,2})\s+(?P<num>(?:[A-Z]\.)?\d+(?:\.\d+)+[a-z]?)(?![\w.]\w)")
#: Words that number things which are not statements.
NOT_STATEMENTS = frozenset({"Chapter", "Section", "Part", "Appendix", "Figure", "Table", "Page", "Equation",
                            "Exercises", "Problems"})


@dataclass
class Heading:
    word: str  # as printed, capitalised: "Theorem", "Main Theorem"
    kind: str  # canonical kind
    number: str | None
    title: str | None
    end: int  # offset just past the heading's punctuation in the text

    @property
    def label(self) -> str | None:
        return f"{self.word} {self.number}" if self.number else None


def kind_of(word: str) -> str:
    """Canonical kind of a printed name ("Main Theorem" -> theorem, "Axioms" -> axiom)."""
    low = word.lower()
    return KIND_ALIASES.get(low) or KIND_ALIASES.get(low.split()[-1]) or KIND_ALIASES.get(low.rstrip("s")) or low


def title_and_punct(rest: str) -> tuple[str | None, str | None, int]:
    """After a heading's name and number: the optional parenthesised title (nested parentheses
    allowed), the punctuation that ends the heading ('.', ':', a dash, '' at the end of the
    text) and the offset just past it; ``(None, None, 0)`` when this is not a heading."""
    i = len(rest) - len(rest.lstrip())
    title = None
    if rest[i : i + 1] == "(":
        depth = 0
        for j in range(i, min(len(rest), i + 240)):
            depth += {"(": 1, ")": -1}.get(rest[j], 0)
            if depth == 0:
                title = " ".join(rest[i + 1 : j].split())
                i = j + 1
                break
        else:
            return None, None, 0
    stripped = rest[i:].lstrip()
    i = len(rest) - len(stripped)
    if stripped == "":
        return title, "", i
    if stripped[0] in ".:—–":
        return title, stripped[0], i + 1
    return None, None, 0


def parse_heading(text: str) -> Heading | None:
    """The printed statement heading at the start of ``text``, if there is one. Unnumbered
    headings need a full stop or colon ("Claim."); numbered ones may end the text."""
    m = _HEADING.match(text)
    if m is None:
        return None
    title, punct, end = title_and_punct(text[m.end():])
    if punct is None or (m.group("num") is None and punct not in ".:"):
        return None
    word = " ".join(w.capitalize() for w in m.group("word").split())
    return Heading(word, kind_of(word), m.group("num"), title, m.end() + end)


@dataclass
class LineHeading:
    """A statement or proof heading at the start of a line (``line_heading``): ``kind`` is the
    canonical statement kind or ``"proof"``; ``word``, ``number`` and ``title`` as printed
    (``title``: the parenthesised name); ``target`` the text a proof heading names ("Proof of
    Theorem 2"); ``end`` the offset just past the heading and its punctuation; ``alone``: nothing
    follows it on its line; ``custom``: a name the document declared (``custom_names``)."""

    kind: str
    word: str
    number: str | None = None
    title: str | None = None
    target: str | None = None
    end: int = 0
    alone: bool = False
    custom: bool = False

    @property
    def label(self) -> str | None:
        return f"{self.word} {self.number}" if self.number else None


def line_heading(text: str, *, custom_names: bool = False) -> LineHeading | None:
    """The statement or proof heading at the start of ``text`` (a line, or a block whose first
    line is tried on its own), by the one rule set of the PDF and plain-text readers:

    * a printed name (``STATEMENT_WORDS``), optionally a number, optionally a parenthesised
      name, then ``.``, ``:`` or a dash and the statement on the same line ("Lemma 4 (Name).
      Let ..."); a numbered heading may also end the text ("Theorem 2.1");
    * the same heading alone on its line, numbered or not, punctuation optional: ``Lemma
      (coeff_zero_of_lt)``, ``Definition (krullDim)``, ``Theorem``;
    * with ``custom_names`` (the heading is set apart: a bold font in a PDF), any capitalised name
      with a sectioned number ("Skeleton Proof 2.48.") except ``NOT_STATEMENTS``;
    * a proof: ``Proof.``, ``Proof:``, ``Proof)``, ``Proof of Theorem 2.3.``, or ``Proof`` alone.

    Returns None when ``text`` does not start with a heading."""
    first = text.split("\n", 1)[0]
    p = PROOF.match(text) or PROOF.match(first)
    if p is not None:
        return LineHeading("proof", "Proof", target=p.group("target"), end=p.end(),
                           alone=not first[p.end():].strip())
    h = parse_heading(text)
    if h is None:
        m = _HEADING.match(first)
        if m is not None:
            title, punct, end = title_and_punct(first[m.end():])
            if punct is not None and not first[m.end() + end:].strip():  # the heading alone on its line
                word = " ".join(w.capitalize() for w in m.group("word").split())
                h = Heading(word, kind_of(word), m.group("num"), title, m.end() + end)
    if h is not None:
        return LineHeading(h.kind, h.word, h.number, h.title, end=h.end, alone=not first[h.end:].strip())
    g = _CUSTOM.match(text) if custom_names else None
    if g is not None and g.group("word").split()[0] not in NOT_STATEMENTS:
        title, punct, end = title_and_punct(text[g.end():])
        if punct is not None:
            word = g.group("word")
            return LineHeading(kind_of(word), word, g.group("num"), title, end=g.end() + end,
                               alone=not first[g.end() + end:].strip(), custom=True)
    return None


def find_references(text: str) -> list[tuple[int, str, str]]:
    """Printed references in ``text``: (offset, printed name, number), one per number.
    "Lemmas 2.1 and 2.2", "Theorems 1, 2, and 4" and "Lemmas 2.1–2.3" (a range: 2.1, 2.2,
    2.3) give several; "Theorem 3.1(b)" is Theorem 3.1; in "Lemma 2.3 and 2) of Proposition
    3.2" the "2)" is an item of Proposition 3.2, not a lemma."""
    found: list[tuple[int, str, str]] = []
    for m in _REFERENCE.finditer(text):
        word = m.group("word")
        previous: str | None = None
        for sep, part in _parts(m.group("nums")):
            other = next((x for x in STATEMENT_WORDS if re.match(rf"{x}s?\s", part)), None)
            if other is not None:
                word, part = other, re.sub(rf"^{other}s?\s+", "", part)
            num = _NUMBER_RE.fullmatch(part.strip())
            if not num:
                continue
            if sep in ("–", "-", "to") and previous is not None and other is None:
                found += [(m.start(), word, n) for n in _between(previous, num.group(0))]
            found.append((m.start(), word, num.group(0)))
            previous = num.group(0)
    return found


def _parts(nums: str) -> list[tuple[str, str]]:
    """(separator before it, element) for each element of a printed list."""
    pieces = re.split(r"(\s*(?:,\s*(?:(?:and|or)\b)?|\b(?:and|or|to)\b|&|[–-])\s*)", nums)
    out: list[tuple[str, str]] = [("", pieces[0])]
    for i in range(1, len(pieces) - 1, 2):
        out.append((pieces[i].strip(" ,") or ",", pieces[i + 1]))
    return out


def _between(first: str, last: str) -> list[str]:
    """The numbers strictly between two of a range with the same prefix (2.1–2.4: 2.2, 2.3)."""
    a, b = first.rsplit(".", 1) if "." in first else ("", first), last.rsplit(".", 1) if "." in last else ("", last)
    if a[0] != b[0] or not a[1].isdigit() or not b[1].isdigit() or int(b[1]) - int(a[1]) > 50:
        return []
    prefix = f"{a[0]}." if a[0] else ""
    return [f"{prefix}{k}" for k in range(int(a[1]) + 1, int(b[1]))]


def resolve(word: str, number: str, labels: dict[str, LabelSite], by_number: dict[str, list[int]],
            statements: list[Statement]) -> str | None:
    """The label a printed reference names: the statement with the same name and number, else
    the one statement of that kind, else the one statement with that number (shared counters:
    a "Proposition 2.3" that is printed as a lemma). None when nothing or several match."""
    if f"{word} {number}" in labels:
        return f"{word} {number}"
    candidates = [i for i in by_number.get(number, []) if statements[i].label]
    kind = kind_of(word)
    same_kind = [i for i in candidates if statements[i].kind == kind]
    if len(same_kind) == 1:
        return statements[same_kind[0]].label
    if len(candidates) == 1 and not re.fullmatch(r"[A-Z]", number):
        return statements[candidates[0]].label
    return None
