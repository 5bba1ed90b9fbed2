"""The candidate declaration of a submission: its *last* theorem block.

A submission is a Lean file. Its candidate is the last top-level ``theorem``/``lemma`` block, so
a backup declaration written after a long attempt is the candidate (and a ``sorry`` there fails
it). Everything before the candidate — imports, ``open``, helper definitions and lemmas, earlier
attempts — is kept as written; anything after it is not compiled (a later ``example`` or command
cannot be the candidate). Scopes (``namespace``, ``section``, ``noncomputable section``,
``mutual``) still open at the candidate are closed by the assembled file, so checkers are
elaborated at the root, outside the submission's namespaces.

Why not LeanInteract's ``extract_last_theorem``: it was evaluated (lean-interact 0.11.6 installs
from PyPI and its helpers run without a toolchain), but it (a) treats an ``example`` as a theorem,
so an ``example`` after the candidate would be picked although checkers cannot name it, (b) finds
the keyword inside string literals, (c) leaves attributes and modifiers (``@[simp] private``) with
the previous block, and (d) gives a character offset only, while name adaptation needs every
helper's kind and full name. ``fyan.lean.declarations.scan`` gives all of that (kind, full name
with namespaces, header, body, line range) and is the scanner the rest of Fyan already uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fyan.lean import declarations
from fyan.lean.declarations import Declaration

_SORRY = re.compile(r"\b(?:sorry|admit)\b")
_SCOPE_OPEN = re.compile(r"^(?:noncomputable\s+)?(?P<kind>namespace|section)(?:\s+(?P<name>\S+))?\s*$")
_SCOPE_END = re.compile(r"^end(?:\s+(?P<name>\S+))?\s*$")


class NoCandidate(ValueError):
    """The submission has no top-level theorem block."""


@dataclass(frozen=True)
class Candidate:
    """The candidate of one submission.

    ``kept`` is the submission's text up to the candidate's last line; ``closing`` the ``end``
    commands that close the scopes open there (innermost first); ``helpers`` the declarations
    before it. Line numbers are 1-based lines of the submission.
    """

    declaration: Declaration
    kept: str
    closing: tuple[str, ...]
    helpers: tuple[Declaration, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return self.declaration.full_name

    @property
    def sorry_in_statement(self) -> bool:
        """``sorry``/``admit`` in the statement (binders and type), comments ignored: the
        statement is then not a statement at all, under every policy."""
        return bool(_SORRY.search(self.declaration.header))

    @property
    def sorry_in_proof(self) -> bool:
        """``sorry``/``admit`` in the candidate's proof text (comments ignored). The compiled
        evidence (``sorryAx`` among its axioms) is what the evaluation decides on."""
        return bool(_SORRY.search(self.declaration.body))


def open_scopes(text: str, upto_line: int) -> list[tuple[str, str]]:
    """Scopes (kind, name) open after line ``upto_line`` (1-based) of ``text``, outermost first.

    Only top-level commands count (a line starting at column 0, comments removed).
    """
    stack: list[tuple[str, str]] = []
    for line in declarations.strip_comments(text).split("\n")[:upto_line]:
        if line[:1] in (" ", "\t") or not line.strip():
            continue
        s = line.strip()
        m = _SCOPE_OPEN.match(s)
        if m:
            stack.append((m.group("kind"), m.group("name") or ""))
            continue
        if s == "mutual":
            stack.append(("mutual", ""))
            continue
        m = _SCOPE_END.match(s)
        if m and stack:
            stack.pop()
    return stack


def _closing(scopes: list[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(f"end {name}".rstrip() for kind, name in reversed(scopes) if kind != "mutual")


def _build(text: str, decl: Declaration, decls: list[Declaration]) -> Candidate:
    lines = text.split("\n")
    kept = "\n".join(lines[: decl.line_end]).rstrip() + "\n"
    helpers = tuple(d for d in decls if d.line_end < decl.line_start)
    return Candidate(decl, kept, _closing(open_scopes(text, decl.line_end)), helpers)


def extract_candidate(text: str) -> Candidate:
    """The last top-level theorem block of ``text`` with what is kept before it.

    Raises ``NoCandidate`` when there is no theorem or lemma (``example`` blocks do not count: a
    checker cannot name them).
    """
    decls = declarations.scan(text)
    theorems = [d for d in decls if d.kind == "theorem" and d.full_name]
    if not theorems:
        raise NoCandidate("no top-level theorem or lemma block (an `example` cannot be a candidate)")
    return _build(text, theorems[-1], decls)


def candidate_named(text: str, full_name: str) -> Candidate:
    """The declaration ``full_name`` of ``text`` as the candidate (the gate's frozen root).

    Raises ``NoCandidate`` when it is not declared there.
    """
    decls = declarations.scan(text)
    decl = next((d for d in decls if d.full_name == full_name), None) or declarations.find(decls, full_name)
    if decl is None:
        raise NoCandidate(f"{full_name} is not declared in the file")
    return _build(text, decl, decls)
