"""Linear scanners over TeX text: what is live, where environments begin and end, where math
is malformed, and the arguments of a macro call.

Everything here works on one string and returns offsets into it; nothing recurses on the
input's nesting, so no document reaches a recursion limit, and a fault (a stray ``$``, an
unclosed brace) stays inside the region where it is. The TeX reader (``fyan.intake.tex``) uses
these on each file; another reader with TeX regions in it (Markdown with LaTeX environments)
can call ``Hider.hide``, ``scan_environments`` and ``math_faults`` on a region of its
own text.

* ``Hider`` blanks what LaTeX never typesets (``%`` comments, verbatim-like and comment-like
  environments, ``\\verb``, the false branch of ``\\iffalse``, ``\\if{false}``, ``\\if0``,
  ``\\ifnum0=1``, switches from ``\\newif``), keeping every offset and line;
* ``definitions`` finds macro and environment definitions (``\\newcommand``, ``\\def``,
  ``\\newenvironment``, ...), whose bodies are code, not content;
* ``scan_environments`` pairs ``\\begin``/``\\end`` (``TexStructureError`` at the first
  mismatch); ``recover_environments`` reads a malformed structure anyway, one ``Fault`` per
  malformation (a statement never closed ends at the next statement or proof);
* ``math_faults`` finds unbalanced ``$``, ``$$``, ``\\(``/``\\)``, ``\\[``/``\\]`` and braces (the
  rules TeX itself applies: math cannot span a paragraph break, a group closes what it opened);
* ``read_args`` reads a macro call's star, optional and mandatory arguments.

Offsets are 0-based indices into the text; ``line_of`` turns one into a 1-based line.
"""

from __future__ import annotations

import gc
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: Environments whose content is not TeX (their content is blanked, their delimiters kept).
VERBATIM_ENVS = frozenset({"verbatim", "verbatim*", "Verbatim", "Verbatim*", "lstlisting", "minted", "BVerbatim",
                           "LVerbatim", "alltt", "filecontents", "filecontents*"})
#: Environments that typeset nothing (package ``comment``); documents add their own.
COMMENT_ENVS = frozenset({"comment"})
#: Display math environments (a ``$`` directly inside one is a fault).
DISPLAY_MATH_ENVS = frozenset(
    f"{n}{s}" for n in ("equation", "align", "gather", "multline", "flalign", "alignat", "eqnarray", "displaymath",
                        "math", "dmath", "dgroup") for s in ("", "*"))
#: Macros whose brace argument is text even inside math (``$`` there opens inline math).
TEXT_MACROS = frozenset({"text", "textrm", "textnormal", "textup", "textit", "textbf", "textsf", "texttt", "textsl",
                         "textsc", "mbox", "hbox", "fbox", "framebox", "makebox", "intertext", "shortintertext",
                         "emph", "tag", "footnote", "parbox", "marginpar", "hspace", "vspace", "label", "mathclap",
                         "operatorname", "hyperref", "href", "url", "cite", "ref", "eqref", "cref", "Cref"})

# TeX primitives and common LaTeX conditionals that need a \fi; ``\if...`` macros that take a
# brace argument (etoolbox's \ifdef{...}, xifthen's \ifthenelse{...}) are not conditionals.
NOT_CONDITIONALS = frozenset({"iff", "ifthenelse", "iflanguage", "ifstrequal", "ifdefstring", "ifboolexpr", "ifbool",
                              "iftoggle", "ifdef", "ifundef", "ifdefempty", "ifcsdef", "ifnumcomp", "ifdimcomp",
                              "ifstrempty", "ifblank", "ifdefmacro", "ifnumequal", "ifnumgreater", "ifnumless",
                              "ifdefined@", "ifpackageloaded", "ifclassloaded", "iffileexists", "ifcsundef",
                              "ifdefvoid", "ifcsvoid", "ifnumodd", "ifdefequal", "ifcsequal", "ifinlist", "ifcsempty"})


class TexStructureError(Exception):
    """An environment structure error at ``offset``: ``message`` and ``hint`` for the user."""

    def __init__(self, offset: int, message: str, hint: str, opened_at: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message
        self.hint = hint
        self.opened_at = opened_at  # offset of the \\begin an unmatched \\end closes


@dataclass
class Fault:
    """A fault at ``offset``: malformed math (where the unbalanced delimiter is) or a malformed
    environment (``recover_environments``: the ``\\begin`` never closed, or the ``\\end`` that
    closes nothing or another environment). ``recovery`` says how a tolerant reading goes on."""

    offset: int
    message: str
    recovery: str = ""


@dataclass
class EnvSpan:
    """One environment: ``\\begin{name}`` at ``begin`` (its argument text starts at ``body``),
    ``\\end{name}`` from ``end_start`` to ``end``; ``parent`` indexes the enclosing span."""

    name: str
    begin: int
    body: int
    end_start: int
    end: int
    parent: int | None = None
    children: list[int] = field(default_factory=list)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a whole document is read or its DAG built.

    Intake allocates one object per token, statement, reference and edge and keeps most of
    them; each collection of the oldest generation walks every live object, so with the
    collector on, a document four times larger took five to six times longer
    (``scripts/bench_intake.py --scale 4``). Nothing intake builds needs the collector to be
    freed (reference counting frees it); the collector runs again on exit, as before."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def line_starts(text: str) -> list[int]:
    """Offsets of the first character of every line of ``text``."""
    return [0] + [m.end() for m in re.finditer("\n", text)]


def line_of(starts: list[int], offset: int) -> int:
    """1-based line of ``offset`` given ``line_starts``."""
    return bisect_right(starts, offset)


def blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` replaced by spaces (newlines kept: lines and offsets stay)."""
    if end <= start:
        return text
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def blank_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with every ``[start, end)`` of ``spans`` blanked (sorted, may overlap)."""
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        start = max(start, pos)
        if end <= start:
            continue
        out.append(text[pos:start])
        out.append(re.sub(r"[^\n]", " ", text[start:end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def blank_code(text: str, spans: list[tuple[int, int]]) -> str:
    """``blank_spans`` for code that TeX reads but never typesets (macro and environment
    definitions): a line that only blanking made empty starts with ``%`` (a comment line, as
    the Hider leaves one), so that it never reads as a paragraph break (a ``\\renewcommand``
    alone on a line inside ``\\[...\\]`` does not end the display)."""
    out = blank_spans(text, spans)
    if out is text:
        return text
    chars: list[str] | None = None
    for start, end in spans:
        a = text.rfind("\n", 0, start) + 1
        while a < end:
            b = text.find("\n", a)
            b = len(text) if b < 0 else b
            if text[a:b].strip() and not out[a:b].strip():
                if chars is None:
                    chars = list(out)
                chars[a] = "%"
            a = b + 1
    return out if chars is None else "".join(chars)


def strip_comment(line: str) -> str:
    """``line`` up to its first unescaped ``%``."""
    i = 0
    while True:
        i = line.find("%", i)
        if i < 0:
            return line
        backslashes = 0
        j = i - 1
        while j >= 0 and line[j] == "\\":
            backslashes += 1
            j -= 1
        if backslashes % 2 == 0:
            return line[:i]
        i += 1


def in_comment(text: str, pos: int) -> bool:
    """Is ``text[pos]`` inside a ``%`` comment (an unescaped ``%`` earlier on its line)?"""
    prefix = text[text.rfind("\n", 0, pos) + 1 : pos]
    return strip_comment(prefix) != prefix


def group_end(text: str, start: int, stop: int | None = None) -> int:
    """Index just past the brace group opening at ``text[start] == "{"`` (``stop`` or the end
    of the text when it never closes). ``text`` must have its comments blanked."""
    stop = len(text) if stop is None else stop
    depth = 0
    i = start
    while i < stop:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return stop


def bracket_end(text: str, start: int, stop: int | None = None) -> int:
    """Index just past the ``[...]`` opening at ``text[start] == "["`` (braces nest inside;
    a blank line or ``stop`` ends it unclosed: returns ``start``)."""
    stop = len(text) if stop is None else stop
    depth = 0
    i = start + 1
    while i < stop:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "]" and depth <= 0:
            return i + 1
        elif c == "\n":
            k = i + 1
            while k < stop and text[k] in " \t":
                k += 1
            if k < stop and text[k] == "\n":
                return start  # a blank line: not an optional argument
        i += 1
    return start


#: What may stand between a macro's arguments: spaces and one line break, and ``%`` comments
#: (blanked to a ``%`` and spaces by the Hider), each eating its line end as TeX reads them.
_SPACE = re.compile(r"[ \t]*(?:%[^\n]*\n[ \t]*)*\n?[ \t]*(?:%[^\n]*\n[ \t]*)*")


def read_args(text: str, pos: int, spec: str, stop: int | None = None) -> tuple[list[str | None], int]:
    """Read the arguments of a macro call whose name ends at ``pos``, by ``spec`` (one character
    per argument: ``*`` an optional star, ``[`` an optional bracket argument, ``{`` a mandatory
    argument). Returns the argument texts without their delimiters (None for an absent optional
    one; a mandatory argument without braces is its next token) and the offset after the call.
    Spaces and one line break may stand between arguments, as in TeX."""
    stop = len(text) if stop is None else stop
    args: list[str | None] = []
    i = pos
    for kind in spec:
        j = _SPACE.match(text, i).end() if kind != "*" else i
        if kind == "*":
            if text.startswith("*", i):
                args.append("*")
                i += 1
            else:
                args.append(None)
            continue
        if kind == "[":
            if j < stop and text[j] == "[":
                end = bracket_end(text, j, stop)
                if end > j:
                    args.append(text[j + 1 : end - 1])
                    i = end
                    continue
            args.append(None)
            continue
        if j >= stop:
            args.append(None)
            continue
        if text[j] == "{":
            end = group_end(text, j, stop)
            args.append(text[j + 1 : end - 1] if end <= stop and text[end - 1] == "}" else text[j + 1 : end])
            i = end
        else:
            m = re.compile(r"\\[A-Za-z@]+|\\.|[^\s{}]").match(text, j)
            if m is None:
                args.append(None)
                continue
            args.append(m.group(0))
            i = m.end()
    return args, i


#: A ``%`` comment with its line end and the next line's leading spaces (TeX's reading: the
#: comment character drops the rest of the line, the line end included, and the state at the
#: next line's start skips its spaces); an escaped ``\\%`` or ``\\\\`` (a line break, then a
#: comment) is matched first so that it is never taken for one.
_ARG_COMMENT = re.compile(r"\\[\\%]|%[^\n]*(?:\n[ \t]*|$)")


def tex_text(text: str) -> str:
    """An argument of a source macro as TeX reads it, on one line: every ``%`` comment removed
    with its line end and the next line's leading spaces (``\\lean{A,%⏎  B}`` is ``A,B``), an
    escaped ``\\%`` kept, and every other run of white space, line ends included, one space
    (none at the ends). The text of a ``\\label``, ``\\lean``, a statement's title, ... is
    used only in this form."""
    return " ".join(_ARG_COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith("\\") else "", text).split())


def normalize_label(text: str) -> str:
    """A label as LaTeX reads it (``tex_text``): runs of spaces and line breaks are one space,
    none at the ends (``\\label{A,\\n    B}`` is the one label ``"A, B"``); a ``%`` comment eats
    its line end and the next line's leading spaces (``A,%`` then ``B`` is ``"A,B"``)."""
    return tex_text(text)


# -- hiding what is never typeset -------------------------------------------------------------

_HIDE = re.compile(
    r"\\\\|\\%"
    r"|(?P<comment>%)"
    r"|\\verb\*?(?P<verb>[^A-Za-z\s*])"
    r"|\\begin\s*\{(?P<env>[^{}\n]*)\}"
    r"|\\newif\s*\\if(?P<newif>[A-Za-z@]+)"
    r"|\\(?P<cond>if[A-Za-z@]*|else|or|fi)(?![A-Za-z@])"
    r"|\\(?P<switch>[A-Za-z@]+)(?P<value>true|false)(?![A-Za-z@])"
)
_EXCLUDE = re.compile(r"\\excludecomment\s*\{([^{}]+)\}"
                      r"|\\(?:re)?newenvironment\*?\s*\{([^{}]+)\}\s*(?:\[\d\]\s*)?\{\s*\\(?:comment|iffalse)\s*\}")
_INCLUDE = re.compile(r"\\includecomment\s*\{([^{}]+)\}")
_PRIMITIVE_IFS = frozenset({"if", "ifcat", "ifx", "ifnum", "ifdim", "ifodd", "ifvmode", "ifhmode", "ifmmode",
                            "ifinner", "ifvoid", "ifhbox", "ifvbox", "ifeof", "iftrue", "iffalse", "ifcase",
                            "ifdefined", "ifcsname", "iffontchar", "ifincsname", "ifpdfprimitive", "ifpdf",
                            "ifluatex", "ifxetex", "ifabsnum", "ifabsdim", "ifpdftex"})


@dataclass
class _Cond:
    truth: bool | None  # None: unknown (both branches are kept)
    branch: bool = True  # in the first branch (before \else)
    dead_from: int | None = None  # offset where this frame's dead region started


class Hider:
    """Blanks what LaTeX never typesets, file after file (switches and comment-like
    environments declared in one file hold in the files read after it). See module docstring.

    ``hide(text)`` returns ``text`` with the hidden regions replaced by spaces (newlines kept,
    and the ``%`` that starts a comment, so that a comment line never looks like a blank one);
    ``skipped`` counts the switched-off blocks found (for tests and reports)."""

    def __init__(self) -> None:
        self.comment_envs: set[str] = set(COMMENT_ENVS)
        self.switches: dict[str, bool] = {}  # \newif\ifdraft -> draft: False
        self.skipped = 0

    def declare(self, raw: str) -> None:
        """Learn the comment-like environments ``raw`` declares (``\\excludecomment{x}``, an
        environment defined as ``{\\comment}{\\endcomment}``)."""
        for m in _EXCLUDE.finditer(raw):
            if not in_comment(raw, m.start()):
                self.comment_envs.add((m.group(1) or m.group(2)).strip())
        for m in _INCLUDE.finditer(raw):
            if not in_comment(raw, m.start()):
                self.comment_envs.discard(m.group(1).strip())

    def hide(self, text: str) -> str:
        self.declare(text)
        spans: list[tuple[int, int]] = []
        stack: list[_Cond] = []
        dead_depth = 0  # number of frames currently in a false branch
        pos = 0
        n = len(text)
        while True:
            m = _HIDE.search(text, pos)
            if m is None:
                break
            pos = m.end()
            if m.group("comment"):  # the '%' stays: a comment line is not a blank line (no paragraph break)
                nl = text.find("\n", m.start())
                end = n if nl < 0 else nl
                spans.append((m.start() + 1, end))
                pos = end
            elif m.group("verb"):
                close = text.find(m.group("verb"), m.end())
                nl = text.find("\n", m.end())
                if close >= 0 and (nl < 0 or close < nl):
                    spans.append((m.end(), close))
                    pos = close + 1
            elif m.group("env") is not None:
                env = m.group("env").strip()
                if env in VERBATIM_ENVS or env in self.comment_envs:
                    end_m = re.compile(r"\\end\s*\{\s*" + re.escape(env) + r"\s*\}").search(text, m.end())
                    end = end_m.start() if end_m else n
                    spans.append((m.end(), end))
                    pos = end_m.end() if end_m else n
                    if env in self.comment_envs:
                        self.skipped += 1
            elif m.group("newif"):
                if dead_depth == 0:
                    self.switches[m.group("newif")] = False
            elif m.group("switch"):
                if dead_depth == 0 and m.group("switch") in self.switches:
                    self.switches[m.group("switch")] = m.group("value") == "true"
            elif m.group("cond"):
                name = m.group("cond")
                if name == "fi":
                    if not stack:
                        continue
                    frame = stack.pop()
                    if frame.dead_from is not None:
                        spans.append((frame.dead_from, m.end()))
                        dead_depth -= 1
                    continue
                if name in ("else", "or"):
                    if not stack:
                        continue
                    frame = stack[-1]
                    if name == "or" or frame.truth is None or not frame.branch:
                        continue  # \ifcase, unknown conditions, a second \else: both kept
                    frame.branch = False
                    if frame.dead_from is not None:  # the false first branch ends here
                        spans.append((frame.dead_from, m.end()))
                        frame.dead_from = None
                        dead_depth -= 1
                    elif frame.truth:  # the \else branch of a true condition is dead
                        frame.dead_from = m.start()
                        dead_depth += 1
                    continue
                base = name[2:]
                if name in NOT_CONDITIONALS:
                    continue
                if name not in _PRIMITIVE_IFS and base not in self.switches:
                    after = text[m.end() : m.end() + 40].lstrip(" \t")
                    if after.startswith("{") or after.startswith("[") or len(name) <= 2:
                        continue  # a macro with arguments (etoolbox style), not a conditional
                truth = None if dead_depth else self._truth(name, text, m.end())
                frame = _Cond(truth)
                if truth is False:
                    frame.dead_from = m.start()
                    dead_depth += 1
                    self.skipped += 1
                stack.append(frame)
        for frame in stack:  # never closed: dead to the end of the file
            if frame.dead_from is not None:
                spans.append((frame.dead_from, n))
        return blank_spans(text, spans)

    def _truth(self, name: str, text: str, pos: int) -> bool | None:
        if name == "iffalse":
            return False
        if name == "iftrue":
            return True
        if name == "if":  # compares the next two tokens: \if{false} and \if0 are false
            rest = text[pos : pos + 3].lstrip(" \t")
            if len(rest) < 2 or "\\" in rest[:2]:
                return None
            a, b = rest[0], rest[1]
            b = " " if b.isspace() else b
            return a == b
        if name == "ifnum":
            m = re.match(r"\s*(-?\d+)\s*([<=>])\s*(-?\d+)(?!\d)", text[pos : pos + 40])
            if m is None:
                return None
            a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
            return a < b if op == "<" else a > b if op == ">" else a == b
        base = name[2:]
        if base in self.switches:
            return self.switches[base]
        return None


# -- macro and environment definitions --------------------------------------------------------

_DEFINITION_START = re.compile(
    r"\\(?P<cmd>(?:re|provide)?newcommand|DeclareRobustCommand|DeclareMathOperator|[gex]?def|let"
    r"|(?:re)?newenvironment|(?:New|Renew|Provide|Declare)Document(?:Command|Environment)|newrobustcmd"
    r"|renewrobustcmd|providerobustcmd)(?![A-Za-z@])\*?"
)
_GROUPS = {"newcommand": 2, "renewcommand": 2, "providecommand": 2, "DeclareRobustCommand": 2,
           "DeclareMathOperator": 2, "newrobustcmd": 2, "renewrobustcmd": 2, "providerobustcmd": 2,
           "def": 1, "gdef": 1, "edef": 1, "xdef": 1,
           "NewDocumentCommand": 3, "RenewDocumentCommand": 3, "ProvideDocumentCommand": 3,
           "DeclareDocumentCommand": 3, "NewDocumentEnvironment": 4, "RenewDocumentEnvironment": 4,
           "ProvideDocumentEnvironment": 4, "DeclareDocumentEnvironment": 4,
           "newenvironment": 3, "renewenvironment": 3}


@dataclass
class Definition:
    """A macro or environment definition: ``kind`` ``macro`` or ``environment``, the defined
    ``name`` (without backslash), its number of parameters, its body (for an environment: the
    begin code and ``end_code``), and where it stands."""

    kind: str
    name: str
    start: int
    end: int
    nargs: int = 0
    optional: bool = False
    spec: str = ""  # argument spec for read_args
    body: str = ""
    end_code: str = ""
    default: str = ""  # the default of an optional first argument (``\\newcommand{\\x}[2][d]{...}``)


def definitions(text: str) -> list[Definition]:
    """Every macro/environment definition in ``text`` (comments already blanked), in order."""
    out: list[Definition] = []
    pos = 0
    n = len(text)
    while True:
        m = _DEFINITION_START.search(text, pos)
        if m is None:
            return out
        cmd = m.group("cmd")
        i = m.end()
        start = m.start()
        if cmd == "let":
            let = re.compile(r"\s*\\([A-Za-z@]+)\s*=?\s*(?:\\[A-Za-z@]+|.)").match(text, i)
            end = let.end() if let else i
            out.append(Definition("macro", let.group(1) if let else "", start, end))
            pos = max(end, i)
            continue
        if cmd in ("def", "gdef", "edef", "xdef"):
            head = re.compile(r"\s*\\([A-Za-z@]+|.)([^{]*)").match(text, i)
            if head is None or text.find("{", head.end()) != head.end():
                pos = i
                continue
            params = head.group(2)
            end = group_end(text, head.end())
            nargs = len(re.findall(r"#\d", params))
            out.append(Definition("macro", head.group(1), start, end, nargs, False, "{" * nargs,
                                  text[head.end() + 1 : end - 1]))
            pos = end
            continue
        groups: list[tuple[int, int]] = []
        opts: list[str] = []
        want = _GROUPS.get(cmd, 2)
        name = ""
        j = i
        while j < n and len(groups) < want:
            c = text[j]
            if c == "{":
                e = group_end(text, j)
                groups.append((j + 1, e - 1))
                j = e
            elif c == "[":
                e = bracket_end(text, j)
                if e <= j:
                    break
                opts.append(text[j + 1 : e - 1])
                j = e
            elif c.isspace() or c == "*":
                j += 1
            elif c == "%":  # a comment between the arguments eats its line end (TeX reads on)
                nl = text.find("\n", j)
                j = n if nl < 0 else nl + 1
            elif c == "\\" and not groups and not name:
                nm = re.compile(r"\\([A-Za-z@]+|.)").match(text, j)
                name = nm.group(1)
                want -= 1  # \newcommand\x{...}: the name is not a group
                j = nm.end()
            else:
                break
        end = j
        if not name and groups:
            name = text[groups[0][0] : groups[0][1]].strip().lstrip("\\")
            groups = groups[1:]
        if cmd.endswith("environment") or cmd.endswith("Environment"):
            begin_code = text[groups[-2][0] : groups[-2][1]] if len(groups) >= 2 else ""
            end_code = text[groups[-1][0] : groups[-1][1]] if groups else ""
            out.append(Definition("environment", name, start, end, body=begin_code, end_code=end_code))
        else:
            body = text[groups[-1][0] : groups[-1][1]] if groups else ""
            nargs, optional, spec = 0, False, ""
            if cmd.endswith("DocumentCommand") and len(groups) >= 2:
                kinds = re.findall(r"[mO]\{[^}]*\}|[mosO]", text[groups[0][0] : groups[0][1]])
                spec = "".join("{" if k == "m" else ("*" if k == "s" else "[") for k in kinds)
                nargs = len(kinds)
            elif opts:
                nargs = int(opts[0]) if opts[0].strip().isdigit() else 0
                optional = len(opts) > 1
                spec = ("[" + "{" * (nargs - 1)) if optional and nargs else "{" * nargs
            out.append(Definition("macro", name, start, end, nargs, optional, spec, body,
                                  default=opts[1] if len(opts) > 1 else ""))
        pos = max(end, i)


# -- environments -----------------------------------------------------------------------------

_BEGIN_END = re.compile(r"\\(begin|end)\s*\{([^{}\n]*)\}")


def scan_environments(text: str, start: int = 0, stop: int | None = None) -> list[EnvSpan]:
    """Pair every ``\\begin``/``\\end`` in ``text[start:stop]`` (comments and verbatim content
    blanked first). Returns the spans in order of their ``\\begin``, each with its parent.
    Raises ``TexStructureError`` at the first ``\\end`` that closes nothing or another
    environment, or at an environment never closed."""
    return _pair_environments(text, start, stop, None, ())[0]


def recover_environments(text: str, start: int = 0, stop: int | None = None, *,
                         starts_statement: Callable[[str], bool],
                         boundaries: Iterable[int] = ()) -> tuple[list[EnvSpan], list[Fault]]:
    """``scan_environments`` that reads malformed environments instead of stopping:
    returns the spans and one ``Fault`` per malformation, at its offset, with how it was read.

    An environment never closed ends at the next *boundary* after its ``\\begin`` at its own
    level — the ``\\begin`` of an environment for which ``starts_statement(name)`` is true (a
    statement or a proof), or an offset of ``boundaries`` (a section, another format's
    statement heading) — or, when none comes first, where the environment around it ends (the
    ``\\end`` that closes an outer one) or at ``stop``; what begins after that point is no longer
    inside it. An ``\\end`` naming an environment that is not open closes the innermost open one
    (``\\begin{proof} ... \\end{definition}`` ends the proof); an ``\\end`` with nothing open is
    ignored. A span ended this way has ``end_start == end`` (it has no ``\\end`` of its own)."""
    return _pair_environments(text, start, stop, starts_statement, boundaries)


def _pair_environments(text: str, start: int, stop: int | None, starts_statement: Callable[[str], bool] | None,
                       boundaries: Iterable[int]) -> tuple[list[EnvSpan], list[Fault]]:
    """Strict pairing (``starts_statement`` None: raise at the first fault) or recovering."""
    stop = len(text) if stop is None else stop
    matches = [(m, m.group(1), m.group(2).strip()) for m in _BEGIN_END.finditer(text, start, stop)]
    spans: list[EnvSpan] = []
    stack: list[int] = []
    faults: list[Fault] = []
    recovering = starts_statement is not None
    cuts: list[int] = []
    if recovering:
        cuts = sorted({m.start() for m, what, name in matches if what == "begin" and starts_statement(name)}
                      | {b for b in boundaries if start <= b < stop})
    starts: list[int] = []

    def line(offset: int) -> int:
        if not starts:
            starts.extend(line_starts(text))
        return line_of(starts, offset)

    def cut(i: int, limit: int) -> str:
        """End the unclosed span ``i`` at its next boundary before ``limit``, else at ``limit``."""
        span = spans[i]
        at = limit
        for b in cuts[bisect_right(cuts, span.begin):]:
            if b >= limit:
                break
            if not any(spans[c].begin < b < spans[c].end for c in span.children):  # at its own level
                at = b
                break
        end = at
        while end > span.body and text[end - 1].isspace():
            end -= 1
        span.end_start = span.end = end
        moved = [c for c in span.children if spans[c].begin >= at]
        if moved:
            span.children = [c for c in span.children if spans[c].begin < at]
            for c in moved:
                spans[c].parent = span.parent
                if span.parent is not None:
                    spans[span.parent].children.append(c)
        if at < limit:
            return f"read up to line {line(end)}, before the statement, proof or heading at line {line(at)}"
        return f"read up to line {line(end)}"

    for m, what, name in matches:
        if what == "begin":
            parent = stack[-1] if stack else None
            spans.append(EnvSpan(name, m.start(), m.end(), -1, -1, parent))
            if parent is not None:
                spans[parent].children.append(len(spans) - 1)
            stack.append(len(spans) - 1)
            continue
        if stack and spans[stack[-1]].name == name:
            top = spans[stack.pop()]
            top.end_start, top.end = m.start(), m.end()
            continue
        if not recovering:
            if not stack:
                raise TexStructureError(m.start(), f"\\end{{{name}}} without a matching \\begin{{{name}}}",
                                        "fix the environment nesting in the source")
            top = spans[stack[-1]]
            raise TexStructureError(m.start(), f"\\end{{{name}}} closes \\begin{{{top.name}}}",
                                    "fix the environment nesting in the source", opened_at=top.begin)
        if not stack:
            faults.append(Fault(m.start(), f"\\end{{{name}}} without a matching \\begin{{{name}}}", "ignored"))
            continue
        if any(spans[i].name == name for i in stack):  # the environments opened inside it were never closed
            while spans[stack[-1]].name != name:
                i = stack.pop()
                how = cut(i, m.start())
                faults.append(Fault(spans[i].begin, f"\\begin{{{spans[i].name}}} is never closed "
                                    f"(\\end{{{name}}} at line {line(m.start())} comes first)", how))
            top = spans[stack.pop()]
            top.end_start, top.end = m.start(), m.end()
            continue
        top = spans[stack.pop()]  # a misnamed \end: it closes the innermost open environment
        top.end_start, top.end = m.start(), m.end()
        faults.append(Fault(m.start(), f"\\end{{{name}}} closes \\begin{{{top.name}}} opened at line {line(top.begin)}",
                            f"read as its \\end{{{top.name}}}"))
    if stack and not recovering:
        top = spans[stack[-1]]
        raise TexStructureError(top.begin, f"\\begin{{{top.name}}} is never closed",
                                f"add \\end{{{top.name}}} or remove the \\begin")
    while stack:
        i = stack.pop()
        how = cut(i, stop)
        faults.append(Fault(spans[i].begin, f"\\begin{{{spans[i].name}}} is never closed", how))
    faults.sort(key=lambda f: f.offset)
    return spans, faults


# -- malformed math ---------------------------------------------------------------------------

_MATH_TOKEN = re.compile(
    r"\\(?P<word>[A-Za-z@]+)\*?"
    r"|\\(?P<sym>[()\[\]])"
    r"|\\."
    r"|(?P<dd>\$\$)|(?P<d>\$)"
    r"|(?P<open>\{)|(?P<close>\})"
    r"|(?P<par>\n[ \t]*\n)"
)
_ENV_NAME = re.compile(r"\s*\{([^{}\n]*)\}")


def math_faults(text: str, start: int = 0, stop: int | None = None,
                text_macros: frozenset[str] | set[str] = TEXT_MACROS) -> list[Fault]:
    """Unbalanced math delimiters and braces in ``text[start:stop]`` (comments blanked first).

    The rules are TeX's: ``$…$``, ``\\(…\\)``, ``$$…$$``, ``\\[…\\]`` and display environments
    must close inside the brace group and the paragraph they open in; a ``$`` directly inside
    display math, or a display opened inside math, is a fault; the argument of a text macro
    (``\\text{…}``, ``\\mbox{…}``, ``text_macros``) is text again, so ``$`` there opens inline
    math. Returns one ``Fault`` per problem, at the offending delimiter (an unclosed one is
    reported where it opened)."""
    stop = len(text) if stop is None else stop
    faults: list[Fault] = []
    # frames: (kind, offset); kinds: "{" group, "t{" text group, "$", "\\(", "$$", "\\[", "env:<name>"
    stack: list[tuple[str, int]] = []
    pending_text_group = False

    def mode() -> str:
        for kind, _ in reversed(stack):
            if kind == "t{":
                return "text"
            if kind in ("$", "\\("):
                return "inline"
            if kind in ("$$", "\\[") or kind.startswith("env:"):
                return "display"
        return "text"

    def unwind_math(at: int, why: str) -> None:
        """Close every math frame above the innermost brace group (reported as unclosed)."""
        while stack and stack[-1][0] not in ("{", "t{"):
            kind, off = stack.pop()
            shown = kind[4:] if kind.startswith("env:") else kind
            faults.append(Fault(off, f"{_opener(shown)} is never closed ({why})"))

    for m in _MATH_TOKEN.finditer(text, start, stop):
        word = m.group("word")
        if word is not None:
            if word in ("begin", "end"):
                env = _ENV_NAME.match(text, m.end())
                if env is None:
                    continue
                name = env.group(1).strip()
                if name not in DISPLAY_MATH_ENVS:
                    continue
                if word == "begin":
                    if mode() != "text":
                        faults.append(Fault(m.start(), f"\\begin{{{name}}} inside math"))
                    stack.append((f"env:{name}", m.start()))
                else:
                    if not any(k == f"env:{name}" for k, _ in stack):
                        continue  # the environment scanner reports unmatched \end
                    while stack and stack[-1][0] != f"env:{name}":
                        kind, off = stack.pop()
                        shown = kind[4:] if kind.startswith("env:") else kind
                        faults.append(Fault(off, f"{_opener(shown)} is never closed (\\end{{{name}}} comes first)"))
                    stack.pop()
                continue
            if word in text_macros:
                pending_text_group = True
                continue
            if word == "par":
                if mode() != "text":
                    unwind_math(m.start(), "a paragraph ends inside math")
            continue
        if m.group("open"):
            stack.append(("t{" if pending_text_group else "{", m.start()))
            pending_text_group = False
            continue
        if text[m.start()] not in " \t\n[":  # anything but the argument's brace ends the text-macro wait
            pending_text_group = False
        if m.group("close"):
            if not any(k in ("{", "t{") for k, _ in stack):
                faults.append(Fault(m.start(), "'}' closes no group"))
                continue
            unwind_math(m.start(), "its brace group ends first")
            stack.pop()
            continue
        if m.group("par"):
            if mode() != "text":
                unwind_math(m.start(), "a paragraph ends inside math")
            continue
        sym = m.group("sym")
        current = mode()
        top = stack[-1][0] if stack else None
        if m.group("dd"):
            if top == "$$":
                stack.pop()
            elif top == "$":  # "$x$$y$": one formula ends, the next begins
                pass
            elif current == "text":
                stack.append(("$$", m.start()))
            else:
                faults.append(Fault(m.start(), "$$ inside math"))
            continue
        if m.group("d"):
            if top == "$":
                stack.pop()
            elif current == "text":
                stack.append(("$", m.start()))
            elif current == "display":
                faults.append(Fault(m.start(), "$ inside display math"))
            else:
                faults.append(Fault(m.start(), "$ inside \\( ... \\)"))
            continue
        if sym in ("(", "["):  # \( and \[ open math in text only
            if current == "text":
                stack.append(("\\" + sym, m.start()))
            else:
                faults.append(Fault(m.start(), f"\\{sym} inside math"))
        elif sym in (")", "]"):
            opener = "\\" + {")": "(", "]": "["}[sym]
            if top == opener:
                stack.pop()
            else:
                faults.append(Fault(m.start(), f"\\{sym} closes no {opener}"))
    for kind, off in reversed(stack):
        shown = kind[4:] if kind.startswith("env:") else kind
        faults.append(Fault(off, f"{_opener(shown)} is never closed"))
    faults.sort(key=lambda f: f.offset)
    return faults


def _opener(kind: str) -> str:
    return {"{": "'{'", "t{": "'{'", "$": "'$'", "$$": "'$$'", "\\(": "'\\('", "\\[": "'\\['"}.get(kind, f"\\begin{{{kind}}}")


# -- text for term matching -------------------------------------------------------------------

_ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
            ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
            "r": "\u030a", "d": "\u0323", "b": "\u0331", "t": "\u0361"}
_ACCENT = re.compile(r"\\([`'^\"~=.])\s*(?:\{\s*(\\?[A-Za-z])\s*\}|(\\?[A-Za-z]))"
                     r"|\\([uvHckrdbt])(?:\s*\{\s*(\\?[A-Za-z])\s*\}|\s+([A-Za-z]))")
_LETTERS = {"ss": "ss", "o": "o", "O": "O", "ae": "ae", "AE": "AE", "oe": "oe", "OE": "OE", "aa": "a", "AA": "A",
            "l": "l", "L": "L", "i": "i", "j": "j"}
_LETTER = re.compile(r"\\(ss|ae|AE|oe|OE|aa|AA|[oOlLij])(?![A-Za-z])\s?")
_FORMAT = re.compile(r"\\(?:emph|textit|textbf|textsl|textup|textrm|textsf|textsc|textnormal|text|mathrm|mathit|mathbf"
                     r"|mathsf|boldsymbol|bm|underline|it|em|bf|sl|rm|sf|sc|itshape|bfseries|upshape|scshape|mdseries"
                     r"|normalfont|ensuremath|mbox|hbox|noindent|index|mathnormal)(?![A-Za-z@])\*?")
_DASHES = re.compile(r"-{2,3}|[\u2010-\u2015\u2212]")


def fold_text(tex: str) -> str:
    """TeX or plain text folded for term matching, the same way on both sides: TeX accents and
    special letters become the letters they print (``Calder\\'on`` and ``Calderón`` both give
    ``calderon``), diacritics are dropped, font macros, braces, ``$`` and ``~`` go, dashes are
    ``-``, runs of spaces are one; line breaks are kept (so a match's line can be counted).
    The result is lower case; ``fold_case_kept`` keeps the case."""
    return fold_case_kept(tex).lower()


def fold_case_kept(tex: str) -> str:
    """``fold_text`` without lowering the case."""

    def accent(m: re.Match) -> str:
        mark = _ACCENTS[m.group(1) or m.group(4)]
        letter = m.group(2) or m.group(3) or m.group(5) or m.group(6) or ""
        return letter.lstrip("\\") + mark

    text = _ACCENT.sub(accent, tex)
    text = _LETTER.sub(lambda m: _LETTERS[m.group(1)], text)
    text = _FORMAT.sub(" ", text)
    text = text.replace("\\-", "").replace("~", " ").replace("\\ ", " ").replace("\\,", " ")
    text = _DASHES.sub("-", text)
    text = re.sub(r"[{}$]", "", text)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return re.sub(r"[ \t\r\f\v]+", " ", text)
