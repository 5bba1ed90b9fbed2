"""The one escaping renderer for document-derived text entering Lean source.

Text from documents is data: a file name, a label, a title or a unit id must never become Lean
code, whatever characters it contains. Every piece of such text that Fyan writes into a Lean
file goes through one of these functions:

* ``comment_text`` — inside a block or doc comment (``/-! … -/``): comment delimiters are
  defused (Lean's block comments nest, so both ``/-`` and ``-/`` are broken with a space), line
  breaks become spaces, other control characters become ``\\u{…}`` text;
* ``string_literal`` — a Lean string literal (quotes included) whose value is ``text``: ``\\``,
  ``"`` and control characters escaped (``\\xHH``, ``\\uHHHH``; an unprintable character beyond
  the BMP becomes U+FFFD), and braces written as ``\\x7b``/``\\x7d`` so the literal reads the
  same even where a string could be interpolated;
* ``name_component`` — one component of a Lean name: kept as is when it is a plain
  identifier, else quoted in ``«»``; refused (``ValueError``) when even that cannot hold it
  (``»``, a line break or a control character in it, or an empty name);
* ``dotted_name`` — a dotted name made of such components.

Source for the lexical rules: the Lean 4 reference manual, "Lexical structure" (comments nest;
string escapes ``\\\\ \\" \\n \\t \\r \\xHH \\uHHHH``; ``«…»`` quotes an identifier component).
"""

from __future__ import annotations

import re

_PLAIN_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_']*$")
#: Words that cannot be a plain identifier component (a sample of Lean's keywords; anything
#: else unusual is quoted anyway because it fails ``_PLAIN_IDENT``).
_KEYWORDS = frozenset({
    "theorem", "lemma", "def", "abbrev", "instance", "structure", "class", "inductive", "axiom", "opaque",
    "example", "namespace", "section", "end", "open", "import", "variable", "universe", "set_option",
    "attribute", "macro", "syntax", "notation", "elab", "fun", "let", "have", "show", "from", "at", "by", "do",
    "then", "else", "if", "match", "with", "where", "in", "Type", "Prop", "Sort", "private", "protected",
    "noncomputable", "unsafe", "partial", "mutual", "deriving", "initialize", "prelude",
})
_LINE_BREAKS = re.compile(r"[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _controls(text: str) -> str:
    return "".join(c if c.isprintable() or c == " " else f"\\u{{{ord(c):x}}}" for c in text)


def comment_text(text: str) -> str:
    """``text`` made safe inside a Lean block or doc comment, on one line (module docstring)."""
    text = _controls(_LINE_BREAKS.sub(" ", text))
    while "-/" in text or "/-" in text:
        text = text.replace("-/", "- /").replace("/-", "/ -")
    return text


_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "{": "\\x7b", "}": "\\x7d"}


def string_literal(text: str) -> str:
    """A Lean string literal whose value is ``text`` (module docstring)."""
    out = ['"']
    for c in text:
        if c in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[c])
        elif not c.isprintable() and c != " ":
            code = ord(c)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code <= 0xFFFF else "\\ufffd")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def name_component(text: str) -> str:
    """One component of a Lean name (module docstring). Raises ``ValueError`` when ``text``
    cannot be a name component at all."""
    if _PLAIN_IDENT.match(text) and text not in _KEYWORDS:
        return text
    if not text or "»" in text or "«" in text or any(not c.isprintable() for c in text):
        raise ValueError(f"{text!r} cannot be a Lean name component")
    return f"«{text}»"


def dotted_name(text: str) -> str:
    """A dotted Lean name, each component through ``name_component``."""
    return ".".join(name_component(part) for part in text.split("."))
