"""A Lean file's header read as Lean reads it: ``module``? ``prelude``? then the imports.

Lean parses a module's header with ``Lean.Parser.Module.header`` (``src/Lean/Parser/Module.lean``
and ``src/Lean/Parser/Module/Syntax.lean`` in leanprover/lean4; docs/lean-contract.md, "Lean
headers")::

    header := ("module")? ("prelude")? import*
    import := atomic(("public")? ("meta")? "import") ("all")? ident

One module name per ``import``; ``public`` before ``meta``; anything else — ``private import``,
``meta public import``, a doc comment ``/--`` or ``/-!``, a command — ends the header (the
rest of the file is commands). Between tokens Lean's ``whitespace`` skips spaces, newlines, ``--``
line comments and nested ``/- … -/`` block comments; a tab, an isolated carriage return or an
unterminated comment is a parse error. A name is Lean's ``ident``: dot-separated components, each
``«…»`` (escaped, any text) or an identifier (first character an ASCII letter, ``_`` or a letter-like
symbol; then also digits, ``'``, ``!``, ``?`` and subscripts); a bare component that *is* a keyword
(``import``, ``all``, …) is the keyword, not a name.

``read_header(text)`` returns a ``Header``: the flags, each ``Import`` with its modifiers and the
character offsets of its name, the offset where the header ends, and ``error`` when Lean would
report a parse error (the imports read before it are kept). Pure; never raises. Every place in
Fyan that reads or edits a file's imports goes through this module (``fyan.adopt.patch``,
``fyan.adopt.package``, the Lake and inspector doubles).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the header's own keywords (``Module.updateTokens`` adds them to the token table); a bare
#: component spelled like one of these is the keyword, never a name
KEYWORDS = frozenset({"module", "prelude", "public", "meta", "all", "import"})
_BLANK = re.compile(r"[ \n]+")
#: the ASCII part of an identifier component (the rest is checked character by character)
_ASCII_ID = re.compile(r"[A-Za-z0-9_'!?]+")
#: a name of ASCII components only (the common case, read in one step)
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_'!?]*(?:\.[A-Za-z_][A-Za-z0-9_'!?]*)*")
_KEYWORD = re.compile("|".join(sorted(KEYWORDS, key=len, reverse=True)))


def _letter_like(c: str) -> bool:
    """Lean's ``isLetterLike`` (``src/Init/Meta.lean``): Greek except λ, Π, Σ;
    Coptic; polytonic Greek; the letter-like block; mathematical alphanumerics."""
    v = ord(c)
    return ((0x3B1 <= v <= 0x3C9 and v != 0x3BB) or (0x391 <= v <= 0x3A9 and v not in (0x3A0, 0x3A3))
            or 0x3CA <= v <= 0x3FB or 0x1F00 <= v <= 0x1FFE or 0x2100 <= v <= 0x214F or 0x1D49C <= v <= 0x1D59F)


def _subscript(c: str) -> bool:
    v = ord(c)
    return 0x2080 <= v <= 0x2089 or 0x2090 <= v <= 0x209C or 0x1D62 <= v <= 0x1D6A


def is_id_first(c: str) -> bool:
    """Lean's ``isIdFirst``: an ASCII letter, ``_`` or a letter-like symbol."""
    return (c.isascii() and c.isalpha()) or c == "_" or _letter_like(c)


def is_id_rest(c: str) -> bool:
    """Lean's ``isIdRest``: ``isIdFirst``, an ASCII digit, ``'``, ``!``, ``?`` or a subscript."""
    return is_id_first(c) or (c.isascii() and c.isdigit()) or c in "'!?" or _subscript(c)


@dataclass(frozen=True)
class Import:
    """One ``import`` of a header: ``parts`` (the name's components, unescaped), the modifiers,
    ``start``/``end`` (offsets of the whole command in the text) and ``name_start``/``name_end``
    (offsets of the name as written)."""

    parts: tuple[str, ...]
    public: bool = False
    meta: bool = False
    all: bool = False
    start: int = 0
    end: int = 0
    name_start: int = 0
    name_end: int = 0

    @property
    def module(self) -> str:
        """The dotted module name (components needing it are written ``«…»``, as Lean prints names)."""
        return module_name(self.parts)

    @property
    def path(self) -> str:
        """The module's source path below its root (``A/B/C.lean``)."""
        return "/".join(self.parts) + ".lean"


@dataclass(frozen=True)
class Header:
    """A file's header: ``module`` and ``prelude`` present or not, the ``imports`` in order,
    ``end`` (offset of the first character after the header's last token) and ``error`` (the
    parse error Lean would report, or None)."""

    module: bool
    prelude: bool
    imports: tuple[Import, ...]
    end: int
    error: str | None = None

    @property
    def modules(self) -> list[str]:
        """The imported modules' dotted names, in order (without the implicit ``Init``)."""
        return [i.module for i in self.imports]


def module_name(parts: tuple[str, ...] | list[str]) -> str:
    """Dotted name of ``parts``; a component that is not a plain identifier (or a one-component
    name that is a keyword) is written ``«…»``."""
    def one(p: str) -> str:
        plain = p and is_id_first(p[0]) and all(is_id_rest(c) for c in p[1:])
        return p if plain and not (len(parts) == 1 and p in KEYWORDS) else f"«{p}»"
    return ".".join(one(p) for p in parts)


def split_name(name: str) -> tuple[str, ...]:
    """Components of a dotted module name as ``module_name`` writes it (``«…»`` unescaped)."""
    out, i = [], 0
    while i < len(name):
        if name[i] == "«":
            j = name.find("»", i + 1)
            j = len(name) if j < 0 else j
            out.append(name[i + 1:j])
            i = j + 2
        else:
            j = name.find(".", i)
            j = len(name) if j < 0 else j
            out.append(name[i:j])
            i = j + 1
    return tuple(out)


class _Error(Exception):
    pass


class _Reader:
    def __init__(self, text: str) -> None:
        self.s = text
        self.n = len(text)

    def skip(self, i: int) -> int:
        """Lean's ``whitespace`` from ``i``: the offset after spaces and comments (``_Error`` on a
        tab, an isolated carriage return or an unterminated block comment)."""
        s, n = self.s, self.n
        while i < n:
            c = s[i]
            if c == "\t":
                raise _Error("tabs are not allowed")
            if c == "\r":
                if i + 1 < n and s[i + 1] == "\n":
                    i += 2
                    continue
                raise _Error("isolated carriage returns are not allowed")
            if c in " \n":
                m = _BLANK.match(s, i)
                i = m.end()
            elif s.startswith("--", i):
                nl = s.find("\n", i)
                i = n if nl < 0 else nl
            elif s.startswith("/-", i) and not (i + 2 < n and s[i + 2] in "-!"):
                depth, i = 1, i + 2
                while depth:
                    if i >= n:
                        raise _Error("unterminated comment")
                    if s.startswith("-/", i):
                        depth, i = depth - 1, i + 2
                    elif s.startswith("/-", i):
                        depth, i = depth + 1, i + 2
                    else:
                        i += 1
            else:
                return i
        return i

    def word(self, i: int) -> tuple[tuple[str, ...], bool, int] | None:
        """The identifier at ``i`` (Lean's ``identFn``): (components, written with an escape or
        a dot, end offset), or None when no identifier starts there. ``_Error`` on an
        unterminated escape or a trailing dot."""
        s, n = self.s, self.n
        m = _ASCII_NAME.match(s, i)
        if m and (m.end() >= n or (s[m.end()].isascii() and s[m.end()] != ".")):
            text = m.group()
            return tuple(text.split(".")), "." in text, m.end()
        parts: list[str] = []
        compound = False
        while True:
            if i < n and s[i] == "«":
                j = s.find("»", i + 1)
                if j < 0:
                    raise _Error("unterminated identifier escape")
                parts.append(s[i + 1:j])
                compound, i = True, j + 1
            elif i < n and is_id_first(s[i]):
                j = _ASCII_ID.match(s, i).end() if s[i].isascii() else i + 1
                while j < n and is_id_rest(s[j]):
                    j += 1
                parts.append(s[i:j])
                i = j
            else:
                if not parts:
                    return None
                raise _Error("expected an identifier after '.'")
            if i + 1 < n and s[i] == "." and (s[i + 1] == "«" or is_id_first(s[i + 1])):
                compound, i = True, i + 1
            elif i < n and s[i] == ".":
                raise _Error("expected an identifier after '.'")
            else:
                return tuple(parts), compound, i

    def keyword(self, i: int) -> str | None:
        """The header keyword at ``i`` (a bare one-component identifier spelled as one), else None."""
        s = self.s
        m = _KEYWORD.match(s, i)
        if m is None:  # fast path: no keyword can start here
            return None
        j = m.end()
        if j >= self.n or (s[j].isascii() and s[j] != "." and not is_id_rest(s[j])):
            return m.group()
        try:
            w = self.word(i)
        except _Error:
            return None
        if w is None or w[1] or w[0][0] not in KEYWORDS:
            return None
        return w[0][0]


def read_header(text: str) -> Header:
    """The ``Header`` of a Lean file's ``text`` (module docstring). Pure; never raises."""
    r = _Reader(text)
    imports: list[Import] = []
    is_module = prelude = False
    end = 0
    try:
        i = r.skip(0)
        if r.keyword(i) == "module":
            is_module, end = True, i + len("module")
            i = r.skip(end)
        if r.keyword(i) == "prelude":
            prelude, end = True, i + len("prelude")
            i = r.skip(end)
        while True:
            start, j, flags = i, i, {"public": False, "meta": False}
            for mod in ("public", "meta"):
                if r.keyword(j) == mod:
                    flags[mod] = True
                    j = r.skip(j + len(mod))
            if r.keyword(j) != "import":  # atomic(...): nothing of a failed prefix is consumed
                break
            j = r.skip(j + len("import"))
            every = False
            if r.keyword(j) == "all":
                every, j = True, r.skip(j + len("all"))
            w = r.word(j)
            if w is None or (not w[1] and w[0][0] in KEYWORDS):
                end = j
                raise _Error("expected a module name after `import`")
            imports.append(Import(parts=w[0], public=flags["public"], meta=flags["meta"], all=every,
                                  start=start, end=w[2], name_start=j, name_end=w[2]))
            end = w[2]
            i = r.skip(end)
    except _Error as e:
        return Header(module=is_module, prelude=prelude, imports=tuple(imports), end=end, error=str(e))
    return Header(module=is_module, prelude=prelude, imports=tuple(imports), end=end)


def imported_modules(text: str) -> list[str]:
    """The dotted names of the modules ``text`` imports (its header's), in order."""
    return read_header(text).modules


def rename_imports(text: str, renamed: dict[str, str]) -> str:
    """``text`` with each import of a module in ``renamed`` (dotted name -> dotted name) naming the
    new module instead; nothing else changes (comments, modifiers and spacing stay)."""
    out, at = [], 0
    for imp in read_header(text).imports:
        new = renamed.get(imp.module)
        if new is not None:
            out += [text[at:imp.name_start], new]
            at = imp.name_end
    return "".join(out) + text[at:]


def add_import(text: str, module: str) -> str:
    """``text`` with ``import <module>`` added as the header's last import (on its own line after
    the last one, or after ``module``/``prelude``, or at the top of a file without header). A
    plain (private) import: what a proof uses needs no more in a ``module`` file."""
    h = read_header(text)
    line = "import " + module
    if h.end == 0:
        return line + "\n" + text
    nl = text.find("\n", h.end)
    rest = text[h.end:] if nl < 0 else text[h.end:nl]
    if not rest.strip() or rest.strip().startswith("--"):  # after the rest of the last line
        at = len(text) if nl < 0 else nl + 1
        return text[:at] + ("" if text[:at].endswith("\n") else "\n") + line + "\n" + text[at:]
    return text[:h.end] + "\n" + line + text[h.end:]
