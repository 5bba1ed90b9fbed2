"""The validator of an evidence record: pure code, no model.

``validate`` returns a list of precise errors; any error rejects the record (fail closed); the
judge gets them back as a form repair. Checks:

* schema (pydantic, before this module), the audited root's name;
* identifiers: every slot id exists on its side; adapters and certificates name existing
  slots or nodes; ``mutated`` rows name existing affected slots;
* coverage: every slot of both sides is in exactly one row (an unpaired slot needs an
  omission row: a row with the other side empty);
* relation-specific fields: ``trivial_equivalent`` names conversions from ``CONVERSIONS`` only,
  ``definition_unfolding`` names checked definitions in ``unfolds``, ``one_point_rule`` needs an
  equation for each object of its row and ``decidability_instance`` instance binders only; every
  relation but ``same`` and ``unaligned`` carries an argument; ``mutated`` names the downstream
  items affected; ``unaligned`` and omission rows state the concrete difference;
* ``same`` is checked on the texts (``formula.canonical``: bound variables renamed through the
  object rows, definition names through the definition rows) and on the trees
  (``fyan.audit.structure``: polarity, the order of a ∀ and an ∃, the hypotheses a claim is
  under); ``same`` on a definition slot requires a checked definition;
* an omission row that claims a direction must claim the one code computes from the ⊤/⊥
  replacement (``omission_direction``);
* no placeholder text stands in for evidence (``PLACEHOLDERS``, or fewer than 12 characters);
* transfer evidence is present when a row records a substantive change.

Whether a relation is admissible at the slots' polarity is *not* a form error: an inadmissible
relation is a valid record with grade 0 (``fyan.audit.grading``). Nor is a conversion that does
not apply: ``conversion_problem`` applies a ``trivial_equivalent`` row's conversions
(``fyan.audit.conversions``) and compares what is left; a row it cannot verify grades 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fyan.audit.conversions import Definition, apply_decidability, apply_one_point, unfolding_problem
from fyan.audit.formula import Node, canonical, identifiers, relation_normal
from fyan.audit.record import (CHECKED_CONVERSIONS, CONVERSIONS, PLACEHOLDERS, REMOVAL_CONVERSIONS, EvidenceRecord,
                               EvidenceRow)
from fyan.audit.slots import Slot, SlotTable
from fyan.audit.structure import structure_problems

SUBSTANTIVE = ("mutated_equivalent", "mutated_stronger", "mutated_weaker", "mutated")


@dataclass
class AuditContext:
    """What the decision needs beyond the two slot tables.

    ``root``: full name of the audited declaration; ``checked_defs``: definitions that are
    themselves audited and frozen (upstream units' frozen definitions, this unit's definition
    roots), short and full names; ``policy``: ``[audit] grade1_policy``; ``definitions``: the
    upstream frozen definitions code can unfold (``fyan.audit.conversions.definitions_of``).
    """

    root: str
    threshold: int = 2
    checked_defs: frozenset[str] = field(default_factory=frozenset)
    policy: str = "repair"
    definitions: dict[str, Definition] = field(default_factory=dict)


def placeholder(text: str | None, minimum: int = 12) -> bool:
    """True when ``text`` is empty, shorter than ``minimum`` characters, or placeholder text."""
    t = " ".join((text or "").split()).lower().strip(" .:;!")
    return len(t) < minimum or t in PLACEHOLDERS or bool(re.fullmatch(r"[\W_]*(todo|tbd|xxx|\.\.\.|…)[\W_]*.*", t))


def is_omission(row: EvidenceRow) -> bool:
    return not row.source or not row.candidate


def omission_direction(row: EvidenceRow, src: SlotTable, cand: SlotTable) -> str | None:
    """What an omission row is, computed from the ⊤/⊥ replacement at each slot:
    ``same`` (the omitted items are ⊤/⊥ themselves), ``mutated_weaker`` / ``mutated_stronger``
    (the candidate item is weaker / stronger than the source item), or None (an object
    without a replacement, or slots that disagree)."""
    if row.source and not row.candidate:
        slots, side = [src.get(i) for i in row.source], "candidate"
    elif row.candidate and not row.source:
        slots, side = [cand.get(i) for i in row.candidate], "source"
    else:
        return None
    dirs = set()
    for s in slots:
        if s is None or s.replacement is None:
            return None
        if s.literal is not None and s.literal == s.replacement:
            dirs.add("same")
            continue
        # the missing side holds s.replacement
        top = s.replacement == "⊤"
        if side == "candidate":  # the candidate has ⊤ (weaker) or ⊥ (stronger) where the source has s
            dirs.add("mutated_weaker" if top else "mutated_stronger")
        else:  # the source has ⊤ / ⊥ where the candidate has s
            dirs.add("mutated_stronger" if top else "mutated_weaker")
    return dirs.pop() if len(dirs) == 1 else None


def rename_maps(record: EvidenceRecord, src: SlotTable, cand: SlotTable) -> dict[str, str]:
    """Source names → candidate names: bound variables of paired objects (rows pairing the
    same number of object slots, in order) and definitions of paired definition slots."""
    out: dict[str, str] = {}
    for row in record.rows:
        s = [src.get(i) for i in row.source]
        c = [cand.get(i) for i in row.candidate]
        for kind in ("object", "definition"):
            ss = [x for x in s if x is not None and x.kind == kind]
            cc = [x for x in c if x is not None and x.kind == kind]
            if len(ss) == len(cc):
                for a, b in zip(ss, cc, strict=True):
                    if kind == "object" and a.var and b.var and a.binder != "instance":
                        out[a.var] = b.var
                    elif kind == "definition":
                        out[a.text] = b.text
    return out


def same_texts(srcs: list[Slot], cands: list[Slot], rename: dict[str, str]) -> str | None:
    """None when the slots are the same up to renaming and spelling; else why not."""
    if sorted(s.kind for s in srcs) != sorted(c.kind for c in cands):
        return "`same` pairs slots of different kinds"
    for kind in ("object", "hypothesis", "goal"):
        ss = [s for s in srcs if s.kind == kind]
        cc = [c for c in cands if c.kind == kind]
        if kind == "object":
            a = sorted(f"{s.quantifier}:" + ("inst:" if s.binder == "instance" else "") + canonical(s.domain or "_", rename)
                       for s in ss)
            b = sorted(f"{c.quantifier}:" + ("inst:" if c.binder == "instance" else "") + canonical(c.domain or "_", {})
                       for c in cc)
            if any(x.endswith(":_") for x in a + b):
                return "an object without a stated domain cannot be checked as `same`"
        else:
            a = sorted(canonical(s.text, rename) for s in ss)
            b = sorted(canonical(c.text, {}) for c in cc)
        if a != b:
            left = ", ".join(f"`{s.text}`" for s in ss)
            right = ", ".join(f"`{c.text}`" for c in cc)
            return f"the texts differ: {left} vs {right} (after renaming bound variables and definitions)" + (
                "; or one is ∀ and the other ∃" if kind == "object" else "")
    return None


_TOP_RELATION = re.compile(r"^(?P<l>.+?)(?P<op>≤|≥|<|>|=|≠|↔)(?P<r>.+)$")
_FLIP = {">": "<", "≥": "≤"}


def _top_level(text: str) -> tuple[str, str, str] | None:
    """(lhs, relation, rhs) when ``text`` (canonical) is one relation at parenthesis depth 0."""
    depth, hits = 0, []
    for i, ch in enumerate(text):
        if ch in "([{⟨":
            depth += 1
        elif ch in ")]}⟩":
            depth -= 1
        elif depth == 0 and ch in "≤≥<>=≠↔" and not (ch == "=" and i and text[i - 1] in ":"):
            hits.append(i)
    if len(hits) != 1:
        return None
    i = hits[0]
    return text[:i], text[i], text[i + 1:]


def _normal(text: str, conversions: set[str]) -> str:
    """``text`` (canonical) in the normal form of the textual conversions named: ``a > b`` as
    ``b < a`` (inequality_flip), the sides of ``=``/``≠`` (eq_symmetry) and ``↔`` (iff_symmetry)
    in a fixed order, ``¬¬A`` as ``A`` (double_negation)."""
    if "double_negation" in conversions:
        while text.startswith("¬¬"):
            text = text[2:]
        text = text.replace("¬(¬", "(")
    rel = _top_level(text)
    if rel is None:
        return text
    lhs, op, rhs = rel
    if op in _FLIP and "inequality_flip" in conversions:
        lhs, op, rhs = rhs, _FLIP[op], lhs
    elif (op in "=≠" and "eq_symmetry" in conversions) or (op == "↔" and "iff_symmetry" in conversions):
        lhs, rhs = sorted((lhs, rhs))
    return f"{lhs}{op}{rhs}"


def conversion_problem(conversions: list[str], srcs: list[Slot], cands: list[Slot], rename: dict[str, str],
                       checked_defs: frozenset[str] = frozenset(), *, src: SlotTable | None = None,
                       cand: SlotTable | None = None, unfolds: list[str] | None = None,
                       definitions: dict[str, Definition] | None = None) -> str | None:
    """None when code verifies the row's conversions by applying them; else why not.

    ``defined_term_naming``: definition slots whose candidate names a checked definition
    (``checked_defs``: audited and frozen itself). ``one_point_rule`` and
    ``decidability_instance``: the objects defined by an equation (their equations) and the
    ``[Decidable…]`` binders are removed from the row and the term substituted
    (``fyan.audit.conversions``); at least one must be removed, and what is left must agree.
    ``definition_unfolding``: ``unfolds`` unfolded on both sides (``definitions``: the bodies
    code knows) until the row's subformulas agree. What is left is compared on the slot texts
    with the textual conversions (renaming, reordering of the row's conjuncts, binder kinds,
    the symmetric/flipped forms of ``_normal``); an empty row side must leave the other side
    empty too. Conversions outside ``CHECKED_CONVERSIONS`` are never verified."""
    unchecked = [c for c in conversions if c not in CHECKED_CONVERSIONS]
    if unchecked:
        return (f"{', '.join(unchecked)}: a conversion deterministic code does not check (the judge's claim alone "
                "never raises a grade)")
    if "defined_term_naming" in conversions:
        slots = srcs + cands
        if not cands or any(s.kind != "definition" for s in slots):
            return "defined_term_naming applies to rows of definition slots only"
        unchecked_defs = [c.text for c in cands
                          if c.text not in checked_defs and c.text.split(".")[-1] not in checked_defs]
        if unchecked_defs:
            return f"defined_term_naming: {', '.join(unchecked_defs)} is not a checked (audited, frozen) definition"
        conversions = [c for c in conversions if c != "defined_term_naming"]
        if not conversions:
            return None
    if src is None or cand is None:
        src = src or SlotTable(side="source", prefix="s", tree=Node(op="true"), slots=list(srcs))
        cand = cand or SlotTable(side="candidate", prefix="c", tree=Node(op="true"), slots=list(cands))
    conv = set(conversions)
    if "definition_unfolding" in conv:
        if conv & {"one_point_rule", "decidability_instance"}:
            return "definition_unfolding is checked on a row of its own (split off the one-point/decidability items)"
        return unfolding_problem(srcs, cands, src, cand, rename, list(unfolds or []), definitions or {},
                                 reorder="conjunct_reordering" in conv)
    for name, apply in (("one_point_rule", apply_one_point), ("decidability_instance", apply_decidability)):
        if name not in conv:
            continue
        total = 0
        sides = []
        for slots, table in ((srcs, src), (cands, cand)):
            rest, removed, problem = apply(slots, table)
            if problem:
                return problem
            total += removed
            sides.append(rest)
        if not total:
            return (f"{name}: nothing in the row is removed by it (no object defined by an equation in the row"
                    if name == "one_point_rule" else f"{name}: the row has no [Decidable…] instance binder") + \
                ("" if name != "one_point_rule" else ")")
        srcs, cands = sides
    textual = conv - {"definition_unfolding", "one_point_rule", "decidability_instance"}
    if not srcs and not cands:
        return None
    if not srcs or not cands:
        left = ", ".join(s.label() for s in srcs + cands)
        return f"after applying {', '.join(sorted(conv))} the row still has items without counterpart: {left}"
    if sorted(s.kind for s in srcs) != sorted(c.kind for c in cands):
        return "the row pairs slots of different kinds"
    plain = same_texts(srcs, cands, rename)
    if plain is None:
        return None
    for kind in ("hypothesis", "goal"):
        a = sorted(_normal(relation_normal(canonical(s.text, rename)), textual) for s in srcs if s.kind == kind)
        b = sorted(_normal(relation_normal(canonical(c.text, {})), textual) for c in cands if c.kind == kind)
        if a != b:
            return f"{', '.join(sorted(textual)) or 'no textual conversion'} does not turn {a} into {b}"
    objects = [s for s in srcs + cands if s.kind == "object"]
    return plain if objects else None


def _check_one_point(slots: list[Slot]) -> str | None:
    objs = [s for s in slots if s.kind == "object" and s.binder != "instance"]
    hyps = [s for s in slots if s.kind in ("hypothesis", "goal")]
    if not objs:
        return "one_point_rule needs the substituted object in the row"
    for o in objs:
        ok = False
        for h in hyps:
            if o.id not in h.scope:
                continue
            m = re.fullmatch(r"\s*(.+?)\s*=\s*(.+?)\s*", h.text)
            if not m:
                continue
            lhs, rhs = m.group(1).strip(), m.group(2).strip()
            for var_side, term in ((lhs, rhs), (rhs, lhs)):
                if var_side == o.var and o.var not in identifiers(term):
                    ok = True
        if not ok:
            return f"one_point_rule: no equation `{o.var} = t` (with {o.var} not in t) in the row defines object {o.id}"
    return None


def _check_decidability(slots: list[Slot]) -> str | None:
    for s in slots:
        if not (s.kind == "object" and s.binder == "instance" and (s.domain or "").startswith("Decidable")):
            return f"decidability_instance applies to Decidable… instance binders only, not {s.label()}"
    return None


def validate(record: EvidenceRecord, src: SlotTable, cand: SlotTable, ctx: AuditContext) -> list[str]:
    """The record's errors (empty: valid). See the module docstring for the checks."""
    errors: list[str] = []
    short = ctx.root.split(".")[-1]
    if record.root.strip() not in (ctx.root, short) and not ctx.root.endswith("." + record.root.strip()):
        errors.append(f"record audits {record.root!r}, the root is {short!r}")
    if not record.rows:
        errors.append("the record has no rows")
    seen: dict[str, int] = {}
    rename = rename_maps(record, src, cand)
    structure = structure_problems(record, src, cand)
    substantive = False
    for i, row in enumerate(record.rows, start=1):
        where = f"row {i}"
        if not row.source and not row.candidate:
            errors.append(f"{where}: pairs nothing (no source slot, no candidate slot)")
            continue
        slots_s: list[Slot] = []
        slots_c: list[Slot] = []
        for sid, table, bucket, side in ((row.source, src, slots_s, "source"), (row.candidate, cand, slots_c, "candidate")):
            for x in sid:
                slot = table.get(x)
                if slot is None:
                    other = cand if table is src else src
                    hint = f" (that is a {other.side} slot)" if other.get(x) else ""
                    errors.append(f"{where}: unknown {side} slot {x!r}{hint}; {side} slots: {', '.join(table.ids)}")
                    continue
                if x in seen:
                    errors.append(f"{where}: slot {x} is already in row {seen[x]} (a slot belongs to one row; group it)")
                seen.setdefault(x, i)
                bucket.append(slot)
        if len(slots_s) != len(row.source) or len(slots_c) != len(row.candidate):
            continue
        rel = row.relation
        omission = is_omission(row)
        for c in row.conversions:
            if c not in CONVERSIONS:
                errors.append(f"{where}: conversion {c!r} is not in the closed list ({', '.join(CONVERSIONS)})")
        if row.conversions and rel != "trivial_equivalent":
            errors.append(f"{where}: conversions belong to trivial_equivalent rows, this one is {rel}")
        if rel == "trivial_equivalent":
            if not row.conversions:
                errors.append(f"{where}: trivial_equivalent must name its conversions from the closed list")
            if "definition_unfolding" in row.conversions:
                if not row.unfolds:
                    errors.append(f"{where}: definition_unfolding must name the definitions unfolded in `unfolds`")
                for d in row.unfolds:
                    if d not in ctx.checked_defs and d.split(".")[-1] not in ctx.checked_defs:
                        errors.append(f"{where}: `{d}` is not a checked definition (frozen upstream or a root of "
                                      f"this unit), so unfolding it is not a trivial conversion")
            if "one_point_rule" in row.conversions:
                problem = _check_one_point(slots_s + slots_c)
                if problem:
                    errors.append(f"{where}: {problem}")
            if "decidability_instance" in row.conversions:
                problem = _check_decidability(slots_s + slots_c)
                if problem:
                    errors.append(f"{where}: {problem}")
            if omission and not set(row.conversions) & set(REMOVAL_CONVERSIONS):
                errors.append(f"{where}: an omission row can be trivial_equivalent only by "
                              f"{' or '.join(REMOVAL_CONVERSIONS)}; record the change the omission makes instead")
        if rel not in ("same", "unaligned") and placeholder(row.argument):
            errors.append(f"{where}: {rel} needs a concrete argument, got {row.argument!r}")
        if rel == "mutated":
            if not row.affected:
                errors.append(f"{where}: mutated must name the downstream items affected (slot ids in `affected`)")
            for x in row.affected:
                if src.get(x) is None and cand.get(x) is None:
                    errors.append(f"{where}: affected item {x!r} is not a slot")
        needs_difference = rel == "unaligned" or (omission and rel not in ("same", "trivial_equivalent"))
        if needs_difference and placeholder(row.difference):
            errors.append(f"{where}: {'an omission' if omission else 'unaligned'} must state the concrete difference "
                          f"in `difference`, got {row.difference!r}")
        if row.repair is not None and row.repair.strip() and placeholder(row.repair, minimum=6):
            errors.append(f"{where}: repair is placeholder text: {row.repair!r}")
        if omission:
            computed = omission_direction(row, src, cand)
            if rel == "same" and computed != "same":
                errors.append(f"{where}: an omission is `same` only when the omitted item is ⊤ (conjunct) or ⊥ "
                              f"(disjunct) itself")
            if rel in ("mutated_weaker", "mutated_stronger") and computed != rel:
                missing = "candidate" if not row.candidate else "source"
                if computed is None:
                    errors.append(f"{where}: this omission has no single direction (an object cannot be replaced by "
                                  f"⊤/⊥): record it as unaligned")
                else:
                    errors.append(f"{where}: the {missing} side is ⊤/⊥ there, so the candidate is "
                                  f"{'weaker' if computed == 'mutated_weaker' else 'stronger'}: the relation is "
                                  f"{computed}, not {rel}")
            if rel in ("mutated_equivalent", "mutated"):
                errors.append(f"{where}: an omission is a one-way change: record the direction code computes "
                              f"({computed or 'none: use unaligned'}) or unaligned")
            if rel in ("mutated_weaker", "mutated_stronger"):
                substantive = True
        elif rel == "same":
            problem = same_texts(slots_s, slots_c, rename)
            if problem:
                errors.append(f"{where}: labelled same but {problem}; use trivial_equivalent with its conversions "
                              f"or a mutated relation")
            elif i in structure:
                errors.append(f"{where}: labelled same but the items do not sit in the same place of the two "
                              f"statements: {structure[i]}; record the change as a mutated relation")
            for c in slots_c:
                if c.kind == "definition" and c.text not in ctx.checked_defs and c.text.split(".")[-1] not in ctx.checked_defs:
                    errors.append(f"{where}: `same` pairs definition `{c.text}`, which is not a checked definition "
                                  f"(frozen upstream, or a root of this definition unit)")
        if rel in SUBSTANTIVE and not omission:
            substantive = True
    for table in (src, cand):
        for s in table.slots:
            if s.id not in seen:
                errors.append(f"slot {s.label()} is in no row: pair it, or record its omission in a row whose "
                              f"{'candidate' if table is src else 'source'} side is empty")
    if substantive:
        if record.transfer is None:
            errors.append("a row records a substantive change: give `transfer` (object adapters and signed local "
                          "certificates; empty lists when the change needs none)")
        else:
            for a in record.transfer.adapters:
                s, c = src.get(a.source), cand.get(a.candidate)
                if s is None or s.kind != "object":
                    errors.append(f"adapter {a.id}: {a.source!r} is not a source object slot")
                if c is None or c.kind != "object":
                    errors.append(f"adapter {a.id}: {a.candidate!r} is not a candidate object slot")
                if a.map.strip().lower() in PLACEHOLDERS or len(a.map.strip()) < 2:
                    errors.append(f"adapter {a.id}: give the map")
            src_nodes = {n.id for n in src.tree.walk()} | set(src.ids)
            cand_nodes = {n.id for n in cand.tree.walk()} | set(cand.ids)
            for k in record.transfer.certificates:
                for x in k.source:
                    if x not in src_nodes:
                        errors.append(f"certificate {k.id}: {x!r} is not a source node")
                for x in k.candidate:
                    if x not in cand_nodes:
                        errors.append(f"certificate {k.id}: {x!r} is not a candidate node")
                if placeholder(k.argument):
                    errors.append(f"certificate {k.id}: needs a concrete argument, got {k.argument!r}")
    return errors
