"""Notation a definition introduces, and where later statements use it (``notation`` edges).

Statements often depend on a definition only through its symbol: a lemma about
``$\\Delta_{\\mathcal P}$`` needs the definition of the density, one about ``$\\bbH[X|Y]$`` the
definition of conditional entropy, without naming either ("recall is low where a
blueprint's statements depend on definitions they use by notation"). This module reads math as
a flat list of tokens (no parse tree, no recursion on the input) and works on ``Statement.body``
of any reader with TeX math in it (TeX, Markdown's ``$…$``).

**What a definition introduces** (``definition_notation``), from its statement only:

* the left side of ``:=``, ``\\coloneqq``, ``\\coloneq``, ``\\defeq``, ``\\triangleq``,
  ``\\stackrel{…}{=}`` / ``\\overset{…}{=}`` (the right side of ``=:`` / ``\\eqqcolon``), every
  member of a chain ``A = B := …``;
* ``X = …`` or ``X \\colon A \\to B`` in a formula right after a defining cue ("define", "we
  set", "let", "put", "introduce", "to be", "as", "by"), or forming the whole statement: each
  member of a list ``H_2 = …, \\quad H_3 = …``;
* the formula after "we write", "denote(d) by", "denoted", "written", "notation", or before
  "denotes" / "stands for" / "for the" / ":=", or the subject of "… is defined/called/given";
* the formula right after the definition's defined term or title ("the \\emph{Ruzsa distance}
  $d[X;Y]$");
* a title that is a formula (``\\begin{definition}[$\\theta$]``): the definition names its symbol.

The symbol (``Atom``) is the first *atom* of such a formula (a family ``(\\bar x_i)_{i \\le k}`` is
``\\bar x_i``): a head (a letter, a Greek letter, a control sequence, a font-wrapped letter
``\\mathcal{P}``, an accented one ``\\widehat{f}``), its subscript, superscript and primes, and the
bracket that follows it at once (``(`` or ``[``) with the separators at its top level (``|``,
``;``, ``:``, ``\\Vert``: the *signature*, so ``\\bbH[X]`` and ``\\bbH[X|Y]`` are different
symbols) and its argument text.

**Normalised alike on both sides**: spacing commands, ``\\left``/``\\right`` and sizes,
``\\displaystyle`` and braces around one token are dropped (``\\mathcal P`` is ``\\mathcal{P}``,
``_{8}`` is ``_8``), ``\\widehat``/``\\hat``, ``\\widetilde``/``\\tilde``,
``\\overline``/``\\bar`` are one accent, and the document's own macros without parameters are
expanded as TeX expands them (``\\newcommand{\\Pa}{\\mathcal{P}}``: ``\\Pa(X)`` is
``\\mathcal{P}(X)``), except a macro a definition *owns* (stands where it introduces a symbol)
whose expansion alone would be too generic (``\\newcommand{\\E}{E}``): that one is matched as
written. A macro for standard notation (``\\N`` for ``\\mathbb{N}``) is never owned.

**Too generic to be a key** (``Notation.generic``): a symbol whose head is a bare Latin or Greek
letter (or ``\\ell``, ``\\partial``, ...) with no subscript, superscript, accent, font or
square-bracket argument (``f(x)``, ``F``, ``\\eta``, ``\\rho(X)``; but ``d[X;Y]`` is notation), a
number, a standard operator or relation (``\\sum``, ``\\log``, ``+``, ``\\le``) and the standard
number sets ``\\mathbb{R}``…; unless the definition owns a document macro for it or names it in
its title.

**Matching a use** (``score``): same head; a subscript or superscript the definition writes as a
constant (``\\Lambda_8``, ``\\phi_{-4}``, ``\\rho^+``, ``D_{KL}``) must be equal, one it writes as a
single letter is a slot (``E_k`` matches ``E_4``; ``\\Delta_{\\mathcal P}`` matches
``\\Delta_{\\Pa(cX)}``); a use has a subscript exactly where the symbol has one, and a superscript
the symbol does not have is a power (``E_4^2``); a use with another bracket is another symbol
(``\\bbH(X)`` is not ``\\bbH[X]``), one without a bracket is the function itself. Among the symbols
a use matches, the best score wins (equal constants, then equal slot letters, the same primes,
bracket, signature and argument), then the latest definition before the statement (the
definition in force), the statement's own symbols included (a definition that defines a symbol
again uses its own). Source of the rules: the notation-edge rules, measured on the
corpus blueprints with ``scripts/dag_quality.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fyan.intake.texscan import DISPLAY_MATH_ENVS, definitions, strip_comment

GREEK = frozenset(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa varkappa lambda mu nu xi omicron pi "
    "varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma "
    "Upsilon Phi Psi Omega varGamma varDelta varTheta varLambda varXi varPi varSigma varUpsilon varPhi varPsi "
    "varOmega ell partial nabla hbar imath jmath wp aleph beth".split())
#: Standard operators, relations, constructions and symbols: never the head of a notation key.
STANDARD = frozenset(
    "sum prod coprod int iint iiint oint bigcup bigcap bigoplus bigotimes bigvee bigwedge bigsqcup lim limsup liminf "
    "sup inf max min log ln lg exp sin cos tan cot sec csc sinh cosh tanh arcsin arccos arctan det dim ker deg gcd "
    "lcm hom Hom Pr arg mod bmod pmod frac dfrac tfrac sqrt binom dbinom tbinom cdot cdots ldots dots vdots ddots "
    "times div pm mp circ bullet ast star otimes oplus wedge vee cap cup setminus subset subseteq supset supseteq "
    "in notin ni le leq ge geq lt gt neq ne approx sim simeq cong equiv propto to mapsto rightarrow leftarrow "
    "Rightarrow Leftarrow leftrightarrow Leftrightarrow iff implies longrightarrow longmapsto hookrightarrow "
    "infty emptyset varnothing forall exists nexists neg lnot land lor mid nmid parallel perp langle rangle lvert "
    "rvert lVert rVert vert Vert lfloor rfloor lceil rceil colon prime backslash triangle Box square angle "
    "operatorname text textrm textit textbf textnormal mbox hbox mathrm mathit mathbf mathsf mathtt mathcal mathbb "
    "mathfrak mathscr boldsymbol bm overline underline hat widehat tilde widetilde bar vec dot ddot check breve "
    "acute grave mathring overbrace underbrace stackrel overset underset substack begin end label tag nonumber "
    "notag quad qquad left right middle big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr bigm "
    "displaystyle textstyle scriptstyle scriptscriptstyle limits nolimits coloneqq coloneq eqqcolon defeq "
    "triangleq top bot ll gg preceq succeq prec succ subsetneq supsetneq sqcup uplus amalg lhd rhd unlhd unrhd "
    "leqslant geqslant lesssim gtrsim ast id Id".split())
#: Standard number sets (``\\mathbb{R}`` ...): generic whatever the font.
STANDARD_SETS = frozenset({"\\mathbb N", "\\mathbb Z", "\\mathbb Q", "\\mathbb R", "\\mathbb C", "\\mathbb P",
                           "\\mathbb F", "\\mathbb H", "\\mathbb T", "\\mathbb A", "\\mathbb E"})
FONTS = frozenset({"mathcal", "mathbb", "mathbf", "mathfrak", "mathscr", "mathsf", "mathrm", "mathit", "mathtt",
                   "boldsymbol", "bm", "mathbold", "pmb", "operatorname", "bold", "Bbb", "frak", "cal", "scr"})
ACCENTS = {"hat": "hat", "widehat": "hat", "tilde": "tilde", "widetilde": "tilde", "bar": "bar", "overline": "bar",
           "vec": "vec", "dot": "dot", "ddot": "ddot", "check": "check", "breve": "breve", "underline": "underline",
           "mathring": "mathring", "acute": "acute", "grave": "grave"}
#: Tokens that typeset space or size only.
NOISE = frozenset({"\\,", "\\;", "\\:", "\\!", "\\ ", "~", "\\quad", "\\qquad", "\\left", "\\right", "\\middle",
                   "\\big", "\\Big", "\\bigg", "\\Bigg", "\\bigl", "\\bigr", "\\Bigl", "\\Bigr", "\\biggl", "\\biggr",
                   "\\Biggl", "\\Biggr", "\\bigm", "\\Bigm", "\\displaystyle", "\\textstyle", "\\scriptstyle",
                   "\\scriptscriptstyle", "\\limits", "\\nolimits", "\\nonumber", "\\notag", "&", "\\allowbreak",
                   "\\hspace", "\\kern", "\\mkern", "\\mathopen", "\\mathclose", "\\phantom", "\\hfill", "\\;\\;"})
#: Macros whose brace argument is text (a ``\\text{…}`` is one opaque token).
TEXT = frozenset({"text", "textrm", "textit", "textbf", "textnormal", "textsf", "texttt", "mbox", "hbox", "mathrm"})
#: Definitional operators: ``X := …`` (and ``… =: X``).
DEFINES = frozenset({":=", "\\coloneqq", "\\coloneq", "\\defeq", "\\triangleq", "\\stackrel=", "\\overset="})
DEFINES_BACK = frozenset({"=:", "\\eqqcolon"})
#: Where the left side of ``:=`` starts at the latest (top level of the formula).
LHS_STOPS = frozenset({",", ";", "\\\\", "\\quad", "\\qquad", "\\text", "\\mbox", "\\le", "\\leq", "\\ge", "\\geq",
                       "<", ">", "\\in", "\\subset", "\\subseteq", "\\forall", "\\exists", "\\to", "\\mapsto",
                       "\\iff", "\\Rightarrow", "\\implies", "&"})
SIGNATURE = {"|": "|", "\\mid": "|", ";": ";", ":": ":", "\\Vert": "‖", "\\|": "‖", "\\parallel": "‖"}

_NOT_NOTATION = re.compile(r"\\(?:begin|end|def|newcommand|ensuremath\s*\{\s*\})")  # macro bodies not expanded
_TOKEN = re.compile(r"\\[A-Za-z@]+\*?|\\.|:=|=:|[A-Za-z]|\d+(?:\.\d+)?|\S")
_MATH_OPEN = re.compile(r"\\\$|\$\$|\$|\\\(|\\\[|\\begin\s*\{([^{}]+)\}")
_STRIP = re.compile(r"\\(?:label|leanok|lean|uses|tag|ref|eqref|cref|Cref|cite|mathlibok|notready)(?![A-Za-z])\*?"
                    r"(?:\s*\[[^\]]*\])?(?:\s*\{[^{}]*\})?")
_CUE_EQUALS = re.compile(r"(?:\b(?:[Dd]efine[sd]?|[Ss]et|[Ll]et|[Pp]ut|[Ii]ntroduce|to\s+be|as|by|[Cc]onsider))"
                         r"(?:\s+(?:the|a|an)\b)?[^.;:$]{0,80}?$")
_CUE_DIRECT = re.compile(r"\b(?:write|denoted?\s+(?:it\s+)?by|denoted|written|notation|denote)\s*$", re.IGNORECASE)
_CUE_AFTER = re.compile(r"^\s*(?:denotes?\b|stands?\s+for\b|for\s+the\b|for\s+(?:this|its)\b|will\s+denote\b|:=)")
#: "$X$ is defined as …": only when the formula is the whole subject of its sentence.
_CUE_SUBJECT = re.compile(r"^\s*(?:is|are)\s+(?:called|defined|given|said)\b")
_SENTENCE_START = re.compile(r"(?:^|[.:;!?])\s*(?:(?:the|a|an|we\s+say\s+that|we\s+say)\s*)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Atom:
    """One symbol in a formula: ``head`` (canonical, e.g. ``\\mathcal P``, ``\\Lambda``, ``d``),
    its subscript and superscript (canonical, None when absent), primes, the bracket that follows
    at once (``(``, ``[`` or None) and that bracket's top-level separators (``signature``);
    ``start``/``end``: offsets of the head's first and the atom's last character in the text it
    was read from; ``written``: the head as written (before macro expansion)."""

    head: str
    sub: str | None = None
    sup: str | None = None
    primes: int = 0
    bracket: str | None = None
    signature: str = ""
    start: int = 0
    end: int = 0
    written: str = ""
    decorated: bool = False  # font or accent on the head
    argument: str = ""  # canonical text inside the bracket

    def shown(self) -> str:
        text = self.head
        if self.sub is not None:
            text += "_" + (self.sub if len(self.sub) == 1 else "{" + self.sub + "}")
        if self.sup is not None:
            text += "^" + (self.sup if len(self.sup) == 1 else "{" + self.sup + "}")
        text += "'" * self.primes
        if self.bracket:  # the argument shown by its separators only: \\bbH[·|·]
            inner = "·".join(["", *self.signature, ""]) if self.signature else "·"
            text += self.bracket + inner + {"(": ")", "[": "]"}[self.bracket]
        return text


@dataclass
class Notation:
    """A symbol a definition introduces: its ``atom``, the document macro it owns (``owned``,
    e.g. ``\\Lat``), and which of its decorations are slots (single letters)."""

    atom: Atom
    owned: str | None = None
    sub_slot: bool = False
    sup_slot: bool = False
    source: str = ""  # the formula it was read from, as written
    titled: bool = False  # the definition's title is this symbol ("Definition ($\\theta$)")

    @property
    def key(self) -> tuple:
        """Identity of the symbol (two definitions giving the same key define the same symbol)."""
        a = self.atom
        return (a.head, None if a.sub is None else ("?" if self.sub_slot else a.sub),
                None if a.sup is None else ("?" if self.sup_slot else a.sup), a.primes, a.bracket,
                a.signature if a.bracket else "")

    @property
    def generic(self) -> bool:
        """Too generic to be a key (module docstring)."""
        if self.owned or (self.titled and not self.atom.head[:1].isdigit()):
            return False
        return generic_atom(self.atom)

    @property
    def generic_expansion(self) -> bool:
        """An owned macro whose expansion alone would be too generic (``\\newcommand{\\E}{E}``):
        it is matched as written, not expanded."""
        return self.owned is not None and generic_atom(self.atom)

    def shown(self) -> str:
        return self.owned if self.owned and self.atom.head == self.owned else self.atom.shown()


def generic_atom(a: Atom) -> bool:
    """A bare letter, a standard operator, a number or a standard set (module docstring)."""
    head = a.head
    if head in STANDARD_SETS or head.lstrip("\\") in STANDARD or head[:1].isdigit():
        return True
    if a.sub is not None or a.sup is not None or a.decorated or a.bracket == "[":
        return False  # d[X;Y]: square-bracket application is notation, f(x) is not
    return _letter(head)


def _letter(head: str) -> bool:
    return (len(head) == 1 and head.isalpha()) or (head.startswith("\\") and head[1:] in GREEK)


# -- math regions and tokens ------------------------------------------------------------------

def uncomment(tex: str) -> str:
    """``tex`` with ``%`` comments blanked (offsets kept) and metadata macros (``\\label``,
    ``\\lean``, references) blanked: they are not notation."""
    out = []
    for line in tex.split("\n"):
        kept = strip_comment(line)
        out.append(kept + " " * (len(line) - len(kept)))
    text = "\n".join(out)
    return _STRIP.sub(lambda m: " " * len(m.group(0)), text)


def math_regions(tex: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every formula in ``tex`` (comments blanked): ``$…$``, ``$$…$$``,
    ``\\(…\\)``, ``\\[…\\]`` and display environments (``equation``, ``align``, ...). A formula
    never runs past a blank line (TeX's own rule), so a stray ``$`` stays in its paragraph."""
    regions: list[tuple[int, int]] = []
    pos = 0
    n = len(tex)
    while pos < n:
        m = _MATH_OPEN.search(tex, pos)
        if m is None:
            break
        tok = m.group(0)
        if tok == "\\$":
            pos = m.end()
            continue
        if m.group(1) is not None:
            env = m.group(1).strip()
            if env not in DISPLAY_MATH_ENVS:
                pos = m.end()
                continue
            close = re.compile(r"\\end\s*\{" + re.escape(env) + r"\}").search(tex, m.end())
            end = close.start() if close else n
            regions.append((m.end(), end))
            pos = close.end() if close else n
            continue
        closer = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}[tok]
        i = m.end()
        end = -1
        while i < n:
            j = tex.find(closer, i)
            if j < 0:
                break
            if tex[j - 1 : j] == "\\" and closer == "$":
                i = j + 1
                continue
            end = j
            break
        para = re.compile(r"\n[ \t]*\n").search(tex, m.end())
        if end < 0 or (para is not None and para.start() < end):
            pos = m.end()  # unclosed in its paragraph: not a formula
            continue
        regions.append((m.end(), end))
        pos = end + len(closer)
    return regions


@dataclass
class _Tok:
    text: str
    start: int
    end: int


def tokens(tex: str, start: int, end: int) -> list[_Tok]:
    """Math tokens of ``tex[start:end]`` with their offsets; spacing and sizing dropped."""
    out: list[_Tok] = []
    for m in _TOKEN.finditer(tex, start, end):
        t = m.group(0)
        if t in NOISE or t.rstrip("*") in NOISE:
            continue
        out.append(_Tok(t, m.start(), m.end()))
    return out


def _group(toks: list[_Tok], i: int) -> int:
    """Index just past the ``{…}`` group opening at ``toks[i]`` (or past the one token there)."""
    if i >= len(toks):
        return i
    if toks[i].text != "{":
        return i + 1
    depth = 0
    for k in range(i, len(toks)):
        if toks[k].text == "{":
            depth += 1
        elif toks[k].text == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(toks)


def canon(toks: list[_Tok]) -> str:
    """Canonical text of a token run: braces around a single token dropped, control words
    separated from a following letter by one space, nothing else."""
    while len(toks) >= 2 and toks[0].text == "{" and _group(toks, 0) == len(toks):
        toks = toks[1:-1]
    parts: list[str] = []
    k = 0
    while k < len(toks):
        t = toks[k].text
        if t == "{" and _group(toks, k) - k == 3:  # {x}: x
            t = toks[k + 1].text
            k += 3
        else:
            k += 1
        if t.startswith("\\") and t[1:2].isalpha() and t[1:] in ACCENTS:
            t = "\\" + ACCENTS[t[1:]]
        if parts and parts[-1][-1:].isalpha() and parts[-1].startswith("\\") and (t[:1].isalpha()):
            parts.append(" ")
        parts.append(t)
    return "".join(parts)


def _head(toks: list[_Tok], i: int) -> tuple[str, int, bool] | None:
    """(canonical head, index after it, decorated) of a symbol starting at ``toks[i]``, or None
    when no symbol starts there."""
    t = toks[i].text
    if t.startswith("\\") and t[1:2].isalpha():
        name = t[1:].rstrip("*")
        if name in FONTS:
            j = _group(toks, i + 1)
            inner = canon(toks[i + 1 : j])
            if not inner:
                return None
            return f"\\{name} {inner}" if inner[:1].isalpha() else f"\\{name}{{{inner}}}", j, True
        if name in ACCENTS:
            j = _group(toks, i + 1)
            inner = canon(toks[i + 1 : j])
            if not inner:
                return None
            sep = " " if inner[:1].isalpha() else ""
            return f"\\{ACCENTS[name]}{sep}{inner}", j, True
        if name in TEXT:
            return None
        if name in STANDARD or name in ("begin", "end"):
            return None
        return t.rstrip("*"), i + 1, False
    if len(t) == 1 and t.isalpha():
        return t, i + 1, False
    return None


def _arg_end(toks: list[_Tok], i: int) -> int:
    """Index past one argument at ``toks[i]``: a group, a font or accent macro with its own
    argument (``_\\mathrm{rad}``), or one token."""
    if i < len(toks) and toks[i].text.startswith("\\"):
        name = toks[i].text[1:].rstrip("*")
        if name in FONTS or name in ACCENTS or name in TEXT:
            return _group(toks, i + 1)
    return _group(toks, i)


def read_atom(toks: list[_Tok], i: int) -> Atom | None:
    """The symbol starting at ``toks[i]`` (head, decorations, bracket), or None."""
    head = _head(toks, i)
    if head is None:
        return None
    text, j, decorated = head
    sub = sup = None
    primes = 0
    n = len(toks)
    while j < n:
        t = toks[j].text
        if t in ("_", "^") and j + 1 < n:
            k = _arg_end(toks, j + 1)
            value = canon(toks[j + 1 : k])
            if t == "_" and sub is None:
                sub = value
            elif t == "^" and sup is None:
                if value in ("\\prime", "'"):
                    primes += 1
                else:
                    sup = value
            else:
                break
            j = k
        elif t == "'":
            primes += 1
            j += 1
        else:
            break
    bracket = None
    signature = ""
    argument = ""
    end = toks[j - 1].end
    if j < n and toks[j].text in ("(", "["):
        bracket = toks[j].text
        close = ")" if bracket == "(" else "]"
        depth = 0
        for k in range(j, n):
            x = toks[k].text
            if x in ("(", "[", "{"):
                depth += 1
            elif x in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    if x == close:
                        end = toks[k].end
                        argument = canon(toks[j + 1 : k])
                    break
            elif depth == 1 and x in SIGNATURE:
                signature += SIGNATURE[x]
    return Atom(text, sub, sup, primes, bracket, signature, toks[i].start, end, toks[i].text, decorated, argument)


def atoms(tex: str, start: int, end: int) -> list[Atom]:
    """Every symbol of the formula ``tex[start:end]``, in order (symbols inside subscripts and
    brackets too: ``H_2`` in ``c_{H_2}(n)``)."""
    toks = tokens(tex, start, end)
    found: list[Atom] = []
    i = 0
    while i < len(toks):
        t = toks[i].text
        if t.startswith("\\") and t[1:].rstrip("*") in TEXT and t[1:] != "mathrm":
            i = _group(toks, i + 1)  # \text{…} is text
            continue
        a = read_atom(toks, i)
        if a is None:
            i += 1
            continue
        found.append(a)
        head = _head(toks, i)
        i = head[1] if head else i + 1
    return found


# -- the document's macros --------------------------------------------------------------------

@dataclass
class Macros:
    """The document's macros without parameters (name without backslash -> body), expanded in
    formulas before symbols are read; ``owned``: those that are the head of a definition's
    symbol, which stay as written."""

    bodies: dict[str, str] = field(default_factory=dict)
    owned: set[str] = field(default_factory=set)

    @classmethod
    def from_definitions(cls, sources: list[str]) -> Macros:
        """From the verbatim macro definitions of a catalogue (``Catalogue.macros``)."""
        bodies: dict[str, str] = {}
        for src in sources:
            for d in definitions(src):
                if d.kind == "macro" and d.name and d.nargs == 0 and d.body.strip() and len(d.body) <= 80 \
                        and "#" not in d.body and not _NOT_NOTATION.search(d.body):
                    bodies[d.name] = d.body.replace("\\ensuremath", "").strip()
        return cls(bodies)

    def expand(self, tex: str) -> str:
        """``tex`` with every parameterless document macro (not owned) replaced by its body,
        repeatedly (at most 4 levels). Offsets change: use on formulas, not on whole bodies."""
        if not self.bodies:
            return tex
        pattern = re.compile(r"\\([A-Za-z@]+)(?![A-Za-z@])")
        for _ in range(4):
            changed = False

            def repl(m: re.Match) -> str:
                nonlocal changed
                name = m.group(1)
                if name in self.bodies and name not in self.owned:
                    changed = True
                    return self.bodies[name] + " "  # as TeX expands it: no group
                return m.group(0)

            tex = pattern.sub(repl, tex)
            if not changed:
                break
        return tex


# -- what a definition introduces -------------------------------------------------------------

def _defined_lhs(toks: list[_Tok]) -> list[int]:
    """Token indices where a defined symbol starts: left sides of ``:=`` (every member of a
    chain ``A = B :=``), right sides of ``=:``."""
    starts: list[int] = []
    n = len(toks)
    k = 0
    while k < n:
        t = toks[k].text
        op = None
        if t in DEFINES or (t == ":" and k + 1 < n and toks[k + 1].text == "="):
            op = "fwd"
            width = 2 if t == ":" else 1
        elif t in ("\\stackrel", "\\overset"):
            j = _group(toks, k + 1)
            if j < n and toks[j].text == "=":
                op, width = "fwd", j + 1 - k
            elif j < n and toks[j].text == "{" and _group(toks, j) == j + 3 and toks[j + 1].text == "=":
                op, width = "fwd", j + 3 - k
        elif t in DEFINES_BACK or (t == "=" and k + 1 < n and toks[k + 1].text == ":"):
            op = "back"
            width = 2 if t == "=" else 1
        if op == "fwd":
            # walk back over the left side (top level) to where it starts; every "=" on the way
            # starts another member of a chain A = B := …
            depth = 0
            j = k - 1
            while j >= 0:
                x = toks[j].text
                if x in (")", "]", "}"):
                    depth += 1
                elif x in ("(", "[", "{"):
                    if depth == 0:
                        break
                    depth -= 1
                elif depth == 0 and x == "=":
                    starts.append(j + 1)
                elif depth == 0 and x in LHS_STOPS:
                    break
                j -= 1
            starts.append(j + 1)
            k += width
            continue
        if op == "back":
            starts.append(k + width)
            k += width
            continue
        k += 1
    return sorted(set(s for s in starts if s < n and toks[s].text != "="))


def _top_equations(toks: list[_Tok]) -> list[int]:
    """Token indices of the symbols ``X`` of a formula that reads ``X = …`` (or ``X \\colon A \\to
    B``) at its top level, for each member of a list ``X = …, Y = …`` (separated by ``,``, ``;``,
    ``\\quad`` or a line break)."""
    found: list[int] = []
    start = 0
    depth = 0
    n = len(toks)
    k = 0
    while k <= n:
        x = toks[k].text if k < n else ","
        if x in ("(", "[", "{"):
            depth += 1
        elif x in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and (x in (",", ";", "\\\\", "\\quad", "\\qquad", "&") or k == n):
            if start < k:
                a = read_atom(toks, start)
                if a is not None:
                    j = start
                    while j < k and toks[j].end <= a.end:
                        j += 1
                    if j < k and toks[j].text in ("=", "\\colon", ":", "\\equiv"):
                        found.append(start)
            start = k + 1
        k += 1
    return found


def definition_notation(body: str, macros: Macros, terms: list[str], title: str | None) -> list[Notation]:
    """The symbols the definition statement ``body`` introduces (module docstring), generic ones
    included (the caller drops them; they still mark a symbol as the definition's own).
    ``terms``/``title``: the definition's defined terms and title, for the appositive form."""
    text = uncomment(body)
    out: list[Notation] = []
    seen: set[tuple] = set()
    named = [t.lower() for t in terms] + ([title.lower()] if title else [])

    def add(formula: str, toks: list[_Tok], index: int, titled: bool = False) -> None:
        if toks[index].text == "(" and index + 1 < len(toks):
            index += 1  # a family: (\\bar x_i)_{i \\le k}
        written = read_atom(toks, index)
        if written is None:
            return
        owned = None
        raw = toks[index].text
        if raw.startswith("\\") and raw[1:] in macros.bodies:
            body = macros.bodies[raw[1:]]
            btoks = tokens(body, 0, len(body))
            inner = read_atom(btoks, 0) if btoks else None
            # a macro for standard notation (\N for \mathbb{N}) is shorthand, not owned
            if inner is None or not (inner.head in STANDARD_SETS or inner.head.lstrip("\\") in STANDARD):
                owned = raw
        atom = written
        if owned is None or owned[1:] not in macros.owned:  # read as TeX expands it
            expanded_text = macros.expand(formula[toks[index].start - toks[0].start:])
            etoks = tokens(expanded_text, 0, len(expanded_text))
            atom = read_atom(etoks, 0) if etoks else None
            if atom is None:
                return
        note = Notation(atom, owned, sub_slot=_slot(atom.sub), sup_slot=_slot(atom.sup), source=formula.strip(),
                        titled=titled)
        if note.key not in seen:
            seen.add(note.key)
            out.append(note)

    if title and re.fullmatch(r"\s*\$[^$]+\$\s*", title):  # "Definition ($\\eta$)": the symbol it defines
        inner = title.strip()[1:-1]
        toks = tokens(inner, 0, len(inner))
        if toks and read_atom(toks, 0) is not None:
            add(inner, toks, 0, titled=True)
    for start, end in math_regions(text):
        toks = tokens(text, start, end)
        if not toks:
            continue
        formula = text[toks[0].start : end]
        for index in _defined_lhs(toks):
            add(formula, toks, index)
        before = text[max(0, start - 120) : start]
        before = re.sub(r"\\(?:begin\s*\{[^{}]*\}|\[|\(|\$)\s*$", "", before.rstrip("$ \n")).rstrip()
        after = text[end : end + 60].lstrip("$ \n")
        after = re.sub(r"^\\(?:end\s*\{[^{}]*\}|\]|\))", "", after).lstrip("$ \n")
        plain_before = re.sub(r"\\(?:emph|textbf|textit|textsl|defn|term)\s*\{([^{}]*)\}", r"\1", before)
        lead = re.sub(r"\\begin\s*\{[^{}]*\}(?:\s*\[[^\]]*\])?|\\(?:\[|\()|\$", " ", text[:start]).strip()
        if _CUE_DIRECT.search(plain_before) or _CUE_AFTER.match(after) or (
                _CUE_SUBJECT.match(after) and _SENTENCE_START.search(plain_before)):
            add(formula, toks, 0)
            continue
        if _CUE_EQUALS.search(plain_before) or not lead:
            for index in _top_equations(toks):  # Define $H_2 = …, \\quad H_3 = …$
                add(formula, toks, index)
            continue
        tail = " ".join(re.sub(r"[{}\\]|emph|textbf|textit", " ", plain_before).split()).lower()
        if any(n and tail.endswith(n) for n in named):
            add(formula, toks, 0)
    return out


def _slot(value: str | None) -> bool:
    """A subscript or superscript that is one letter (Latin or Greek, any font): a variable."""
    if value is None:
        return False
    v = re.sub(r"^\\(?:" + "|".join(sorted(FONTS)) + r")\s*", "", value)
    return _letter(v)


def score(note: Notation, use: Atom) -> int | None:
    """How well ``use`` matches the symbol ``note`` (module docstring): None when it does not,
    else a score (higher is a better match)."""
    a = note.atom
    if use.head != a.head:
        return None
    total = 0
    for mine, theirs, slot, power in ((a.sub, use.sub, note.sub_slot, False), (a.sup, use.sup, note.sup_slot, True)):
        if mine is None and theirs is not None and power:
            continue  # a superscript the symbol does not have is a power: E_4^2 is E_4 squared
        if (mine is None) != (theirs is None):
            return None
        if mine is None:
            continue
        if slot:
            total += 1 if mine == theirs else 0
        elif mine != theirs:
            return None
        else:
            total += 2
    if a.primes and use.primes != a.primes:
        return None
    if use.primes == a.primes:
        total += 1  # \\theta' is the symbol with the prime before the one without
    if a.bracket and use.bracket:
        if use.bracket != a.bracket:
            return None  # \\bbH[X] is not \\bbH(X)
        total += 1 + (2 if use.signature == a.signature else 0) + (1 if use.argument == a.argument else 0)
    return total


def statement_uses(body: str, macros: Macros) -> list[Atom]:
    """Every symbol used in the formulas of a statement ``body`` (macros expanded; offsets are
    those of the formula's first token, for line numbers)."""
    text = uncomment(body)
    found: list[Atom] = []
    for start, end in math_regions(text):
        formula = macros.expand(text[start:end])
        for a in atoms(formula, 0, len(formula)):
            found.append(Atom(a.head, a.sub, a.sup, a.primes, a.bracket, a.signature, start, start, a.written,
                              a.decorated, a.argument))
    return found

