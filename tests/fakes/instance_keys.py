"""The keys Lean stores for an instance, computed from its source text, for the inspector double.

Real Lean inserts an instance into its discrimination tree under the keys of its type's conclusion
after ``reduceDT`` (src/Lean/Meta/DiscrTree.lean: ``whnfCore`` — beta, ``let``, projections of
constructors, ``match`` on constructors — then reducible definitions unfolded until stuck), one key
per node in pre-order: ``const name arity`` for a constant applied to ``arity`` arguments, ``star``
for a variable of the instance's binders, ``lit`` for a literal, ``other`` for a sort, ``arrow`` for a
non-dependent arrow (one child, its domain, on Lean 4.35.0). The instance's class is the first key; the class's
``outParam`` positions are stored like the others (docs/lean-contract.md, "Instance keys"; checked
against the keys real Lean 4.35.0 stored in ``.olean`` files: tests/test_instance_keys.py).

This double reads a small term language: applications, the infix relations and arithmetic of
``_INFIX``, ``(fun (x : T) => b) a``, ``(let x := v; b)``,
``(match c with | C => b | _ => b')``, ``A × B``, ``A → B``, ``Type``/``Prop``/``Sort``, numerals,
and the reducible definitions, structures (fields in order) and inductive constructors it is given.
What it does not model: instance-implicit arguments of a class, dependent arrows, ``.proj`` keys of
projections applied to variables, unfolding beyond reducible definitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: ``outParam`` positions of library classes (src/Init/Prelude.lean: ``class HAdd (α : Type u)
#: (β : Type v) (γ : outParam (Type w))`` and its siblings; ``Membership (α : outParam (Type u))``)
LIBRARY_OUT_PARAMS = {"HAdd": [2], "HSub": [2], "HMul": [2], "HDiv": [2], "HMod": [2], "HPow": [2],
                      "HAppend": [2], "HOrElse": [2], "HAndThen": [2], "HAnd": [2], "HOr": [2], "HXor": [2],
                      "HShiftLeft": [2], "HShiftRight": [2], "SMul": [], "HSMul": [2], "Membership": [0],
                      "GetElem": [2], "CoeFun": [1], "CoeSort": [1]}

#: reducible definitions of the library a type may mention: ``(parameters, body)``
LIBRARY_REDUCIBLE = {"optParam": (["α", "d"], "α"), "outParam": (["α"], "α"), "id": (["a"], "a"),
                     "semiOutParam": (["α"], "α"), "autoParam": (["α", "t"], "α")}

_TOKEN = re.compile(r"\s*(=>|:=|←|→|->|×|[()\[\]{};:|,λ=≠≤<≥>∣+*]|[0-9]+|[^\s()\[\]{};:|,=≠≤<≥>∣+*]+)")


@dataclass
class Scope:
    """What reduction may use: reducible definitions (full name → parameters, body text),
    structures (full name → field names in order), constructors (full name → its type's full
    name), a resolver of written names (→ full name), and each constant's module."""

    reducible: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    structures: dict[str, list[str]] = field(default_factory=dict)
    constructors: dict[str, str] = field(default_factory=dict)
    resolve: callable = staticmethod(lambda name: name)  # type: ignore[valid-type]


def tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"cannot read {text[pos:]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, toks: list[str]) -> None:
        self.t, self.i = toks, 0

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def eat(self, tok: str | None = None) -> str:
        got = self.peek()
        if got is None or (tok is not None and got != tok):
            raise ValueError(f"expected {tok!r}, found {got!r}")
        self.i += 1
        return got

    def term(self):
        left = self.relation()
        if self.peek() in ("→", "->"):
            self.eat()
            return ("arrow", left, self.term())
        return left

    def relation(self):
        left = self.sum()
        op = self.peek()
        if op in _INFIX and _INFIX[op][1] == "rel":
            self.eat()
            return _infix(op, left, self.sum())
        return left

    def sum(self):
        left = self.product()
        while self.peek() in _INFIX and _INFIX[self.peek()][1] == "arith":
            op = self.eat()
            left = _infix(op, left, self.product())
        return left

    def product(self):
        left = self.app()
        if self.peek() == "×":
            self.eat()
            return ("app", ("const", "Prod"), [left, self.product()])
        return left

    def app(self):
        head = self.atom()
        args = []
        while self.peek() is not None and self.peek() not in (")", "→", "->", "×", ";", "|", "with", "=>", ":=", ",",
                                                               ":", "]", "}", *_INFIX):
            args.append(self.atom())
        return ("app", head, args) if args else head

    def atom(self):
        tok = self.eat()
        if tok == "(":
            inner = self.term()
            if self.peek() == ":":  # a type ascription `(e : T)`
                self.eat()
                self.term()
            self.eat(")")
            return inner
        if tok in ("fun", "λ"):
            names = []
            while self.peek() != "=>":
                if self.peek() == "(":
                    self.eat("(")
                    while self.peek() != ":":
                        names.append(self.eat())
                    self.eat(":")
                    self.term()
                    self.eat(")")
                else:
                    names.append(self.eat())
            self.eat("=>")
            body = self.term()
            for n in reversed(names):
                body = ("lam", n, body)
            return body
        if tok == "let":
            name = self.eat()
            if self.peek() == ":":
                self.eat(":")
                self.app()
            self.eat(":=")
            value = self.term()
            self.eat(";")
            return ("let", name, value, self.term())
        if tok == "match":
            scrut = self.term()
            self.eat("with")
            alts = []
            while self.peek() == "|":
                self.eat("|")
                pat = self.app()
                self.eat("=>")
                alts.append((pat, self.term()))
            return ("match", scrut, alts)
        if tok in ("Type", "Prop") or tok.startswith("Sort"):
            if tok == "Sort" or (tok == "Type" and self.peek() not in (None, ")", "→", "×")):
                if self.peek() not in (None, ")", "→", "×", ";"):
                    self.eat()
            return ("sort",)
        if tok.isdigit():
            return ("lit", tok)
        return ("const", tok)


#: infix notation as it elaborates: the function, how many implicit and instance arguments come
#: before the operands (keyed as ``star``: ``ignoreArg``), and whether it is a relation
_INFIX = {"=": ("Eq", "rel", 1), "≠": ("Ne", "rel", 1), "≤": ("LE.le", "rel", 2), "<": ("LT.lt", "rel", 2),
          "≥": ("GE.ge", "rel", 2), ">": ("GT.gt", "rel", 2), "∣": ("Dvd.dvd", "rel", 2),
          "+": ("HAdd.hAdd", "arith", 4), "*": ("HMul.hMul", "arith", 4), "-": ("HSub.hSub", "arith", 4)}


def _infix(op: str, a, b):
    fn, _, implicit = _INFIX[op]
    return ("app", ("const", fn), [("implicit",)] * implicit + [a, b])


def parse(text: str):
    p = _Parser(tokens(text))
    t = p.term()
    if p.peek() is not None:
        raise ValueError(f"unread {p.t[p.i:]}")
    return t


def _subst(t, name: str, value):
    kind = t[0]
    if kind == "const":
        return value if t[1] == name else t
    if kind == "app":
        return ("app", _subst(t[1], name, value), [_subst(a, name, value) for a in t[2]])
    if kind == "lam":
        return t if t[1] == name else ("lam", t[1], _subst(t[2], name, value))
    if kind == "let":
        body = t[3] if t[1] == name else _subst(t[3], name, value)
        return ("let", t[1], _subst(t[2], name, value), body)
    if kind == "match":
        return ("match", _subst(t[1], name, value), [(p, _subst(b, name, value)) for p, b in t[2]])
    if kind == "arrow":
        return ("arrow", _subst(t[1], name, value), _subst(t[2], name, value))
    return t


def _spine(t):
    args: list = []
    while t[0] == "app":
        args = list(t[2]) + args
        t = t[1]
    return t, args


def _mk(head, args):
    return ("app", head, args) if args else head


def whnf(t, scope: Scope, bound: frozenset[str], fuel: int = 200):
    """``reduceDT``: beta, ``let``, ``match`` and projections of constructors, reducible
    definitions, until stuck (``fuel`` bounds a cyclic definition)."""
    while fuel > 0:
        fuel -= 1
        if t[0] == "let":
            t = _subst(t[3], t[1], t[2])
            continue
        if t[0] == "match":
            scrut = whnf(t[1], scope, bound, fuel)
            head, _ = _spine(scrut)
            chosen = None
            for pat, body in t[2]:
                ph, _ = _spine(pat)
                pname = ph[1].lstrip(".") if ph[0] == "const" else ""
                if pname == "_":
                    chosen = body
                    break
                if head[0] == "const" and head[1] not in bound and (
                        scope.resolve(pname) == scope.resolve(head[1])
                        or scope.resolve(head[1]).endswith("." + pname)):
                    chosen = body
                    break
            if chosen is None:
                return t
            t = chosen
            continue
        head, args = _spine(t)
        if head[0] == "lam" and args:
            t = _mk(_subst(head[2], head[1], args[0]), args[1:])
            continue
        if head[0] in ("let", "match") and args:
            t = _mk(whnf(head, scope, bound, fuel), args)
            if _spine(t)[0] == head:
                return t
            continue
        if head[0] != "const" or head[1] in bound:
            return t
        full = scope.resolve(head[1])
        unfold = scope.reducible.get(full) or LIBRARY_REDUCIBLE.get(head[1])
        if unfold is not None and len(args) >= len(unfold[0]):
            params, body = unfold
            new = parse(body)
            for p, a in zip(params, args):
                new = _subst(new, p, a)
            t = _mk(new, args[len(params):])
            continue
        owner, _, fname = full.rpartition(".")
        if owner in scope.structures and fname in scope.structures[owner] and args:
            target = whnf(args[0], scope, bound, fuel)
            th, targs = _spine(target)
            if th[0] == "const" and scope.constructors.get(scope.resolve(th[1])) == owner:
                t = _mk(targs[scope.structures[owner].index(fname)], args[1:])
                continue
        return t
    return t


def keys(text: str, scope: Scope, bound: frozenset[str] = frozenset()) -> list[dict]:
    """The keys of the instance type ``text`` (its conclusion), as ``{kind, name, arity}``."""
    out: list[dict] = []

    def go(t):
        t = whnf(t, scope, bound)
        head, args = _spine(t)
        if (head[0] == "const" and head[1] in bound) or head[0] == "implicit":
            out.append({"kind": "star", "name": "", "arity": 0})
        elif head[0] == "const":
            out.append({"kind": "const", "name": scope.resolve(head[1]), "arity": len(args)})
            for a in args:
                go(a)
        elif head[0] == "lit":
            out.append({"kind": "lit", "name": "", "arity": 0})
        elif head[0] == "arrow":
            out.append({"kind": "arrow", "name": "", "arity": 1})
            go(head[1])  # Lean 4.35.0 keys a non-dependent arrow by its domain only
        else:
            out.append({"kind": "other", "name": "", "arity": 0})

    go(parse(text))
    return out
