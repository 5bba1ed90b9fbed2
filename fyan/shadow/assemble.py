"""The Lean files SA-Pass compiles: one whole file per check (issue 6, item 5).

* ``candidate_file`` — the submission as kept (imports, ``open``, namespaces, helpers, the
  candidate), the ``end`` commands closing its open scopes, ``#print axioms <candidate>`` (the
  sorry evidence) and the end marker;
* ``checker_file`` — the same kept text and closings, a model-drafted adapter when one was used,
  then *one* checker (names adapted) and the end marker. Every checker gets its own copy, so one
  failing checker never hides the others;
* ``reference_file`` — the shadow set's header and reference, optionally one checker (the
  completeness check), or with the target replaced by ``theorem <target> : True := trivial``
  (the vacuity probe: a forward checker that still compiles does not depend on the target).

Line numbers recorded in ``Assembled`` are 1-based lines of the assembled text; the evaluation
only believes messages at those lines (``compiler.marker_seen``, ``compiler.axioms_at``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fyan.shadow.compiler import MARKER
from fyan.shadow.extract import Candidate
from fyan.shadow.shadowset import ShadowSet


@dataclass(frozen=True)
class Assembled:
    check: str
    text: str
    nonce: str
    marker_line: int
    axioms_line: int | None = None
    checker_lines: tuple[int, int] | None = None  # first and last line of the checker block


class _Builder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, text: str) -> tuple[int, int]:
        chunk = text.rstrip("\n").split("\n")
        first = len(self.lines) + 1
        self.lines.extend(chunk)
        return first, len(self.lines)

    def blank(self) -> None:
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    def marker(self, nonce: str) -> int:
        self.blank()
        return self.add(f'#print "{MARKER} {nonce}"')[0]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _prefix(candidate: Candidate) -> _Builder:
    b = _Builder()
    b.add(candidate.kept)
    if candidate.closing:
        b.add("\n".join(candidate.closing))
    return b


def candidate_file(candidate: Candidate, nonce: str) -> Assembled:
    b = _prefix(candidate)
    b.blank()
    b.add("-- fyan shadow: evidence lines (generated)")
    axioms = b.add(f"#print axioms {candidate.name}")[0]
    marker = b.marker(nonce)
    return Assembled("compile", b.text(), nonce, marker, axioms_line=axioms)


def checker_file(candidate: Candidate, check: str, checker: str, nonce: str, adapter: str | None = None) -> Assembled:
    b = _prefix(candidate)
    if adapter:
        b.blank()
        b.add("-- fyan shadow: MODEL-DRAFTED ADAPTER (fallback; recorded in the report)\n" + adapter)
    b.blank()
    span = b.add(checker)
    marker = b.marker(nonce)
    return Assembled(check, b.text(), nonce, marker, checker_lines=span)


def reference_file(shadow_set: ShadowSet, check: str, checker: str | None, nonce: str, *, vacuous: bool = False) -> Assembled:
    b = _Builder()
    if shadow_set.header.strip():
        b.add(shadow_set.header.strip("\n"))
        b.blank()
    reference = shadow_set.reference
    if vacuous:
        decl = shadow_set.reference_declaration()
        lines = reference.split("\n")
        replacement = f"theorem {decl.name} : True := trivial"
        reference = "\n".join(lines[: decl.line_start - 1] + [replacement] + lines[decl.line_end:])
    b.add(reference.strip("\n"))
    span = None
    if checker is not None:
        b.blank()
        span = b.add(checker)
    marker = b.marker(nonce)
    return Assembled(check, b.text(), nonce, marker, checker_lines=span)
