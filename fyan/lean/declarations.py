"""A light scanner of Lean 4 source: comments, declarations, headers, signatures.

This is *not* an elaborator. It finds top-level declarations (``theorem``, ``lemma``, ``def``,
``abbrev``, ``instance``, ``structure``, ``class``, ``inductive``, ``axiom``, ``opaque``,
``example``) with their modifiers, full name (``namespace`` blocks applied), header (binders
and type, up to the top-level ``:=``, ``where`` or ``|``) and body, with 1-based line numbers.
It is used to check model-written files before Lean sees them (scaffold shape, frozen headers
copied verbatim, source lints). Decisions about correctness are taken on the compiled
environment through the trusted inspector (``fyan.lean.inspector``); docs/design.md forbids
deciding from source text alone. ``lex`` finds comments exactly as Lean's lexer does (strings,
character literals, raw strings and ``«»`` names never start one).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

DECL_KEYWORDS = (
    "theorem", "lemma", "def", "abbrev", "instance", "structure", "class", "inductive",
    "axiom", "opaque", "example",
)
DEFINITION_KINDS = ("def", "abbrev", "structure", "class", "inductive", "instance", "opaque")
MODIFIERS = ("private", "protected", "noncomputable", "unsafe", "partial", "nonrec", "public")
#: Commands that end a declaration's body when they start a line.
COMMAND_STARTS = (
    "end", "namespace", "section", "open", "variable", "universe", "set_option", "attribute",
    "#", "@[", "macro", "syntax", "notation", "local", "scoped", "elab", "import", "mutual",
    "initialize", "builtin_initialize", "run_cmd", "deriving", "export", "infix", "infixl",
    "infixr", "prefix", "postfix", "/--", "omit", "include",
) + DECL_KEYWORDS + MODIFIERS

_DECL_RE = re.compile(
    r"^(?P<attrs>(?:@\[[^\]]*\]\s*)*)(?P<mods>(?:(?:" + "|".join(MODIFIERS) + r")\s+)*)"
    r"(?P<kw>" + "|".join(DECL_KEYWORDS) + r")\b(?P<rest>.*)$"
)
_IDENT = r"(?:«[^»]*»|[^\s:(){}\[\]⦃⦄,.«»]+)(?:\.(?:«[^»]*»|[^\s:(){}\[\]⦃⦄,.«»]+))*"


@dataclass
class Declaration:
    kind: str
    name: str  # as written
    full_name: str  # with the enclosing namespaces
    modifiers: tuple[str, ...]
    attributes: str
    header: str  # binders and type, comments removed, whitespace as written
    body: str  # after := (or the where/| clauses), comments removed
    line_start: int
    line_end: int

    @property
    def signature(self) -> str:
        """Normalized signature: kind, name and header with whitespace collapsed."""
        return normalize(f"{self.kind} {self.name} {self.header}")

    @property
    def frozen_signature(self) -> str:
        """What a freeze binds: the signature, plus the body for definition-like declarations
        (the body of a definition *is* its statement)."""
        if self.kind in DEFINITION_KINDS:
            return normalize(f"{self.signature} := {self.body}")
        return self.signature

    @property
    def type_text(self) -> str:
        """The statement's type: the header after its last top-level colon."""
        i = _top_level_colon(self.header)
        return normalize(self.header[i + 1 :]) if i >= 0 else ""

    @property
    def binders_text(self) -> str:
        """The binders of the header: what comes before its last top-level colon, normalized."""
        i = _top_level_colon(self.header)
        return normalize(self.header[:i]) if i >= 0 else normalize(self.header)

    @property
    def body_is_sorry(self) -> bool:
        return normalize(self.body) in ("by sorry", "sorry", "by\nsorry", "by exact sorry")


def normalize(text: str) -> str:
    return " ".join(text.split())


def signature_hash(signature: str) -> str:
    return hashlib.sha256(signature.encode("utf-8")).hexdigest()


_INTERESTING = re.compile(r"[«\-/r\"']")


def _ident_char(c: str) -> bool:
    return bool(c) and (c.isalnum() or c in "_'!?»" or "\u2080" <= c <= "\u209c")


@dataclass
class Lexed:
    """``src`` read as Lean's lexer reads comments and literals (``lex``)."""

    code: str  # comments replaced by spaces (newlines kept); strings, chars and «» names kept
    problems: list[tuple[int, str]]  # (offset, what could not be read the way Lean reads it)


def lex(src: str) -> Lexed:
    """Find Lean's comments in ``src`` exactly where Lean finds them (Lean 4 reference manual,
    "Lexical structure"): ``--`` to the end of the line and nested ``/- … -/`` blocks, never
    inside a string literal (escapes ``\\`` and ``\"`` included), a character literal
    (``'"'``, ``'\\''``), a raw string (``r"…"``, ``r#"…"#``) or a ``«…»`` name.

    Literal forms that read differently depending on context are reported in ``problems``
    instead of being guessed: a raw string, a string containing ``{`` or ``}`` (an interpolated
    string's braces hold code), an unterminated comment, string or ``«»`` name. Callers that
    check model-written files treat a problem as a reason to refuse the file."""
    out: list[str] = []
    problems: list[tuple[int, str]] = []
    i, n = 0, len(src)
    while i < n:
        m = _INTERESTING.search(src, i)  # copy plain code up to the next character that may start something
        if m is None:
            out.append(src[i:])
            break
        if m.start() > i:
            out.append(src[i : m.start()])
            i = m.start()
        c = src[i]
        prev = src[i - 1] if i > 0 else ""
        if c == "«":
            j = i + 1
            while j < n and src[j] not in "»\n":
                j += 1
            if j >= n or src[j] != "»":
                problems.append((i, "unterminated «…» name"))
                out.append(src[i:j])
                i = j
                continue
            out.append(src[i : j + 1])
            i = j + 1
            continue
        if src.startswith("--", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if src.startswith("/-", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/-", j):
                    depth += 1
                    j += 2
                elif src.startswith("-/", j):
                    depth -= 1
                    j += 2
                else:
                    j += 1
            if depth:
                problems.append((i, "unterminated comment"))
            out.append("".join("\n" if ch == "\n" else " " for ch in src[i:j]))
            i = j
            continue
        if c == "r" and not _ident_char(prev) and i + 1 < n and src[i + 1] in '#"':
            k = i + 1
            while k < n and src[k] == "#":
                k += 1
            if k < n and src[k] == '"':
                hashes = k - i - 1
                end = src.find('"' + "#" * hashes, k + 1)
                j = n if end < 0 else end + 1 + hashes
                problems.append((i, "raw string literal" if end >= 0 else "unterminated raw string literal"))
                out.append(src[i:j])
                i = j
                continue
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            body = src[i + 1 : min(j, n)]
            if j >= n:
                problems.append((i, "unterminated string literal"))
            elif "{" in body or "}" in body:
                problems.append((i, "string literal with braces (an interpolated string's braces hold code)"))
            out.append(src[i : j + 1])
            i = j + 1
            continue
        if c == "'" and not _ident_char(prev):
            if i + 2 < n and src[i + 1] == "\\":
                end = src.find("'", i + 3)
                if 0 < end <= i + 12 and "\n" not in src[i:end]:
                    out.append(src[i : end + 1])
                    i = end + 1
                    continue
            elif i + 2 < n and src[i + 1] not in "'\n" and src[i + 2] == "'":
                out.append(src[i : i + 3])
                i += 3
                continue
        out.append(c)
        i += 1
    return Lexed("".join(out), problems)


def strip_comments(src: str) -> str:
    """``src`` with comments (``--`` and nested ``/- -/``, doc comments included) replaced by
    spaces; newlines, string and character literals and ``«»`` names are kept, so offsets and
    line numbers do not move (``lex``)."""
    return lex(src).code


def _top_level_colon(header: str) -> int:
    depth, last = 0, -1
    i = 0
    while i < len(header):
        c = header[i]
        if c in "([{⦃⟨":
            depth += 1
        elif c in ")]}⦄⟩":
            depth -= 1
        elif c == ":" and depth == 0 and not header.startswith(":=", i):
            last = i
        i += 1
    return last


def _split_header(text: str) -> tuple[str, str]:
    """Split the text after a declaration's name into (header, body) at the first top-level
    ``:=``, ``where`` or ``|`` (pattern-matching definitions)."""
    depth = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c in "([{⦃⟨":
            depth += 1
        elif c in ")]}⦄⟩":
            depth = max(0, depth - 1)
        elif depth == 0:
            if text.startswith(":=", i):
                return text[:i], text[i + 2 :]
            # a match alternative `| pat => rhs` starts a line; `|x|` (absolute value) in a type does not
            line_start = text.rfind("\n", 0, i) + 1
            line_end = text.find("\n", i)
            line = text[i : line_end if line_end >= 0 else len(text)]
            if c == "|" and not text[line_start:i].strip() and not text.startswith("||", i) and ("=>" in line or "↦" in line):
                return text[:i], text[i:]
            if text.startswith("where", i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_.'")) and (
                i + 5 == len(text) or not (text[i + 5].isalnum() or text[i + 5] in "_'")
            ):
                return text[:i], text[i:]
        i += 1
    return text, ""


def _starts_command(line: str) -> bool:
    stripped = line.lstrip()
    if not stripped or line[:1] in (" ", "\t"):
        return False
    return any(
        stripped.startswith(k) and (k in ("#", "@[", "/--") or len(stripped) == len(k) or not (stripped[len(k)].isalnum() or stripped[len(k)] in "_'."))
        for k in COMMAND_STARTS
    )


def scan(src: str) -> list[Declaration]:
    """Top-level declarations of Lean source ``src`` in order (see module docstring)."""
    clean = strip_comments(src)
    lines = clean.split("\n")
    decls: list[Declaration] = []
    namespaces: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if line[:1] not in (" ", "\t"):
            m_ns = re.match(r"^namespace\s+(" + _IDENT + r")\s*$", stripped)
            if m_ns:
                namespaces.append(m_ns.group(1))
                i += 1
                continue
            m_end = re.match(r"^end(?:\s+(" + _IDENT + r"))?\s*$", stripped)
            if m_end and namespaces and m_end.group(1) == namespaces[-1]:
                namespaces.pop()
                i += 1
                continue
        m = _DECL_RE.match(line) if line[:1] not in (" ", "\t") else None
        if m is None:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not _starts_command(lines[j]):
            j += 1
        end = j - 1
        while end > i and not lines[end].strip():
            end -= 1
        text = "\n".join([m.group("rest")] + lines[i + 1 : end + 1])
        kind = m.group("kw")
        name = ""
        if kind not in ("example",):
            m_name = re.match(r"\s*(" + _IDENT + r")", text)
            if m_name and not text.lstrip().startswith(("(", "[", "{", ":", "⦃")):
                name = m_name.group(1)
                text = text[m_name.end() :]
        header, body = _split_header(text)
        if name.startswith("_root_."):
            full = name[len("_root_.") :]
        else:
            full = ".".join(namespaces + [name]) if name else ""
        decls.append(
            Declaration(
                kind="theorem" if kind == "lemma" else kind,
                name=name,
                full_name=full,
                modifiers=tuple(m.group("mods").split()),
                attributes=m.group("attrs").strip(),
                header=header.strip(),
                body=body.strip(),
                line_start=i + 1,
                line_end=end + 1,
            )
        )
        i = j
    return decls


def find(decls: list[Declaration], name: str) -> Declaration | None:
    """The declaration called ``name`` (full name, or as written)."""
    for d in decls:
        if name and (d.full_name == name or d.name == name):
            return d
    return None
