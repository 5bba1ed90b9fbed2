"""Whether a record's pairing follows the statements' trees (pure code, no model).

Rows compare items one group at a time; a statement is more than its items. Two statements
whose items agree one by one can still differ in where the items sit: ``∃ x, ∀ y, x ≤ y``
(bounded) and ``∀ y, ∃ x, x ≤ y`` (pointwise bounded) have the same objects and the same atom.
So for the rows that claim agreement (``same``, ``trivial_equivalent``; omission rows are
graded as changes anyway) code checks, on the trees the slots were cut from:

* **polarity** — the items of a row sit at the same polarity on both sides (an object: its
  quantifier at the same position), so a claim cannot move into a premise or under a negation;
* **binder order** — for two paired objects, when one scopes over the other on one side and
  the other over the one on the other side, the two must be of the same effective kind (both ∀
  or both ∃, reading a binder at negative position as its dual): binders of one kind may be
  reordered, a ∀ and an ∃ may not (a binder moved out of a premise, ``(∃ s, P s) → Q`` as
  ``∀ s, P s → Q``, nests nothing the other way and is left to the texts);
* **which hypotheses a claim is under** — the rows of the hypotheses (and instance binders) in
  scope of a row's goals are the same on both sides.

``structure_problems`` returns, per row number (1-based), why the row's items do not sit in the
same place; an empty mapping means the pairing follows the trees.
"""

from __future__ import annotations

from fyan.audit.record import EvidenceRecord
from fyan.audit.slots import Slot, SlotTable

AGREEING = ("same", "trivial_equivalent")
REMOVAL = ("one_point_rule", "decidability_instance")


def _effective(o: Slot) -> str:
    if o.position == "mixed":
        return "mixed"
    if o.position == "negative":
        return "exists" if o.quantifier == "forall" else "forall"
    return o.quantifier or "forall"


def _leaves(slots: list[Slot], removal: bool) -> list[Slot]:
    out = [s for s in slots if s.kind in ("hypothesis", "goal")]
    if removal:  # an equation the one-point rule removes may sit anywhere the rule allows
        out = [s for s in out if "=" not in s.text or any(op in s.text for op in ("≠", "≤", "≥"))]
    return out


def structure_problems(record: EvidenceRecord, src: SlotTable, cand: SlotTable) -> dict[int, str]:
    """Per row, why its items do not sit in the same place of the two trees (module docstring)."""
    problems: dict[int, list[str]] = {}
    rows: list[tuple[int, list[Slot], list[Slot]]] = []
    row_of: dict[str, int] = {}
    for i, row in enumerate(record.rows, start=1):
        if row.relation not in AGREEING or not row.source or not row.candidate:
            continue
        ss = [x for x in (src.get(y) for y in row.source) if x is not None]
        cc = [x for x in (cand.get(y) for y in row.candidate) if x is not None]
        if len(ss) != len(row.source) or len(cc) != len(row.candidate):
            continue
        rows.append((i, ss, cc))
        for x in row.source + row.candidate:
            row_of[x] = i
    pairs: list[tuple[int, Slot, Slot]] = []
    for i, ss, cc in rows:
        removal = bool(set(record.rows[i - 1].conversions) & set(REMOVAL))
        pol_s = sorted({s.polarity for s in _leaves(ss, removal)})
        pol_c = sorted({c.polarity for c in _leaves(cc, removal)})
        if pol_s and pol_c and pol_s != pol_c:
            problems.setdefault(i, []).append(
                f"its items sit at {'/'.join(pol_s)} polarity in the source and {'/'.join(pol_c)} in the candidate "
                "(a premise, a claim or a negation moved)")
        os_ = [s for s in ss if s.kind == "object" and s.binder != "instance"]
        oc = [c for c in cc if c.kind == "object" and c.binder != "instance"]
        reshaped = removal or "definition_unfolding" in record.rows[i - 1].conversions
        if not reshaped and sorted(map(_effective, os_)) != sorted(map(_effective, oc)):
            problems.setdefault(i, []).append("a binder changes between ∀ and ∃ (or moves into or out of a premise)")
        if len(os_) == len(oc):
            pairs.extend((i, a, b) for a, b in zip(os_, oc, strict=True))
            if not reshaped and any(_effective(a) != _effective(b) for a, b in zip(os_, oc, strict=True)):
                problems.setdefault(i, []).append("a binder is paired with one of the other kind (∀ with ∃)")
    for i, a, a2 in pairs:
        for j, b, b2 in pairs:
            if a.id == b.id:
                continue
            if a.id in b.scope and b2.id in a2.scope and _effective(a) != _effective(b):
                msg = (f"binder order: the source has {_q(a)} {a.var} over {_q(b)} {b.var}, the candidate has "
                       f"{b2.var} over {a2.var} (a ∀ and an ∃ do not commute)")
                for k in (i, j):
                    if msg not in problems.get(k, []):
                        problems.setdefault(k, []).append(msg)
    for i, ss, cc in rows:
        def under(slots: list[Slot], table: SlotTable) -> set[int]:
            out = set()
            for g in slots:
                if g.kind != "goal":
                    continue
                for h in g.scope:
                    hs = table.get(h)
                    premise = hs is not None and (hs.kind == "hypothesis" or hs.binder == "instance")
                    if premise and row_of.get(h, i) != i:
                        out.add(row_of[h])
            return out
        hs_, hc = under(ss, src), under(cc, cand)
        if hs_ != hc:
            problems.setdefault(i, []).append(
                f"its claim is under the hypotheses of rows {sorted(hs_) or 'none'} in the source but of rows "
                f"{sorted(hc) or 'none'} in the candidate")
    return {k: "; ".join(v) for k, v in problems.items()}


def _q(o: Slot) -> str:
    return "∀" if o.quantifier == "forall" else "∃"
