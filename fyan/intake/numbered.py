"""Printed statement names and references by number, shared by the PDF and Markdown readers.

Documents without labels name their statements in print: ``Theorem 2.3.``, ``Lemma 4 (Name).``,
``Definition 1.2``, ``Corollary A.1:``, ``Claim.``; and cite them the same way (``by Lemma
2.1``, ``Theorems 3 and 4``). ``parse_heading`` recognises such a heading at the start of a
text; ``find_references`` lists the printed references in a text; ``resolve`` maps one to the
label of a catalogued statement (its printed name, e.g. ``"Theorem 2.3"``).
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
_REFERENCE = re.compile(
    rf"\b(?P<word>{'|'.join(STATEMENT_WORDS)})s?\s+(?P<nums>(?:{NUMBER})"
    rf"(?:\s*(?:,|and|&|or)\s*(?:(?:{'|'.join(STATEMENT_WORDS)})\s+)?(?:{NUMBER}))*)"
)
_NUMBER_RE = re.compile(NUMBER)
PROOF = re.compile(r"^(?:Proof|PROOF)(?:\s+of\s+(?P<target>[^.:]{1,120}?))?\s*[.:—–]")


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


def find_references(text: str) -> list[tuple[int, str, str]]:
    """Printed references in ``text``: (offset, printed name, number), one per number
    ("Lemmas 2.1 and 2.2" gives two)."""
    found: list[tuple[int, str, str]] = []
    for m in _REFERENCE.finditer(text):
        word = m.group("word")
        for part in re.split(r"\s*(?:,|and|&|or)\s*", m.group("nums")):
            part = part.strip()
            other = next((x for x in STATEMENT_WORDS if part.startswith(x + " ")), None)
            if other is not None:
                word, part = other, part[len(other):].strip()
            num = _NUMBER_RE.fullmatch(part)
            if num:
                found.append((m.start(), word, num.group(0)))
    return found


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
