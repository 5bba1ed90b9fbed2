"""The Lean files SA-Pass compiles: one whole file per check.

* ``candidate_file`` — the submission as kept (imports, ``open``, namespaces, helpers, the
  candidate) and the ``end`` commands closing its open scopes; the trusted inspector then reports
  the candidate's axioms and every extension entry the file registers;
* ``checker_file`` — a module of its own: the shadow set's imports and
  ``import <the compiled candidate module>``, then the rest of the shadow set's header (its
  ``open``/``set_option`` lines, which the checkers are written against), a model-drafted adapter
  when one was used, then *one* checker (names adapted), a theorem named
  ``fyan_shadow_check_<nonce>``. No text of the submission is in it: what the submission scopes to
  its own file — ``local instance``, ``attribute [local …]``, ``local notation``, ``open``,
  ``set_option``, ``section``/``namespace`` and their ``variable``s — ends with the submission's
  module and never reaches a checker (Lean's import reads only the exported environment:
  docs/lean-contract.md, "SA-Pass: a checker module imports the submission"). Every checker gets
  its own module, so one failing checker never hides the others;
* ``reference_file`` — the shadow set's header and reference, optionally one checker (the
  completeness check), or with the target replaced by ``theorem <target> : True := trivial``
  (the vacuity probe: a forward checker that still compiles does not depend on the target).

A check counts only when the inspector finds the checker theorem in the compiled module
(``Assembled.checker_name``); its line range (``checker_lines``, 1-based) locates errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fyan.shadow.compiler import CHECKER_PREFIX
from fyan.shadow.extract import Candidate
from fyan.shadow.shadowset import ShadowSet


@dataclass(frozen=True)
class Assembled:
    check: str
    text: str
    nonce: str
    checker_name: str | None = None  # the checker theorem the inspector must find
    checker_lines: tuple[int, int] | None = None  # first and last line of the checker block


def checker_name(nonce: str) -> str:
    return f"{CHECKER_PREFIX}{nonce}"


def name_checker(checker: str, nonce: str) -> str:
    """The rendered checker (``shadowset.forward_checker``/``backward_checker``, a theorem
    called ``fyan_shadow_check``) with this file's nonce in its name."""
    return checker.replace("theorem fyan_shadow_check", f"theorem {checker_name(nonce)}", 1)


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
    return Assembled("compile", b.text(), nonce)


#: A line of a Lean file header: ``module``, ``prelude`` or an ``import`` (with the module
#: system's ``public``/``meta``/``all`` modifiers).
_HEADER_LINE = re.compile(r"^(?:module|prelude|(?:public\s+|private\s+)?(?:meta\s+)?import(?:\s+all)?\s+\S.*)$")


def split_header(header: str) -> tuple[list[str], str]:
    """The header lines (``module``/``prelude``/``import …``) at the start of ``header`` and the
    text after them (blank and comment-only lines before the first command are dropped)."""
    lines = header.strip("\n").split("\n") if header.strip() else []
    head: list[str] = []
    i = 0
    while i < len(lines):
        s = lines[i].split("--", 1)[0].strip()
        if not s:
            i += 1
            continue
        if not _HEADER_LINE.match(s):
            break
        head.append(s)
        i += 1
    return head, "\n".join(lines[i:]).strip("\n")


def checker_file(candidate_module: str, header: str, check: str, checker: str, nonce: str,
                 adapter: str | None = None) -> Assembled:
    """One checker's module (module docstring): it imports ``candidate_module`` (the compiled
    submission, ``compiler.module_name`` of ``candidate_file``) after the imports of ``header``
    (the shadow set's) and elaborates the rest of ``header``, ``adapter`` and ``checker``."""
    head, rest = split_header(header)
    b = _Builder()
    head = sorted(head, key=lambda h: 0 if h == "module" else 1 if h == "prelude" else 2)  # stable: imports keep order
    b.add("\n".join([*head, f"import {candidate_module}"]))
    if rest:
        b.blank()
        b.add(rest)
    if adapter:
        b.blank()
        b.add("-- fyan shadow: MODEL-DRAFTED ADAPTER (fallback; recorded in the report)\n" + adapter)
    b.blank()
    span = b.add(name_checker(checker, nonce))
    return Assembled(check, b.text(), nonce, checker_name=checker_name(nonce), checker_lines=span)


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
    name = None
    if checker is not None:
        b.blank()
        span = b.add(name_checker(checker, nonce))
        name = checker_name(nonce)
    return Assembled(check, b.text(), nonce, checker_name=name, checker_lines=span)
