"""The candidate side of an audit: a formula tree read from a Lean statement.

Input is either a declaration header as written (``(a n : Int) (h : Divides a n) : Divides a
(n ^ 2)``, comments already removed) or an elaborated type as Lean prints it
(``∀ (a n : ℤ), Divides a n → Divides a (n ^ 2)``). This is a parser of the *logical
skeleton* only — binders, ``→``, ``↔``, ``∨``, ``∧``, ``¬``, ``∀``/``∃`` (with binder
predicates such as ``∀ ε > 0,``), ``True``/``False`` — using Lean 4's precedences (``↔`` 20,
``→`` 25 right-associative, ``∨`` 30, ``∧`` 35, ``¬`` 40; ``∀``/``∃``/``fun`` extend as far
right as possible). Everything below that level stays an atom, or a ``def`` leaf when its head
is a local definition.

Without elaboration one fact must be guessed: whether a binder ``(h : T)`` is a hypothesis
(``T`` a proposition) or an object. ``is_prop_type`` decides from the text (relations and
connectives, known predicate names, Prop-valued local definitions, the ``h…`` naming
convention); pass ``prop_oracle`` when the elaborated answer is known. The guess is recorded on
the node (``NodeInfo`` is unchanged) and the judge sees the resulting slots, so a wrong guess
shows up as a visible mismatch, never as a silent pass.

Errors: ``LeanParseError`` (with the offending text) when brackets do not balance or a binder
cannot be read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fyan.audit.formula import Node, conjunction, identifiers
from fyan.lean.declarations import DEFINITION_KINDS, Declaration, normalize, strip_comments

OPEN = "([{⦃⟨⟪⌊⌈"
CLOSE = ")]}⦄⟩⟫⌋⌉"
_PAIR = dict(zip(OPEN, CLOSE, strict=True))
#: Binders that extend as far right as possible (stop the search for connectives).
SWALLOWING = ("∀", "∃!", "∃", "λ", "fun", "Π", "if", "match", "let", "have", "show")
#: Characters that continue an arrow into a morphism-type arrow (``→*``, ``→+*``, ``→ₗ[R]``).
_ARROW_CONT = set("+*ₗₐLoᵇ[⋆ₙ")
#: Binder predicates: ``∀ x ∈ s,`` / ``∃ y > 0,``.
BINDER_PREDICATES = ("∈", "∉", "⊆", "⊂", "⊇", "⊃", "≤", "≥", "<", ">", "≠")
#: Top-level symbols that make a type a proposition.
PROP_SYMBOLS = ("=", "≠", "<", ">", "≤", "≥", "∣", "∈", "∉", "⊆", "⊂", "⊇", "⊃", "∧", "∨", "↔", "¬", "≡", "⟂")
#: Heads of propositions (last name component).
PROP_HEADS = frozenset("""
Prime Coprime Irreducible Squarefree Even Odd Continuous ContinuousOn ContinuousAt Differentiable
DifferentiableOn DifferentiableAt HasDerivAt Injective Surjective Bijective InjOn SurjOn BijOn Monotone
StrictMono Antitone StrictAnti MonotoneOn Tendsto Summable HasSum Finite Infinite Countable Nonempty IsEmpty
Nontrivial Disjoint Integrable Measurable Dense Normal Separable Solvable Nilpotent Fact Function.Injective
UniformContinuous CauchySeq Bounded BddAbove BddBelow Connected Compact Open Closed Subsingleton Unique
LinearIndependent Commute Pairwise Irrational Transcendental Algebraic Integral Splits Cyclic Simple Abelian
AntiSymmetric Reflexive Symmetric Transitive Equivalence Total WellFounded Divides Dvd GCDMonoid
RegularSpace NormalSpace T2Space CompactSpace ConnectedSpace CompleteSpace SeparableSpace LindelofSpace
""".split())
#: Heads that make a binder an object (a type, a structure, a set), never a proposition.
TYPE_HEADS = frozenset("""
Type Sort Prop ℕ ℤ ℚ ℝ ℂ Nat Int Rat Real Complex Fin ZMod Set Finset Multiset List Subgroup Submodule Ideal
Polynomial MvPolynomial Matrix Equiv Perm Sylow Subfield Subring IntermediateField Filter Option Prod Sum
""".split())
_TYPE_ARROWS = ("→*", "→+*", "→+", "→ₗ", "≃", "≃*", "≃+*", "→L", "≃ₗ", "→ₐ", "≃ₐ", "⟶", "≅", "↪", "→o")


class LeanParseError(ValueError):
    """The Lean text could not be read (unbalanced brackets, an unreadable binder)."""


# -- scanning ------------------------------------------------------------------------------

def _starts_word(text: str, i: int, word: str) -> bool:
    if not text.startswith(word, i):
        return False
    if word[0].isalpha():
        before = text[i - 1] if i > 0 else " "
        after = text[i + len(word)] if i + len(word) < len(text) else " "
        if before.isalnum() or before in "_.'" or after.isalnum() or after in "_'":
            return False
    return True


def _scan(text: str, *, stop_at_binder: bool = True):
    """Yield ``(index, depth)`` for every character outside string literals, stopping at a
    swallowing binder at depth 0 (its scope runs to the end)."""
    depth = 0
    stack: list[str] = []
    i = 0
    in_str = False
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
            i += 1
            continue
        if c in OPEN:
            # `{{` is a strict-implicit bracket; `⦃` likewise
            yield i, depth
            stack.append(_PAIR[c])
            depth += 1
            i += 1
            continue
        if c in CLOSE:
            if not stack or stack[-1] != c:
                raise LeanParseError(f"unbalanced {c!r} at column {i + 1} in `{text.strip()}`")
            stack.pop()
            depth -= 1
            yield i, depth
            i += 1
            continue
        if depth == 0 and stop_at_binder and any(_starts_word(text, i, w) for w in SWALLOWING) and i > 0:
            return
        yield i, depth
        i += 1
    if stack:
        raise LeanParseError(f"unclosed bracket in `{text.strip()}`")


def _top_level(text: str, symbol: str) -> list[int]:
    """Positions of ``symbol`` at bracket depth 0 (before any swallowing binder)."""
    found = []
    for i, depth in _scan(text):
        if depth == 0 and text.startswith(symbol, i):
            if symbol in ("→", "->"):
                nxt = text[i + len(symbol)] if i + len(symbol) < len(text) else " "
                if nxt in _ARROW_CONT:
                    continue
            found.append(i)
    return found


def _match_close(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start`` (-1 when it is never closed)."""
    stack: list[str] = []
    in_str = False
    i = start
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            in_str = c != '"'
        elif c == '"':
            in_str = True
        elif c in OPEN:
            stack.append(_PAIR[c])
        elif c in CLOSE:
            if not stack or stack[-1] != c:
                raise LeanParseError(f"unbalanced {c!r} at column {i + 1} in `{text.strip()}`")
            stack.pop()
            if not stack:
                return i
        i += 1
    return -1


def _strip_parens(text: str) -> str:
    """``text`` without parentheses around all of it (a type ascription ``(x : T)`` is kept)."""
    text = text.strip()
    while text.startswith("(") and _match_close(text, 0) == len(text) - 1:
        inner = text[1:-1].strip()
        binder_first = any(_starts_word(inner, 0, w) for w in SWALLOWING) or inner.startswith("¬")
        if not inner or (not binder_first and _top_level_colon(inner, stop_at_binder=True) >= 0):
            return text
        text = inner
    return text


def _top_level_colon(text: str, stop_at_binder: bool = False) -> int:
    for i, depth in _scan(text, stop_at_binder=stop_at_binder):
        if depth == 0 and text[i] == ":" and not text.startswith(":=", i) and not text.startswith("::", i) \
                and not (i > 0 and text[i - 1] == ":"):
            return i
    return -1


def _top_level_comma(text: str) -> int:
    for i, depth in _scan(text, stop_at_binder=False):
        if depth == 0 and text[i] == ",":
            return i
    return -1


def _groups(text: str) -> tuple[list[tuple[str, str]], str]:
    """Leading bracketed binder groups of ``text``: ([(bracket, inner)], rest)."""
    groups = []
    text = text.strip()
    i = 0
    while i < len(text) and text[i] in "({⦃[":
        opener = text[i]
        end = _match_close(text, i)
        if end < 0:
            raise LeanParseError(f"unclosed binder in `{text.strip()}`")
        inner = text[i + 1 : end].strip()
        if opener == "{" and inner.startswith("{") and inner.endswith("}") and _match_close(inner, 0) == len(inner) - 1:
            inner, opener = inner[1:-1].strip(), "⦃"  # {{x : T}}: strict implicit
        groups.append((opener, inner))
        i = end + 1
        while i < len(text) and text[i].isspace():
            i += 1
    return groups, text[i:]


# -- propositions or objects -----------------------------------------------------------------

def _head(text: str) -> str:
    t = _strip_parens(text).lstrip("@").strip()
    ids = identifiers(t)
    if not ids or not t.startswith(ids[0]):
        return ""
    return ids[0]


def is_prop_type(type_text: str, name: str = "", prop_defs: frozenset[str] = frozenset()) -> bool:
    """Whether a binder ``(name : type_text)`` is a hypothesis (heuristic; module docstring)."""
    t = _strip_parens(type_text)
    if not t or t == "_":
        return False
    if any(t.startswith(q) for q in ("∀", "∃", "¬", "True", "False")):
        return True
    if any(t.startswith(a) or f" {a} " in t for a in _TYPE_ARROWS):
        return False
    arrows = _top_level(t, "→")
    if arrows:
        return is_prop_type(t[arrows[-1] + 1 :], "", prop_defs)
    for sym in PROP_SYMBOLS:
        if _top_level(t, sym):
            return True
    head = _head(t)
    last = head.split(".")[-1] if head else ""
    if head in TYPE_HEADS or last in TYPE_HEADS:
        return False
    if head in prop_defs or last in prop_defs:
        return True
    if last in PROP_HEADS or re.match(r"^(Is|Has)[A-Z]", last or ""):
        return True
    return bool(re.match(r"^h(?:[A-Z0-9_'₀-₉]|[a-z]{0,3}[0-9_'₀-₉]*$|$)", name)) and not t[:1].isdigit()


# -- formulas --------------------------------------------------------------------------------

@dataclass
class Context:
    """What the parser knows about names: local definitions (short and full names) and which
    of them are Prop-valued; ``prop_oracle`` overrides the Prop guess for a binder."""

    defs: frozenset[str] = frozenset()
    prop_defs: frozenset[str] = frozenset()
    prop_oracle: Callable[[str, str], bool | None] | None = None

    def is_prop(self, type_text: str, name: str = "") -> bool:
        if self.prop_oracle is not None:
            answer = self.prop_oracle(name, type_text)
            if answer is not None:
                return answer
        return is_prop_type(type_text, name, self.prop_defs)

    def def_name(self, text: str) -> str | None:
        head = _head(text)
        if head and (head in self.defs or head.split(".")[-1] in self.defs):
            return head
        return None


def parse_formula(text: str, ctx: Context | None = None) -> Node:
    """The formula tree of a Lean proposition ``text`` (see the module docstring)."""
    ctx = ctx or Context()
    t = _strip_parens(normalize(text))
    if not t:
        raise LeanParseError("empty formula")
    for word in ("∀", "∃!", "∃", "Π"):
        if _starts_word(t, 0, word):
            if word in ("∃!",):
                return _leaf(t, ctx)
            return _quantifier(t, word, ctx)
    for sym in ("↔", "<->"):
        pos = _top_level(t, sym)
        if pos:
            i = pos[0]
            return Node(op="iff", args=[parse_formula(t[:i], ctx), parse_formula(t[i + len(sym) :], ctx)])
    for sym in ("→", "->"):
        pos = _top_level(t, sym)
        if pos:
            i = pos[0]
            return Node(op="implies", args=[parse_formula(t[:i], ctx), parse_formula(t[i + len(sym) :], ctx)])
    for sym, op in (("∨", "or"), ("∧", "and")):
        pos = _top_level(t, sym)
        if pos:
            parts, last = [], 0
            for i in pos:
                parts.append(t[last:i])
                last = i + 1
            parts.append(t[last:])
            return Node(op=op, args=[parse_formula(p, ctx) for p in parts])
    if t.startswith("¬"):
        return Node(op="not", args=[parse_formula(t[1:], ctx)])
    if t in ("True", "⊤"):
        return Node(op="true")
    if t in ("False", "⊥"):
        return Node(op="false")
    return _leaf(t, ctx)


def _leaf(text: str, ctx: Context) -> Node:
    name = ctx.def_name(text)
    if name:
        return Node(op="def", name=name, text=text)
    return Node(op="atom", text=text)


@dataclass
class Binder:
    """One bound name: ``kind`` is the bracket (explicit, implicit, strict_implicit, instance)."""

    name: str
    type: str
    kind: str
    predicate: str | None = None  # `∀ x > 0,`: the predicate text `x > 0`


_KIND = {"(": "explicit", "{": "implicit", "⦃": "strict_implicit", "[": "instance"}


def parse_binder_group(bracket: str, inner: str) -> list[Binder]:
    """The binders of one bracketed group, e.g. ``("(", "a n : Int")`` → two binders."""
    kind = _KIND[bracket]
    inner = inner.strip()
    if ":=" in inner:
        inner = inner[: inner.index(":=")].strip()  # optional/auto parameter: the default is not part of the type
    colon = _top_level_colon(inner)
    if kind == "instance":
        if colon >= 0 and re.fullmatch(r"[^\s:]+", inner[:colon].strip()):
            return [Binder(inner[:colon].strip(), inner[colon + 1 :].strip(), kind)]
        return [Binder("_", inner, kind)]
    if colon < 0:
        names, typ = inner, "_"
    else:
        names, typ = inner[:colon], inner[colon + 1 :].strip()
    out = [Binder(n, typ, kind) for n in names.split()]
    if not out:
        raise LeanParseError(f"binder without a name: `{bracket}{inner}`")
    return out


def _binder_list(text: str) -> list[Binder]:
    """Binders after ``∀``/``∃`` up to the comma: ``x y : T``, ``(x : T) {y : U}``, ``x ∈ s``."""
    text = text.strip()
    if text[:1] in "({⦃[":
        groups, rest = _groups(text)
        if rest.strip():
            raise LeanParseError(f"cannot read the binders `{text}`")
        return [b for br, inner in groups for b in parse_binder_group(br, inner)]
    for sym in BINDER_PREDICATES:
        pos = _top_level(text, sym)
        if pos:
            names = text[: pos[0]].split()
            return [Binder(n, "_", "explicit", f"{n} {text[pos[0]:].strip()}") for n in names]
    colon = _top_level_colon(text)
    if colon >= 0:
        return [Binder(n, text[colon + 1 :].strip(), "explicit") for n in text[:colon].split()]
    return [Binder(n, "_", "explicit") for n in text.split()]


def _quantifier(text: str, word: str, ctx: Context) -> Node:
    rest = text[len(word) :]
    comma = _top_level_comma(rest)
    if comma < 0:
        raise LeanParseError(f"quantifier without a body: `{text}`")
    binders = _binder_list(rest[:comma])
    body = parse_formula(rest[comma + 1 :], ctx)
    op = "exists" if word == "∃" else "forall"
    return wrap_binders(binders, body, op, ctx)


def wrap_binders(binders: list[Binder], body: Node, op: str, ctx: Context) -> Node:
    """``body`` under ``binders`` (innermost last): object binders become ``op`` nodes,
    proposition binders premises (``forall``) or conjuncts (``exists``)."""
    for b in reversed(binders):
        if b.kind != "instance" and b.type != "_" and ctx.is_prop(b.type, b.name):
            prop = parse_formula(b.type, ctx)
            body = Node(op="implies", args=[prop, body]) if op == "forall" else conjunction([prop, body])
            continue
        if b.predicate:
            pred = parse_formula(b.predicate, ctx)
            body = Node(op="implies", args=[pred, body]) if op == "forall" else conjunction([pred, body])
        body = Node(op=op, var=b.name if b.name != "_" else "_inst", domain=b.type, binder=b.kind, args=[body])
    return body


def parse_header(header: str) -> tuple[list[Binder], str]:
    """Split a declaration header into its binders and its type (after the top-level colon;
    empty for a definition without a written type)."""
    groups, rest = _groups(strip_comments(header))
    binders = [b for br, inner in groups for b in parse_binder_group(br, inner)]
    rest = rest.strip()
    if rest.startswith(":"):
        return binders, rest[1:].strip()
    if rest:
        raise LeanParseError(f"cannot read the header after its binders: `{rest}`")
    return binders, ""


def declaration_tree(decl: Declaration, ctx: Context) -> Node:
    """The formula tree of one root declaration: a theorem's statement; for a definition,
    ``∀ params, name params ↔ body`` (Prop-valued) or ``∀ params, name params = body``."""
    binders, typ = parse_header(decl.header)
    if decl.kind in DEFINITION_KINDS:
        explicit = [b.name for b in binders if b.kind == "explicit"]
        use = " ".join([decl.name] + explicit)
        body = normalize(strip_comments(decl.body))
        if decl.kind in ("def", "abbrev") and typ in ("Prop", "") and body and not body.startswith(("|", "where")):
            try:
                definiens = parse_formula(body, ctx)
            except LeanParseError:
                definiens = Node(op="atom", text=body)
            inner = Node(op="iff", args=[Node(op="def", name=decl.name, text=use), definiens])
        else:
            inner = Node(op="atom", text=f"{use} = {body}" if body else use)
        return wrap_binders(binders, inner, "forall", ctx)
    if not typ:
        raise LeanParseError(f"{decl.name}: the statement has no type")
    return wrap_binders(binders, parse_formula(typ, ctx), "forall", ctx)


def statement_tree(decls: list[Declaration], ctx: Context) -> Node:
    """The candidate tree of a unit: its root declarations, joined by ``and``."""
    return conjunction([declaration_tree(d, ctx) for d in decls])


def local_definitions(decls: list[Declaration]) -> tuple[frozenset[str], frozenset[str]]:
    """(names, Prop-valued names) of the definitions among ``decls`` (short and full names)."""
    names, props = set(), set()
    for d in decls:
        if d.kind in DEFINITION_KINDS and d.name:
            names |= {d.name, d.full_name}
            try:
                _, typ = parse_header(d.header)
            except LeanParseError:
                typ = ""
            if typ == "Prop":
                props |= {d.name, d.full_name}
    return frozenset(names), frozenset(props)


# -- scope lints -----------------------------------------------------------------------------

_BIG_OPS = ("∑", "∏", "⋃", "⋂", "⨆", "⨅", "∫")
#: Operators below the precedence of a big operator's body (67): they end the body.
_BODY_ENDS = ("+", "-", "=", "≠", "<", ">", "≤", "≥", "∣", "∈", "∉", "⊆", "∧", "∨", "→", "↔", "•", "∪", "∩", "\\")


def escaped_variables(text: str, in_scope: set[str]) -> list[str]:
    """Variables bound by a big operator inside ``text`` (``∑ i in s, f i``) that also occur
    after the operator's body ends (precedence 67: ``+``, ``=``, ``<``... end it) and are not
    bound by an enclosing binder (``in_scope``). Example: ``∑ i in range n, f i = g i``: the
    second ``i`` is outside the sum."""
    escaped: list[str] = []
    i = 0
    while i < len(text):
        if text[i] in _BIG_OPS:
            depth0 = _depth_at(text, i)
            comma = None
            j = i + 1
            while j < len(text):
                if text[j] == "," and _depth_at(text, j) == depth0:
                    comma = j
                    break
                j += 1
            if comma is None:
                i += 1
                continue
            names = []
            for tok in text[i + 1 : comma].replace("(", " ").split():
                if tok in ("in", "∈", "∉", ":") or ":" in tok:
                    break
                names.append(tok)
            end = len(text)
            k = comma + 1
            while k < len(text):
                d = _depth_at(text, k)
                if d < depth0:
                    end = k
                    break
                if d == depth0 and any(text.startswith(s, k) for s in _BODY_ENDS):
                    end = k
                    break
                k += 1
            after = text[end:]
            for n in names:
                if n not in in_scope and re.search(r"(?<![\w.'])" + re.escape(n) + r"(?![\w'])", _stop_at_close(after, depth0)):
                    escaped.append(n)
            i = comma + 1
            continue
        i += 1
    return sorted(set(escaped))


def _depth_at(text: str, pos: int) -> int:
    depth = 0
    for c in text[:pos]:
        if c in OPEN:
            depth += 1
        elif c in CLOSE:
            depth -= 1
    return depth


def _stop_at_close(text: str, _depth: int) -> str:
    depth = 0
    for i, c in enumerate(text):
        if c in OPEN:
            depth += 1
        elif c in CLOSE:
            depth -= 1
            if depth < 0:
                return text[:i]
    return text


def bound_in_atoms(tree: Node) -> set[str]:
    """Names bound by term-level binders inside the tree's leaves (``∑ i``, ``fun x``, ``{x | ``)."""
    names: set[str] = set()
    for n in tree.walk():
        if n.op in ("atom", "def"):
            for m in re.finditer(r"(?:[∑∏⋃⋂⨆⨅]|\bfun\b|λ|∀|∃)\s*\(?\s*([^\W\d][\w'₀-₉]*)", n.text):
                names.add(m.group(1))
            for m in re.finditer(r"\{\s*([^\W\d][\w'₀-₉]*)\s*(?::[^|}]*)?(?:\||//)", n.text):
                names.add(m.group(1))
    return names
