"""Deterministic lints of ``problem.tex`` (the Specifier's checks; no model is ever called).

One entry point, ``lint_problems``: give it each unit's ``problem.tex`` text together with
what it is compared against — the document's own statement (``source_tex``), the units it is
declared to depend on, and the code-written provenance block when known — and it returns
``Finding`` s with a severity. At ingest ``problem.tex`` is written by code from the source,
so a finding there points at the source or at intake; the model part of the Specifier runs
the same function on the statement texts a model proposes, and an ``error`` finding refuses
the proposal.

Rules (``Finding.rule``):

* ``lost-iff`` (error) — the source states an equivalence ("if and only if", "iff", ``\\iff``,
  ``\\Leftrightarrow``, "is equivalent to", "necessary and sufficient", ...) more often than
  ``problem.tex`` does;
* ``strict-to-nonstrict`` (error) — a strict relation of the source (``<``, ``>``, ``\\subsetneq``,
  ``\\supsetneq``, ``\\lneq``, ``\\gneq``, ``⊊``) is fewer and its non-strict partner (``\\le``, ``\\ge``,
  ``\\subseteq``, ...) more in ``problem.tex``; "strictly" dropped is a warning;
* ``new-asymptotic`` (error) — an asymptotic term absent from the source (``O(``, ``o(``, ``\\Omega(``,
  ``\\Theta(``, ``\\sim``, ``\\asymp``, ``\\ll``, ``\\gg``, ``\\lesssim``, ``\\gtrsim``, ``\\to\\infty``,
  ``\\lim``, "sufficiently large", "for large", "asymptotically", "eventually", "almost all", "all
  but finitely many");
* ``malformed-provenance`` (error) — the provenance block is missing, not at the top, doubled,
  has a line outside the grammar of ``fyan.specifier.problem``, names another unit, has no or
  a bad ``source`` line, lists dependencies other than the declared ones, or differs from the
  code-written block when that is given; the context block differs from the code-written one;
* ``undeclared-dependency`` (error) — the statement cites (``\\ref``-like macros, ``\\uses``,
  Markdown links, printed names such as "Lemma 2.1") a label of another unit that is neither
  among its declared dependencies nor among its listed mentions.

Ingest adds one more family, from the references themselves (``fyan.specifier.dag.UnitFlag``,
each a ``warning``): ``unknown-reference`` (a label defined nowhere), ``incomplete-dependencies``
(a ``\\uses`` of such a label) and ``duplicate-label`` (a label defined twice, read as the last).

Comments are ignored when counting (``%`` to the end of the line, unless escaped); the context
block (cited material, not the statement) is left out of every comparison.

``lint_units`` runs the rules on the ``problem.tex`` files ingest rendered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, Field

from fyan.intake.catalogue import Catalogue
from fyan.intake.numbered import find_references
from fyan.specifier.dag import Edge
from fyan.specifier.problem import (
    BEGIN,
    CONTEXT_BEGIN,
    CONTEXT_END,
    END,
    provenance_block,
    statement_text,
    strip_context,
    strip_provenance,
)
from fyan.specifier.units import UnitSpec

Severity = Literal["error", "warning"]
Rule = Literal["lost-iff", "strict-to-nonstrict", "new-asymptotic", "malformed-provenance", "undeclared-dependency",
               "unknown-reference", "incomplete-dependencies", "duplicate-label"]


class LintInput(BaseModel):
    """One ``problem.tex`` and what it is checked against."""

    unit: str = Field(description="Unit id.")
    problem_tex: str = Field(description="The problem.tex text to check: provenance block, then the statement.")
    source_tex: str = Field(description="The document's own statement text it must stay faithful to.")
    depends_on: list[str] = Field(default_factory=list, description="Unit ids the unit is declared to depend on.")
    context_units: list[str] = Field(
        default_factory=list,
        description="Units it may cite without depending on them (the statement a nested claim sits in, "
        "the units its references mention).",
    )
    expected_block: str | None = Field(
        default=None, description="The code-written provenance block; when given, the block must equal it."
    )
    expected_context: str | None = Field(
        default=None, description="The code-written context block ('' for none); when given, it must equal it."
    )


class Finding(BaseModel):
    unit: str
    rule: Rule
    severity: Severity
    message: str
    line: int | None = Field(default=None, description="1-based line in problem.tex, when there is one.")

    def __str__(self) -> str:
        where = f"problem.tex:{self.line}" if self.line else "problem.tex"
        return f"{self.unit}: {where}: {self.severity}: {self.rule}: {self.message}"


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


def lint_problems(items: Iterable[LintInput], *, label_units: Mapping[str, str] | None = None) -> list[Finding]:
    """Run every rule (module docstring) on each item; returns the findings in item order.

    ``label_units`` maps every label of the document (``\\label`` names, anchors, printed names
    like ``"Theorem 2.3"``) to the unit that owns it; without it ``undeclared-dependency`` is
    not checked. Never raises on malformed text: malformation is a finding."""
    findings: list[Finding] = []
    for item in items:
        findings += _provenance(item)
        findings += _context(item)
        body = _uncommented(strip_context(strip_provenance(item.problem_tex)))
        source = _uncommented(strip_provenance(item.source_tex))
        if body != source:  # the same text counts the same (at ingest problem.tex is the source's)
            findings += _iff(item.unit, source, body)
            findings += _strictness(item.unit, source, body)
            findings += _asymptotic(item.unit, source, body)
        if label_units:
            findings += _undeclared(item, label_units)
    return findings


# -- counting ---------------------------------------------------------------------------------

def _uncommented(text: str) -> str:
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in text.split("\n"))


def _count(pattern: re.Pattern[str], text: str) -> int:
    return len(pattern.findall(text))


_IFF = re.compile(
    r"if\s+and\s+only\s+if|(?<![A-Za-z\\])iff(?![A-Za-z])|\\iff(?![A-Za-z])|\\(?:Long)?[lL]eftrightarrow(?![A-Za-z])"
    r"|[⇔↔⟺]|necessary\s+and\s+sufficient|(?:is|are)\s+equivalent|exactly\s+when|precisely\s+when",
    re.IGNORECASE,
)


def _iff(unit: str, source: str, body: str) -> list[Finding]:
    s, p = _count(_IFF, source), _count(_IFF, body)
    if s > p:
        return [Finding(unit=unit, rule="lost-iff", severity="error",
                        message=f"the source states an equivalence {s} time(s), problem.tex {p} time(s): "
                        "an 'if and only if' was lost")]
    return []


_RELATIONS = [
    ("<", re.compile(r"(?<![<\\])<(?![<=])|\\lt(?![A-Za-z])|\\lneqq?(?![A-Za-z])|\\lneq(?![A-Za-z])"),
     re.compile(r"\\le(?:q|qq|qslant|slant)?(?![A-Za-z])|≤|⩽|<=")),
    (">", re.compile(r"(?<![>\\-])>(?![>=])|\\gt(?![A-Za-z])|\\gneqq?(?![A-Za-z])"),
     re.compile(r"\\ge(?:q|qq|qslant|slant)?(?![A-Za-z])|≥|⩾|>=")),
    ("⊊", re.compile(r"\\subsetneqq?(?![A-Za-z])|\\varsubsetneqq?(?![A-Za-z])|⊊"),
     re.compile(r"\\subseteqq?(?![A-Za-z])|⊆")),
    ("⊋", re.compile(r"\\supsetneqq?(?![A-Za-z])|\\varsupsetneqq?(?![A-Za-z])|⊋"),
     re.compile(r"\\supseteqq?(?![A-Za-z])|⊇")),
]
_STRICTLY = re.compile(r"\bstrict(?:ly)?\b", re.IGNORECASE)


def _strictness(unit: str, source: str, body: str) -> list[Finding]:
    out: list[Finding] = []
    for name, strict, loose in _RELATIONS:
        s_strict, p_strict = _count(strict, source), _count(strict, body)
        s_loose, p_loose = _count(loose, source), _count(loose, body)
        if p_strict < s_strict and p_loose > s_loose:
            out.append(Finding(unit=unit, rule="strict-to-nonstrict", severity="error",
                               message=f"'{name}' appears {s_strict}→{p_strict} time(s) while its non-strict form "
                               f"appears {s_loose}→{p_loose}: a strict inequality became non-strict"))
    if _count(_STRICTLY, body) < _count(_STRICTLY, source):
        out.append(Finding(unit=unit, rule="strict-to-nonstrict", severity="warning",
                           message="the source says 'strict(ly)' more often than problem.tex"))
    return out


_ASYMPTOTIC = {
    "O(...)": re.compile(r"(?<![A-Za-z\\])O\s*\(|\\mathcal\s*\{?O\}?\s*\(|\\(?:big)?O(?![A-Za-z])"),
    "o(...)": re.compile(r"(?<![A-Za-z\\])o\s*\("),
    "\\Omega(...)": re.compile(r"\\Omega\s*\("),
    "\\omega(...)": re.compile(r"\\omega\s*\("),
    "\\Theta(...)": re.compile(r"\\Theta\s*\("),
    "\\sim": re.compile(r"\\sim(?![A-Za-z])"),
    "\\asymp": re.compile(r"\\asymp(?![A-Za-z])"),
    "\\ll / \\gg": re.compile(r"\\(?:ll|gg)(?![A-Za-z])"),
    "\\lesssim / \\gtrsim": re.compile(r"\\(?:lesssim|gtrsim)(?![A-Za-z])"),
    "→ ∞": re.compile(r"\\(?:to|rightarrow|longrightarrow)\s*\+?\s*\\infty|→\s*∞"),
    "\\lim": re.compile(r"\\(?:lim|limsup|liminf)(?![A-Za-z])"),
    "sufficiently large": re.compile(r"sufficiently\s+(?:large|small)", re.IGNORECASE),
    "for large": re.compile(r"\bfor\s+(?:all\s+)?large\b", re.IGNORECASE),
    "asymptotically": re.compile(r"\basymptotic(?:ally)?\b", re.IGNORECASE),
    "eventually": re.compile(r"\beventually\b", re.IGNORECASE),
    "almost all": re.compile(r"\balmost\s+(?:all|every)\b", re.IGNORECASE),
    "all but finitely many": re.compile(r"\ball\s+but\s+finitely\s+many\b", re.IGNORECASE),
}


def _asymptotic(unit: str, source: str, body: str) -> list[Finding]:
    out: list[Finding] = []
    for name, pattern in _ASYMPTOTIC.items():
        s, p = _count(pattern, source), _count(pattern, body)
        if p > s:
            out.append(Finding(unit=unit, rule="new-asymptotic", severity="error",
                               message=f"asymptotic term {name} appears {p} time(s) in problem.tex, {s} in the source"))
    return out


# -- provenance -------------------------------------------------------------------------------

_SOURCE_LINE = re.compile(
    r"% source: (?P<file>.+?), (?:lines (?P<a>\d+)-(?P<b>\d+)"
    r"|page (?P<p>\d+), characters (?P<c1>\d+)-(?P<c2>\d+)"
    r"|pages (?P<p1>\d+)-(?P<p2>\d+), characters \d+ \(page (?P=p1)\) to \d+ \(page (?P=p2)\))$"
)
_DEPENDS = re.compile(r"% depends on: (?:nothing|(?P<unit>[a-z0-9-]+) \((?P<origin>[a-z]+), (?:statement|proof); .+\))$")
_MENTIONS = re.compile(r"% mentions: (?P<unit>[a-z0-9-]+) \((?P<origin>[a-z]+), (?:statement|proof); .+\)$")
_OPTIONAL = re.compile(r"% (?:label|title|lean \(from the source\)|text): .*$")


def _provenance(item: LintInput) -> list[Finding]:
    def bad(message: str, line: int | None = None) -> Finding:
        return Finding(unit=item.unit, rule="malformed-provenance", severity="error", message=message, line=line)

    text = item.problem_tex
    lines = text.split("\n")
    begins = [i for i, ln in enumerate(lines) if ln.strip() == BEGIN]
    ends = [i for i, ln in enumerate(lines) if ln.strip() == END]
    if not begins or not ends:
        return [bad("no provenance block (it is written by Fyan, never by a model)")]
    out: list[Finding] = []
    if len(begins) > 1 or len(ends) > 1:
        out.append(bad(f"{len(begins)} provenance block(s) start and {len(ends)} end; there must be one", begins[-1] + 1))
    first, last = begins[0], ends[0]
    if any(ln.strip() for ln in lines[:first]):
        out.append(bad("text before the provenance block; the block comes first", 1))
    if last < first:
        return out + [bad("the end marker comes before the start marker", last + 1)]
    if item.expected_block is not None and "\n".join(lines[first : last + 1]) != item.expected_block.strip("\n"):
        out.append(bad("the provenance block differs from the one Fyan wrote", first + 1))
    units, sources, deps = [], 0, []
    for n in range(first + 1, last):
        ln = lines[n]
        if m := re.fullmatch(r"% unit: (.+)", ln):
            units.append(m.group(1))
        elif re.fullmatch(r"% kind: [\w -]+", ln):
            pass
        elif m := _SOURCE_LINE.fullmatch(ln):
            sources += 1
            lo, hi = (m.group("a"), m.group("b")) if m.group("a") else (m.group("c1"), m.group("c2"))
            if m.group("p1"):
                lo, hi = m.group("p1"), m.group("p2")
            if lo is not None and hi is not None and int(lo) > int(hi):
                out.append(bad(f"source range {lo}-{hi} is reversed", n + 1))
        elif m := _DEPENDS.fullmatch(ln):
            if m.group("unit"):
                deps.append(m.group("unit"))
        elif _MENTIONS.fullmatch(ln):
            pass
        elif not _OPTIONAL.fullmatch(ln):
            out.append(bad(f"line is not part of the provenance grammar: {ln[:80]!r}", n + 1))
    if units != [item.unit]:
        out.append(bad(f"the block names unit(s) {units}, expected exactly [{item.unit!r}]", first + 2))
    if sources == 0:
        out.append(bad("no '% source:' line with the statement's file and lines or pages", first + 1))
    if set(deps) != set(item.depends_on):
        out.append(bad(f"the block lists dependencies {sorted(set(deps))}, the DAG declares {sorted(set(item.depends_on))}",
                       first + 1))
    return out


def _context(item: LintInput) -> list[Finding]:
    """The context block, when there is one, must be the code-written one."""
    text = item.problem_tex
    start = text.find(CONTEXT_BEGIN)
    found = ""
    if start >= 0:
        end = text.find(CONTEXT_END, start)
        found = text[start : (len(text) if end < 0 else end + len(CONTEXT_END))]
    if item.expected_context is None or found.strip("\n") == item.expected_context.strip("\n"):
        return []
    line = text.count("\n", 0, start) + 1 if start >= 0 else None
    return [Finding(unit=item.unit, rule="malformed-provenance", severity="error", line=line,
                    message="the context block differs from the one Fyan wrote (cited material is written by code)")]


# -- dependencies -----------------------------------------------------------------------------

_TEX_REF = re.compile(
    r"\\(?:[cC]ref|ref|eqref|autoref|nameref|labelcref|pageref|[vV]ref|uses|crefrange)\*?\s*\{([^{}]*)\}"
)
_LINK = re.compile(r"\]\(#([^)\s]+)\)")


def _undeclared(item: LintInput, label_units: Mapping[str, str]) -> list[Finding]:
    out: list[Finding] = []
    allowed = set(item.depends_on) | set(item.context_units) | {item.unit}
    seen: set[tuple[str, str]] = set()
    text = item.problem_tex
    end = text.find(END)
    first_line = text.count("\n", 0, end + len(END)) + 2 if end >= 0 else 1  # the line after the block
    body = strip_provenance(text)
    ctx_start = body.find(CONTEXT_BEGIN)
    if ctx_start >= 0:  # keep the line numbers: blank the context block's lines
        ctx_end = body.find(CONTEXT_END, ctx_start)
        ctx_end = len(body) if ctx_end < 0 else ctx_end + len(CONTEXT_END)
        body = body[:ctx_start] + re.sub(r"[^\n]", " ", body[ctx_start:ctx_end]) + body[ctx_end:]
    for n, line in enumerate(_uncommented(body).split("\n"), start=first_line):
        labels = [x.strip() for m in _TEX_REF.finditer(line) for x in m.group(1).split(",")]
        labels += _LINK.findall(line)
        labels += [f"{word} {number}" for _, word, number in find_references(line)]
        for label in labels:
            unit = label_units.get(label)
            if unit is None or unit in allowed or (label, unit) in seen:
                continue
            seen.add((label, unit))
            out.append(Finding(unit=item.unit, rule="undeclared-dependency", severity="error",
                               message=f"cites {label!r} of unit {unit}, which is not a declared dependency", line=n))
    return out


def lint_units(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge], files: dict[str, dict[str, bytes]],
               source_prefix: str, mentions: list[Edge] | None = None,
               contexts: dict[str, str] | None = None) -> list[Finding]:
    """The rules on every unit's ``problem.tex`` (``files`` from ``render_files`` or a
    regeneration), each compared with its source statement, its declared dependencies and
    mentions, and the code-written provenance block (and context block, ``contexts``: unit ->
    block text, when given)."""
    owner = {i: u.id for u in units for i in u.statements}
    inputs: list[LintInput] = []
    by_unit: dict[str, list[Edge]] = {}
    said_by: dict[str, list[Edge]] = {}
    for e in edges:
        by_unit.setdefault(e.unit, []).append(e)
    for m in mentions or []:
        said_by.setdefault(m.unit, []).append(m)
    for u in units:
        deps = by_unit.get(u.id, [])
        said = said_by.get(u.id, [])
        nested = [owner[p] for i in u.statements if (p := catalogue.statements[i].parent) is not None and p in owner]
        inputs.append(LintInput(
            unit=u.id, problem_tex=files[u.id]["problem.tex"].decode("utf-8"), source_tex=statement_text(u, catalogue),
            depends_on=[e.depends_on for e in deps], context_units=nested + [m.depends_on for m in said],
            expected_block=provenance_block(u, catalogue, deps, source_prefix, said),
            expected_context=None if contexts is None else contexts.get(u.id, "")))
    label_units = {label: owner[site.statement_index] for label, site in catalogue.labels.items()
                   if site.statement_index in owner}
    return lint_problems(inputs, label_units=label_units)
