"""Try to refute a frozen statement on small instances before proving it.

After the audit froze a unit's statement, the Formalizer's attempt first runs, for each frozen
theorem (role ``root``), a Lean check Fyan writes from the frozen signature itself
(``frozen_program``): the statement with every binder over a small type quantified over it —
``Bool`` and ``Fin k`` (``k`` a numeral up to 64) as they are, natural numbers below ``[refute]
frozen_bound`` (``∀ n : ℕ, n < B → …``), hypotheses (a binder whose type is a proposition: it
mentions an earlier binder or a relation) kept as premises — and asks ``decide`` for the negation
(``fyan.refute.runner``). The bounded statement follows from the frozen one, so refuting it
refutes the frozen statement. A binder over any other type (a type variable, an instance, reals,
an unknown structure) gives no check: nothing is run and nothing is decided.

A refutation blocks the unit (``FailureKind.REFUTED``) with the evidence: the prove stage's check
regenerates the program from the store's freezes, re-runs it itself, and only a refutation it
confirms blocks (``confirm``). The unit goes back to the audit once a human has given guidance;
the prover never sees a refuted statement.
"""

from __future__ import annotations

import re
from pathlib import Path

from fyan.lean.declarations import _top_level_colon, normalize
from fyan.refute.models import RefutationLimits, RefutationOutcome, RefutationProgram, TargetAssertion
from fyan.refute.record import FROZEN_FOLDER
from fyan.refute.runner import LeanCheck, run_refutation

_OPEN = {"(": ")", "{": "}", "[": "]", "⦃": "⦄"}
_FIN = re.compile(r"^Fin\s+(\d+)$")
_NAT = ("ℕ", "Nat")
_RELATION = re.compile(r"[<>≤≥=≠∣∧∨¬→↔]|\bEven\b|\bOdd\b|\bPrime\b|\.Prime\b|\bTrue\b|\bFalse\b")

#: what ``status`` and the unit's block reason say after a refutation
REMEDY = ("the document's statement may be wrong, or its formalization: re-audit (`fyan audit`) or give guidance "
          "(guidance/<unit>.md), which sends the unit back to the audit")


def _binders(header: str) -> tuple[list[tuple[str, str, str]], str] | None:
    """(binders as (bracket, names, type), the statement's type) of a declaration header, or None
    when it cannot be read as bracketed binders then ``: type``."""
    colon = _top_level_colon(header)
    if colon < 0:
        return None
    head, typ = header[:colon].strip(), normalize(header[colon + 1:])
    out = []
    i = 0
    while i < len(head):
        c = head[i]
        if c.isspace():
            i += 1
            continue
        if c not in _OPEN:
            return None  # an unbracketed binder (a `variable`-style pattern): not read
        depth, j = 0, i
        while j < len(head):
            if head[j] in "([{⦃⟨":
                depth += 1
            elif head[j] in ")]}⦄⟩":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        inner = head[i + 1:j]
        k = _top_level_colon(inner)
        if k < 0 and c != "[":  # an anonymous instance binder `[Group α]` has no colon
            return None
        out.append((c, normalize(inner[:k]) if k >= 0 else "", normalize(inner[k + 1:])))
        i = j + 1
    return out, typ


def frozen_program(decl: str, signature: str, bound: int) -> tuple[RefutationProgram | None, str]:
    """The small-instance check of one frozen theorem (module docstring): (program, how it was
    made) or (None, why there is none). ``signature`` is the freeze's normalized signature
    (``theorem name binders : type``)."""
    words = signature.split(None, 2)
    if len(words) < 3 or words[0] not in ("theorem", "lemma"):
        return None, f"{decl}: not a theorem"
    read = _binders(words[2])
    if read is None:
        return None, f"{decl}: its binders cannot be read"
    binders, typ = read
    names_seen: list[str] = []
    parts = []
    for bracket, names, btype in binders:
        if bracket == "[":
            return None, f"{decl}: instance binder [{(names + ' : ') if names else ''}{btype}] (not a small type)"
        idents = names.split()
        small = btype in _NAT or btype in ("Bool",) or bool(_FIN.match(btype) and int(_FIN.match(btype)[1]) <= 64)
        mentions = any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w'])", btype) for n in names_seen)
        if small:
            for n in idents:
                if btype in _NAT:
                    parts.append(f"∀ ({n} : ℕ), {n} < {bound} →")
                else:
                    parts.append(f"∀ ({n} : {btype}),")
            names_seen += idents
        elif mentions or _RELATION.search(btype):
            parts.append(f"∀ ({' '.join(idents)} : {btype}),")
        else:
            return None, f"{decl}: binder {names} : {btype} is not over a finite or small type"
    if not typ:
        return None, f"{decl}: no statement type"
    instance = " ".join(parts + [f"({typ})"]) if parts else typ
    target = TargetAssertion(id=f"frozen:{decl}", text=signature)
    program = RefutationProgram(language="lean", target=target, lean_instance=instance, origin="fyan")
    return program, f"{decl}: decide on {instance}"


def frozen_programs(freezes, bound: int, header: str) -> tuple[list[RefutationProgram], list[str]]:
    """The checks of a unit's frozen theorems (root role only; ``freezes`` are ``FreezeRecord``
    s) with ``header``, and the reasons some have none."""
    programs, skipped = [], []
    for f in freezes:
        if f.role != "root":
            continue
        program, why = frozen_program(f.decl, f.normalized_signature, bound)
        if program is None:
            skipped.append(why)
        else:
            programs.append(program.model_copy(update={"lean_header": header}))
    return programs, skipped


def run_frozen_checks(programs: list[RefutationProgram], attempt_dir: Path, limits: RefutationLimits,
                      lean: LeanCheck | None, hidden: tuple[Path, ...] = ()) -> list[RefutationOutcome]:
    """Run each check in ``<attempt>/frozen-refutation/<n>/`` (its ``program.json`` and
    ``outcome.json`` there: ``fyan.refute.record.tally`` counts them), stopping at the first
    refutation."""
    outcomes: list[RefutationOutcome] = []
    base = attempt_dir / FROZEN_FOLDER
    for n, program in enumerate(programs, start=1):
        outcome = run_refutation(program, workdir=base / str(n), limits=limits, lean=lean, hidden=hidden)
        outcomes.append(outcome)
        if outcome.refutes:
            break
    return outcomes


def block_reason(outcome: RefutationOutcome, where: str) -> str:
    """The block reason of a unit whose frozen statement was refuted (``fyan status`` shows it)."""
    decl = outcome.target.id.removeprefix("frozen:")
    return (f"frozen statement refuted on small instance: {decl} is false for some value of its binders "
            f"({outcome.witness}: `decide` proved the negation, compiled by Fyan; evidence {where}) → {REMEDY}")
