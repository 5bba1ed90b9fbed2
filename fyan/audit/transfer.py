"""The transfer checker: does a proof of the candidate give a proof of the source?

Input: the two annotated trees (``SlotTable``), the pairing of their slots (the record's
rows), object adapters and signed local certificates. The checker walks both trees together
and composes the local pieces into three recipes:

* ``e`` — the object map: how each object the proof must supply is obtained (the paired object
  itself, or a witness adapter applied to it);
* ``a`` — the hypothesis map: how each hypothesis the candidate needs is obtained from the
  source's hypotheses (the same item, a certificate, or nothing to do because it was dropped);
* ``g`` — the claim map: how each source claim follows from the candidate's claims.

``transfer(s, c, p)`` must establish *candidate ⇒ source* at a positive position (``p`` =
positive), *source ⇒ candidate* at a negative one, both at a mixed one. Constructors:

* ⊤, ⊥, ∧, ∨ (n-ary, children matched through the pairing; an unmatched child is an omission:
  ``P ∧ ⊤``, ``⊤ ∧ P``, ``P ∨ ⊥``, ``⊥ ∨ P`` — admitted exactly when the ⊤/⊥ goes the
  needed way, or a certificate covers it);
* → (with ¬A read as A → ⊥, Lean's definition of ``Not``) and ∀, as one telescope of binders
  and premises (premises split at ∧: currying) followed by a conclusion; premises at the
  flipped polarity;
* ∃, as a telescope of binders followed by conjuncts;
* a changed quantifier domain needs an explicitly supplied witness adapter directed the way the
  proof uses it: ∀ at positive / ∃ at negative positions need ``source_to_candidate``, ∀ at
  negative / ∃ at positive need ``candidate_to_source`` (``both`` serves either);
* leaves (atoms, definition uses): the same text up to renaming, or a certificate.

Refusals (each a precise message; any refusal fails the transfer): an unsupported constructor
(↔, or an atom whose structure differs) met without a certificate; incomplete coverage (an object
the proof must supply has no partner; a needed hypothesis or claim has no source); a certificate
or adapter whose ``uses`` name something out of scope (bad scope), unknown (undeclared) or
forming a cycle; a wrongly directed certificate or adapter; a changed item labelled ``same``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from fyan.audit.formula import Node, NodeInfo, Polarity, canonical
from fyan.audit.record import Certificate, EvidenceRecord, ObjectAdapter, TransferEvidence, TransferResult, TransferStep
from fyan.audit.slots import SlotTable
from fyan.audit.validator import rename_maps

NEEDS = {"positive": ("+", "="), "negative": ("-", "="), "mixed": ("=",)}
ARROW = {"positive": "candidate ⇒ source", "negative": "source ⇒ candidate", "mixed": "both ways"}


@dataclass
class Pairing:
    """Links between source and candidate node ids, with the relation of the row that made them."""

    links: set[tuple[str, str]] = field(default_factory=set)
    relation: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: EvidenceRecord, src: SlotTable, cand: SlotTable) -> Pairing:
        p = cls()
        for row in record.rows:
            s_nodes = _nodes_of(row.source, src)
            c_nodes = _nodes_of(row.candidate, cand)
            for a in s_nodes:
                for b in c_nodes:
                    p.links.add((a, b))
                    p.relation[(a, b)] = row.relation
        return p


def _nodes_of(ids: list[str], table: SlotTable) -> list[str]:
    out = []
    for i in ids:
        slot = table.get(i)
        if slot is None:
            out.append(i)
        elif slot.kind == "definition":
            out.extend(slot.occurrences)
        else:
            out.append(slot.node or i)
    return out


class _Checker:
    def __init__(self, src: SlotTable, cand: SlotTable, pairing: Pairing, evidence: TransferEvidence,
                 rename: dict[str, str]) -> None:
        self.src, self.cand = src, cand
        self.sinfo: dict[str, NodeInfo] = src.info()
        self.cinfo: dict[str, NodeInfo] = cand.info()
        self.pairing = pairing
        self.rename = rename
        self.adapters = evidence.adapters
        self.certs = evidence.certificates
        self.refusals: list[str] = []
        self.steps: list[TransferStep] = []
        for k in self.certs:
            for a in k.source:
                for b in k.candidate:
                    self.pairing.links.add((a, b))

    # -- helpers ---------------------------------------------------------------------------
    def refuse(self, msg: str) -> bool:
        if msg not in self.refusals:
            self.refusals.append(msg)
        return False

    def step(self, m: str, target: str, source: list[str], via: str) -> None:
        self.steps.append(TransferStep(map=m, target=target, source=source, via=via))

    def record(self, m: str, s_ids: list[str], c_ids: list[str], via: str) -> None:
        """A hypothesis step targets the candidate's hypothesis (from the source's); a claim
        step targets the source's claim (from the candidate's)."""
        if m == "a":
            self.step(m, ",".join(c_ids) or "(none)", s_ids, via)
        else:
            self.step(m, ",".join(s_ids) or "(none)", c_ids, via)

    def cert_for(self, s_ids: set[str], c_ids: set[str]) -> Certificate | None:
        for k in self.certs:
            if set(self._expand(k.source, self.src)) == s_ids and set(self._expand(k.candidate, self.cand)) == c_ids:
                return k
        return None

    @staticmethod
    def _expand(ids: list[str], table: SlotTable) -> list[str]:
        return _nodes_of(ids, table)

    def use_cert(self, k: Certificate, pol: Polarity, where: str, m: str, s_ids: list[str], c_ids: list[str]) -> bool:
        if k.sign not in NEEDS[pol]:
            return self.refuse(f"certificate {k.id} is wrongly directed: sign {k.sign} but {where} at {pol} polarity "
                               f"needs {ARROW[pol]} ({' or '.join(NEEDS[pol])})")
        self.record(m, s_ids, c_ids, f"certificate {k.id} ({k.sign}): {k.argument}")
        return True

    @staticmethod
    def _ids(n: Node, binder_only: bool = False) -> set[str]:
        return {n.id} if binder_only else {m.id for m in n.walk()}

    def linked(self, s_ids: set[str], c_ids: set[str]) -> bool:
        return any((a, b) in self.pairing.links for a in s_ids for b in c_ids)

    def components(self, s_items: list[tuple[Node, bool]], c_items: list[tuple[Node, bool]]):
        """Group items that the pairing links: [(source items, candidate items)]."""
        g = nx.Graph()
        for i, _ in enumerate(s_items):
            g.add_node(("s", i))
        for j, _ in enumerate(c_items):
            g.add_node(("c", j))
        for i, (sn, sb) in enumerate(s_items):
            for j, (cn, cb) in enumerate(c_items):
                if self.linked(self._ids(sn, sb), self._ids(cn, cb)):
                    g.add_edge(("s", i), ("c", j))
        out = []
        for comp in nx.connected_components(g):
            ss = sorted(i for side, i in comp if side == "s")
            cc = sorted(j for side, j in comp if side == "c")
            out.append(([s_items[i][0] for i in ss], [c_items[j][0] for j in cc]))
        out.sort(key=lambda sc: (sc[0][0].id if sc[0] else "~", sc[1][0].id if sc[1] else "~"))
        return out

    # -- the walk --------------------------------------------------------------------------
    def transfer(self, s: Node, c: Node, pol: Polarity, m: str) -> bool:
        if pol == "mixed":
            k = self.cert_for(self._ids(s), self._ids(c)) or self.cert_for({s.id}, {c.id})
            if k is not None:
                return self.use_cert(k, pol, f"{s.id} ~ {c.id}", m, [s.id], [c.id])
            ok1 = self.transfer(s, c, "positive", m)
            ok2 = self.transfer(s, c, "negative", m)
            return ok1 and ok2
        k = self.cert_for({s.id}, {c.id})
        if k is not None:
            return self.use_cert(k, pol, f"{s.id} ~ {c.id}", m, [s.id], [c.id])
        if s.is_leaf and c.is_leaf:
            return self.leaf(s, c, pol, m)
        if self.identical(s, c):
            self.record(m, [s.id], [c.id], "the same subformula")
            return True
        if "iff" in (s.op, c.op):
            return self.refuse(f"unsupported constructor ↔ at {s.id} ~ {c.id}: give a certificate for the whole "
                               f"equivalence")
        if {s.op, c.op} & {"forall", "implies", "not"}:
            return self.telescope(s, c, pol, m)
        if "exists" in (s.op, c.op):
            return self.exists(s, c, pol, m)
        if {s.op, c.op} & {"and", "or"}:
            op = s.op if s.op in ("and", "or") else c.op
            return self.junction(s, c, op, pol, m)
        return self.refuse(f"unsupported pair of constructors {s.op} ~ {c.op} at {s.id} ~ {c.id}")

    def identical(self, s: Node, c: Node) -> bool:
        """The two subtrees are the same formula up to renaming (no descent needed)."""
        if s.op != c.op or len(s.args) != len(c.args):
            return False
        if s.op in ("atom", "def"):
            return canonical(s.text, self.rename) == canonical(c.text)
        if s.op in ("forall", "exists"):
            if canonical(s.domain or "_", self.rename) != canonical(c.domain or "_") or s.binder != c.binder and \
                    "instance" in (s.binder, c.binder):
                return False
            if s.var != c.var and self.rename.get(s.var or "") != c.var:
                return False
        return all(self.identical(a, b) for a, b in zip(s.args, c.args, strict=True))

    def leaf(self, s: Node, c: Node, pol: Polarity, m: str) -> bool:
        if s.op in ("true", "false") or c.op in ("true", "false"):
            s_val, c_val = s.op, c.op
            fine = (s_val == c_val) or (pol == "positive" and (s_val == "true" or c_val == "false")) or (
                pol == "negative" and (c_val == "true" or s_val == "false"))
            if fine:
                self.record(m, [s.id], [c.id], "trivial (⊤/⊥)")
                return True
            return self.refuse(f"{s.id} `{s.render()}` ~ {c.id} `{c.render()}`: {ARROW[pol]} fails for ⊤/⊥")
        if canonical(s.text, self.rename) == canonical(c.text):
            self.record(m, [s.id], [c.id], "the same item")
            return True
        if self.pairing.relation.get((s.id, c.id)) == "same":
            return self.refuse(f"changed item labelled same: {s.id} `{s.text}` vs {c.id} `{c.text}`")
        return self.refuse(f"changed item {s.id} `{s.text}` ~ {c.id} `{c.text}` at {pol} polarity has no certificate "
                           f"({ARROW[pol]} needed)")

    @staticmethod
    def _tele(n: Node) -> tuple[list[tuple[str, Node]], Node]:
        items: list[tuple[str, Node]] = []
        while True:
            if n.op == "forall" and n.binder == "instance":
                # an instance argument is a hypothesis about earlier objects: a premise
                items.append(("premise", Node(op="atom", text=n.domain or "_", id=n.id)))
                n = n.args[0]
            elif n.op == "forall":
                items.append(("binder", n))
                n = n.args[0]
            elif n.op == "implies":
                left = n.args[0]
                items.extend(("premise", p) for p in (left.args if left.op == "and" else [left]))
                n = n.args[1]
            elif n.op == "not":
                inner = n.args[0]
                items.extend(("premise", p) for p in (inner.args if inner.op == "and" else [inner]))
                return items, Node(op="false", id=f"{n.id}⊥")
            else:
                return items, n

    def binders(self, sb: list[Node], cb: list[Node], need: str, pol: Polarity) -> bool:
        """Match binders; ``need`` = which side must be supplied from the other (``candidate``:
        ∀ at positive / ∃ at negative — adapters source_to_candidate)."""
        ok = True
        supply, given = (cb, sb) if need == "candidate" else (sb, cb)
        direction = "source_to_candidate" if need == "candidate" else "candidate_to_source"
        for b in supply:
            partners = [g for g in given if ((g.id, b.id) if need == "candidate" else (b.id, g.id)) in self.pairing.links]
            if len(partners) != 1:
                side = "candidate" if need == "candidate" else "source"
                ok = self.refuse(
                    f"incomplete coverage: {side} object {b.id} `{b.var} : {b.domain}` needs exactly one paired "
                    f"{'source' if need == 'candidate' else 'candidate'} object to be supplied from at {pol} polarity "
                    f"(found {len(partners)})") and ok
                continue
            g = partners[0]
            s_node, c_node = (g, b) if need == "candidate" else (b, g)
            if canonical(s_node.domain or "_", self.rename) == canonical(c_node.domain or "_"):
                self.step("e", b.id, [g.id], "the same object")
                continue
            if self.pairing.relation.get((s_node.id, c_node.id)) == "same":
                ok = self.refuse(f"changed item labelled same: object {s_node.id} `{s_node.domain}` vs {c_node.id} "
                                 f"`{c_node.domain}`") and ok
                continue
            adapter = next((a for a in self.adapters if self._expand([a.source], self.src) == [s_node.id]
                            and self._expand([a.candidate], self.cand) == [c_node.id]), None)
            if adapter is None:
                ok = self.refuse(f"changed quantifier domain {s_node.id} `{s_node.domain}` ~ {c_node.id} "
                                 f"`{c_node.domain}` needs a witness adapter {direction}") and ok
            elif adapter.direction not in (direction, "both"):
                ok = self.refuse(f"adapter {adapter.id} is wrongly directed: {adapter.direction}, but the proof needs "
                                 f"{direction} at {s_node.id} ~ {c_node.id}") and ok
            else:
                self.step("e", b.id, [g.id], f"adapter {adapter.id}: {adapter.map}")
        return ok

    def telescope(self, s: Node, c: Node, pol: Polarity, m: str) -> bool:
        s_items, s_concl = self._tele(s)
        c_items, c_concl = self._tele(c)
        sb = [n for k, n in s_items if k == "binder"]
        cb = [n for k, n in c_items if k == "binder"]
        ok = self.binders(sb, cb, "candidate" if pol == "positive" else "source", pol)
        sp = [n for k, n in s_items if k == "premise"]
        cp = [n for k, n in c_items if k == "premise"]
        inner: Polarity = "negative" if pol == "positive" else "positive"
        for ss, cc in self.components([(n, False) for n in sp], [(n, False) for n in cp]):
            ok = self.group(ss, cc, inner, "a", container="and") and ok
        return self.transfer(s_concl, c_concl, pol, m) and ok

    def exists(self, s: Node, c: Node, pol: Polarity, m: str) -> bool:
        def tele(n: Node) -> tuple[list[Node], list[Node]]:
            bs = []
            while n.op == "exists":
                bs.append(n)
                n = n.args[0]
            return bs, (n.args if n.op == "and" else [n])

        sb, sc = tele(s)
        cb, cc = tele(c)
        ok = self.binders(sb, cb, "source" if pol == "positive" else "candidate", pol)
        for ss, ccs in self.components([(n, False) for n in sc], [(n, False) for n in cc]):
            ok = self.group(ss, ccs, pol, m, container="and") and ok
        return ok

    def junction(self, s: Node, c: Node, op: str, pol: Polarity, m: str) -> bool:
        s_kids = s.args if s.op == op else [s]
        c_kids = c.args if c.op == op else [c]
        ok = True
        for ss, cc in self.components([(n, False) for n in s_kids], [(n, False) for n in c_kids]):
            ok = self.group(ss, cc, pol, m, container=op) and ok
        return ok

    def group(self, ss: list[Node], cc: list[Node], pol: Polarity, m: str, container: str) -> bool:
        """One component of matched children of an ∧ (or premise list) / ∨ at ``pol``."""
        if len(ss) == 1 and len(cc) == 1:
            return self.transfer(ss[0], cc[0], pol, m)
        if ss and cc:
            k = self.cert_for({n.id for n in ss}, {n.id for n in cc})
            if k is None:
                return self.refuse(f"items {', '.join(n.id for n in ss)} ~ {', '.join(n.id for n in cc)} are paired as "
                                   f"a group but no certificate covers the group")
            return self.use_cert(k, pol, "the group " + ", ".join(n.id for n in ss + cc), m,
                                 [n.id for n in ss], [n.id for n in cc])
        # an omission: one side holds ⊤ (in ∧) or ⊥ (in ∨) there
        unit = "⊤" if container == "and" else "⊥"
        items, side = (ss, "source") if ss else (cc, "candidate")
        for n in items:
            literal = (n.op == "true" and unit == "⊤") or (n.op == "false" and unit == "⊥")
            # which way is free: in ∧, X ⇒ ⊤ always; in ∨, ⊥ ⇒ X always
            # needed: positive: candidate ⇒ source; negative: source ⇒ candidate
            if side == "source":  # candidate has `unit` here
                free = (unit == "⊤" and pol == "negative") or (unit == "⊥" and pol == "positive")
            else:  # source has `unit` here
                free = (unit == "⊤" and pol == "positive") or (unit == "⊥" and pol == "negative")
            if literal or free:
                what = "dropped" if side == "source" else "added"
                self.record(m, [n.id] if side == "source" else [], [n.id] if side == "candidate" else [],
                            f"omission ({'P ∧ ⊤' if unit == '⊤' else 'P ∨ ⊥'}): {side} item {what}, {ARROW[pol]} holds")
                continue
            k = self.cert_for({n.id}, set()) if side == "source" else self.cert_for(set(), {n.id})
            if k is not None:
                if not self.use_cert(k, pol, f"omitted {n.id}", m, [n.id] if side == "source" else [],
                                     [n.id] if side == "candidate" else []):
                    return False
                continue
            return self.refuse(f"{side} item {n.id} `{n.render()}` has no counterpart: the other side holds {unit} "
                               f"there and {ARROW[pol]} fails at {pol} polarity")
        return True

    # -- dependencies ----------------------------------------------------------------------
    def dependencies(self) -> bool:
        ok = True
        pieces: dict[str, Certificate | ObjectAdapter] = {}
        both: list[Certificate | ObjectAdapter] = [*self.certs, *self.adapters]
        for p in both:
            if p.id in pieces:
                ok = self.refuse(f"two certificates/adapters named {p.id}")
            pieces[p.id] = p
        g = nx.DiGraph()
        for pid, p in pieces.items():
            g.add_node(pid)
            if isinstance(p, Certificate):
                s_ids, c_ids = self._expand(p.source, self.src), self._expand(p.candidate, self.cand)
            else:
                s_ids, c_ids = self._expand([p.source], self.src), self._expand([p.candidate], self.cand)
            scope: set[str] = set()
            for x in s_ids:
                if x in self.sinfo:
                    scope |= set(self.sinfo[x].scope)
            for x in c_ids:
                if x in self.cinfo:
                    scope |= set(self.cinfo[x].scope)
            # what is introduced at that point on both sides: the partners of what is in scope
            for x in list(scope):
                for a, b in self.pairing.links:
                    if x == a and b in self.cinfo:
                        scope |= {b} | set(self.cinfo[b].scope)
                    elif x == b and a in self.sinfo:
                        scope |= {a} | set(self.sinfo[a].scope)
            scope |= set(s_ids) | set(c_ids)
            for u in p.uses:
                if u in pieces:
                    g.add_edge(pid, u)
                elif u in self.sinfo or u in self.cinfo or self.src.get(u) or self.cand.get(u):
                    if u not in scope:
                        ok = self.refuse(f"{pid} uses {u}, which is not in scope there (bad scope: available are "
                                         f"{', '.join(sorted(scope)) or 'nothing'})")
                else:
                    ok = self.refuse(f"{pid} uses {u!r}, which is neither a slot nor a declared certificate/adapter "
                                     f"(undeclared dependency)")
        try:
            cycle = nx.find_cycle(g)
            ok = self.refuse("cyclic dependency between certificates: " + " → ".join([a for a, _ in cycle] + [cycle[0][0]]))
        except nx.NetworkXNoCycle:
            pass
        return ok


def check_transfer(src: SlotTable, cand: SlotTable, pairing: Pairing, evidence: TransferEvidence,
                   rename: dict[str, str] | None = None) -> TransferResult:
    """Compose the local certificates into recipes for e, a and g (module docstring)."""
    checker = _Checker(src, cand, pairing, evidence, rename or {})
    deps_ok = checker.dependencies()
    ok = checker.transfer(src.tree, cand.tree, "positive", "g")
    ok = ok and deps_ok and not checker.refusals
    return TransferResult(ok=ok, refusals=checker.refusals, recipes=checker.steps)


def check_record_transfer(record: EvidenceRecord, src: SlotTable, cand: SlotTable) -> TransferResult:
    """``check_transfer`` with the pairing, renaming and evidence of ``record``."""
    return check_transfer(src, cand, Pairing.from_record(record, src, cand), record.transfer or TransferEvidence(),
                          rename_maps(record, src, cand))
