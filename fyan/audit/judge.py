"""Judge orchestration: the model calls of one audit attempt.

1. ``audit_source`` — extract the source formula tree from ``problem.tex`` with literal
   quotations (form-checked by ``extraction_errors``);
2. ``audit_source_check`` — an independent second call (fresh conversation, different prompt;
   it sees ``problem.tex`` and the extracted tree only, never any Lean) judges the tree
   faithful. An "unfaithful" verdict gets one re-extraction that quotes its objections and a
   second check; still unfaithful → the attempt fails (``SourceRejected``);
3. ``audit`` — the judge pairs source and candidate slots into an evidence record. It sees the
   Lean roots with every comment removed. A record that fails the validator gets
   ``[audit] form_repairs`` repair turns against the unchanged inputs (only the error list is
   added); after that the attempt fails — a rejection, never an acceptance;
4. for a record graded 1 ≤ g < threshold under ``grade1_policy = "bridge"``: ``audit_bridge``
   writes S0, the source-facing statement ``<root>_faithful``, and ``audit`` is asked again to
   record S0 against the same source slots.

A *valid* record is never resampled: when an earlier attempt already produced a valid verdict
below the threshold for exactly these inputs (``AuditInputs.key``), its files are reused and no
model is called (``prior_files``). Nothing here decides: the files go to the gateway, whose
check re-runs ``fyan.audit.decide``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from pydantic import BaseModel

from fyan.audit.decide import (
    BRIDGE_LEAN, BRIDGE_RECORD, RECORD, SOURCE, SOURCE_CHECK, AuditInputs, bridge_form_errors, decide,
    faithful_name, prior_verdict, read_files, source_table,
)
from fyan.audit.formula import Node
from fyan.audit.grading import bridge_eligible, grade_record
from fyan.audit.record import CONVERSIONS, RELATIONS, AuditResult, BridgeReply, EvidenceRecord, SourceCheck, SourceExtraction
from fyan.audit.render import slot_lines, tree_outline
from fyan.audit.source import check_errors, extraction_errors
from fyan.audit.statement import LeanSide, lean_side
from fyan.audit.validator import validate
from fyan.errors import ModelOutputError

T = TypeVar("T", bound=BaseModel)
NONE = "(none)"


class Asker(Protocol):
    """What the judge needs from a stage session (``fyan.agents.session.StageSession``)."""

    def ask_json(self, name: str, values: dict[str, str], schema: type[T],
                 check: Callable[[T], list[str]] | None = None, repairs: int | None = None) -> T: ...


class SourceRejected(ModelOutputError):
    """The independent check judged the extracted source tree unfaithful twice."""


def relations_text() -> str:
    return "\n".join(f"- `{r}` (grade {g}): {d}" for r, (g, d) in RELATIONS.items())


def conversions_text() -> str:
    return "\n".join(f"- `{c}`: {d}" for c, d in CONVERSIONS.items())


def _write(out: Path, name: str, text: str) -> None:
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def extract_source(s: Asker, inputs: AuditInputs, repairs: int) -> tuple[SourceExtraction, SourceCheck]:
    """Calls 1 and 2 (module docstring); raises ``SourceRejected`` after a second "unfaithful"."""
    values = {"unit": inputs.unit, "kind": inputs.kind, "problem": inputs.problem, "upstream": inputs.upstream_text,
              "objections": NONE}
    for round_ in range(2):
        ex = s.ask_json("audit_source", values, SourceExtraction,
                        check=lambda e: extraction_errors(e, inputs.problem), repairs=repairs)
        tree = source_table(ex).tree
        terms = "\n".join(f"- `{t.name}`{' (defined here)' if t.defined_here else ''}: «{t.quote}»"
                          + (f"; also called {', '.join(t.aliases)}" if t.aliases else "") for t in ex.terms) or NONE
        def check(reply: SourceCheck, tree: Node = tree) -> list[str]:
            return check_errors(reply, tree)

        verdict = s.ask_json("audit_source_check", {"problem": inputs.problem, "tree": tree_outline(tree), "terms": terms},
                             SourceCheck, check=check, repairs=repairs)
        if verdict.verdict == "faithful":
            return ex, verdict
        values = {**values, "objections": "\n".join(f"- {o.node}: {o.problem}" for o in verdict.objections)}
        if round_ == 1:
            raise SourceRejected(
                "the independent check judged the extracted source statement unfaithful twice: "
                + "; ".join(f"{o.node}: {o.problem}" for o in verdict.objections)[:500])
    raise AssertionError("unreachable")


def ask_record(s: Asker, inputs: AuditInputs, src_ex: SourceExtraction, side: LeanSide, repairs: int) -> EvidenceRecord:
    """Call 3: the evidence record for ``side`` (the roots, or S0)."""
    src = source_table(src_ex)
    ctx = inputs.context(side)
    values = {
        "unit": inputs.unit, "root": side.root.split(".")[-1], "problem": inputs.problem,
        "source_tree": tree_outline(src.tree), "source_slots": slot_lines(src),
        "statement": side.text, "candidate_tree": tree_outline(side.slots.tree, quotes=False),
        "candidate_slots": slot_lines(side.slots, quotes=False),
        "checked": ", ".join(sorted(d for d in side.checked_defs if "." not in d)) or NONE,
        "relations": relations_text(), "conversions": conversions_text(),
    }
    return s.ask_json("audit", values, EvidenceRecord, check=lambda r: validate(r, src, side.slots, ctx), repairs=repairs)


def ask_bridge(s: Asker, inputs: AuditInputs, side: LeanSide, result: AuditResult, repairs: int) -> BridgeReply:
    name = faithful_name(side.root)
    values = {"unit": inputs.unit, "root": side.root.split(".")[-1], "name": name, "problem": inputs.problem,
              "statement": side.text, "changes": "\n".join(f"- {r}" for r in result.repairs) or NONE}
    return s.ask_json("audit_bridge", values, BridgeReply, check=lambda r: bridge_form_errors(r.lean, inputs, side),
                      repairs=repairs)


def run_judge(s: Asker, inputs: AuditInputs, out: Path, *, repairs: int,
              prior: dict[str, bytes] | None = None) -> None:
    """Run the audit's model calls and write the files into the attempt folder ``out``.

    ``prior``: the files of an earlier attempt whose valid verdict on the same inputs stands;
    they are written again and no model is called. Raises ``ModelOutputError`` when a reply
    stays malformed after the form repairs, ``SourceRejected`` (module docstring), and
    ``KeyError``/``LeanParseError`` when the statement's roots cannot be read.
    """
    if prior:
        for name, data in prior.items():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(data)
        return
    side = inputs.side()
    ex, verdict = extract_source(s, inputs, repairs)
    _write(out, SOURCE, json.dumps(ex.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
    _write(out, SOURCE_CHECK, verdict.model_dump_json(indent=2) + "\n")
    record = ask_record(s, inputs, ex, side, repairs)
    _write(out, RECORD, json.dumps(record.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
    ctx = inputs.context(side)
    result = grade_record(record, source_table(ex), side.slots, ctx)
    if not bridge_eligible(result, ctx) or any(d.kind != "theorem" for d in side.decls.values()):
        return
    reply = ask_bridge(s, inputs, side, result, repairs)
    _write(out, BRIDGE_LEAN, reply.lean.strip() + "\n")
    s0 = lean_side(reply.lean, "", [faithful_name(side.root)], inputs.upstream_signatures, prefix="b")
    s0_record = ask_record(s, inputs, ex, s0, repairs)
    _write(out, BRIDGE_RECORD, json.dumps(s0_record.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")


def prior_files(attempt_dirs: list[Path], key: str) -> tuple[dict[str, bytes], str] | None:
    """The files of the latest earlier attempt whose valid verdict below the threshold was
    reached on inputs ``key`` (``fyan.audit.decide.prior_verdict``), with its folder's name."""
    found = prior_verdict(attempt_dirs, key)
    if found is None:
        return None
    return read_files(found[1]), found[1].name


__all__ = ["Asker", "SourceRejected", "run_judge", "prior_files", "decide", "relations_text", "conversions_text"]
