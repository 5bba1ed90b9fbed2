"""TeX intake: theorem-like environments, labels, references and blueprint macros.

The document is parsed with pylatexenc's tolerant ``LatexWalker`` (one parse per file); this
module walks the node tree and keeps provenance (file, first and last line) for everything it
records. What it understands:

* theorem-like environments: the common names (``theorem``, ``thm``, ``lemma``, ``defn``, ...,
  see ``KIND_ALIASES``) and every environment declared with ``\\newtheorem`` (starred or not,
  with shared counters) or ``\\declaretheorem``; the kind comes from the declared display name;
* ``\\input``, ``\\include``, ``\\include*`` and ``\\subfile``, resolved relative to the main
  file's folder like LaTeX does, with or without the ``.tex`` suffix; a missing ``\\include`` is a
  warning (LaTeX itself only warns), a missing ``\\input``/``\\subfile`` an error;
* comments: ``%`` lines, ``\\begin{comment}``, ``\\iffalse ... \\fi`` (their content is ignored;
  verbatim-like environments too);
* ``\\label`` anywhere (labels inside a statement or its proof, for example on an item or an
  equation, belong to that statement);
* references ``\\ref``, ``\\cref``, ``\\Cref``, ``\\eqref``, ``\\autoref``, ``\\nameref`` (comma
  lists allowed), reference macros the document defines itself (``\\newcommand{\\thmref}[1]{Theorem
  \\ref{#1}}``, ``\\def``, ``\\NewDocumentCommand``: any macro whose body passes an argument to a
  reference macro), and the blueprint macros ``\\uses``, ``\\lean``, ``\\leanok``, ``\\mathlibok``;
  ``\\uses`` in a statement and in its proof are kept apart (``Reference.in_proof``);
* a ``proof`` environment belongs to the statement named by its ``\\proves{x}``, else to the
  statement its optional argument references (``\\begin{proof}[Proof of \\cref{x}]``), else to
  the statement before it;
* a theorem-like environment nested in another statement's proof (a claim) is its own
  statement with ``parent`` set; the macro definitions of the document are kept
  (``Catalogue.macros``) for the blueprint export.

Errors (``InputError``, always naming file and line): unreadable or binary file, a file with no
TeX in it, unbalanced ``\\begin``/``\\end``, a missing ``\\input`` file (the hint names the
folder where it exists, if any), an ``\\input`` loop, a label defined twice, a file over the
size limit. Non-UTF-8 files are read as Latin-1 with a warning; a missing ``\\include`` is a
warning.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from pylatexenc import latexwalker, macrospec
from pylatexenc.latexwalker import (
    LatexCharsNode,
    LatexCommentNode,
    LatexEnvironmentNode,
    LatexGroupNode,
    LatexMacroNode,
    LatexMathNode,
    LatexWalker,
)

from fyan.errors import InputError
from fyan.intake.catalogue import (
    KIND_ALIASES,
    Catalogue,
    LabelSite,
    ProofBlock,
    Provenance,
    Reference,
    Statement,
)

REFERENCE_MACROS = frozenset(
    {"ref", "cref", "Cref", "eqref", "autoref", "nameref", "labelcref", "crefrange", "uses"}
)
#: Blueprint macros; a document's own (re)definition of them is not a reference wrapper.
BLUEPRINT_MACROS = frozenset({"uses", "proves", "lean", "leanok", "mathlibok", "notready", "discussion"})
INCLUDE_MACROS = frozenset({"input", "include", "subfile"})
PROOF_ENVS = frozenset({"proof", "proof*"})
TERM_MACROS = frozenset({"textbf", "emph", "textit", "defn", "term", "keyword"})
VERBATIM_ENVS = ("verbatim", "Verbatim", "lstlisting", "minted", "comment")

_BEGIN_END = re.compile(r"\\(begin|end)\s*\{([^{}]*)\}")


def _latex_context() -> macrospec.LatexContextDb:
    ctx = latexwalker.get_default_latex_context_db()
    specs = [macrospec.MacroSpec(name, "*{") for name in REFERENCE_MACROS - {"crefrange"}]
    specs += [
        macrospec.MacroSpec("crefrange", "*{{"),
        macrospec.MacroSpec("lean", "{"),
        macrospec.MacroSpec("leanok", ""),
        macrospec.MacroSpec("mathlibok", ""),
        macrospec.MacroSpec("notready", ""),
        macrospec.MacroSpec("input", "{"),
        macrospec.MacroSpec("include", "*{"),
        macrospec.MacroSpec("subfile", "{"),
        macrospec.MacroSpec("newtheorem", "*{[{["),
        macrospec.MacroSpec("declaretheorem", "[{"),
        macrospec.MacroSpec("label", "{"),
        macrospec.MacroSpec("proves", "{"),
    ]
    _add_specs(ctx, macros=specs)
    return ctx


def _add_specs(ctx: macrospec.LatexContextDb, macros=(), environments=()) -> None:
    """Put specs in front of every default definition. They go into the first category of the
    database rather than a new category: pylatexenc scans every category for specials at every
    character, so each extra category costs parse time (pylatexenc 2.x ``LatexContextDb``)."""
    first = ctx.d[ctx.category_list[0]]
    first["macros"].update((m.macroname, m) for m in macros)
    first["environments"].update((e.environmentname, e) for e in environments)


_NEWTHEOREM = re.compile(r"\\(?:newtheorem\*?\s*\{([^{}]+)\}|declaretheorem\s*(?:\[[^\]]*\])?\s*\{([^{}]+)\})")
# \newcommand{\x}[n][default]{body}, \def\x#1#2{body}, \NewDocumentCommand{\x}{m o}{body}
_DEFINITION = re.compile(
    r"\\(?:(?:re|provide)?newcommand\*?\s*\{?\s*\\([A-Za-z@]+)\s*\}?\s*(?:\[(\d)\])?\s*(\[[^\]]*\])?"
    r"|def\s*\\([A-Za-z@]+)((?:#\d)*)"
    r"|(?:New|Renew|Provide|Declare)DocumentCommand\s*\{?\s*\\([A-Za-z@]+)\s*\}?\s*\{([^{}]*)\})\s*\{"
)
_MACRO_DEFINITION = re.compile(
    r"\\(?:(?:re|provide)?newcommand|DeclareMathOperator|def|(?:New|Renew|Provide|Declare)DocumentCommand"
    r"|let|newenvironment|renewenvironment)\b"
)
_WRAPPED_REF = re.compile(
    r"\\(?:[cC]ref|ref|eqref|autoref|nameref|labelcref|pageref|[vV]ref)\*?\s*\{\s*#(\d)\s*\}"
    r"|\\hyperref\s*\[\s*#(\d)\s*\]"
)
_HIDDEN = re.compile(r"\\begin\s*\{(comment|lstlisting|minted|Verbatim)\}|\\iffalse(?![A-Za-z@])")
_IF = re.compile(r"\\(if[A-Za-z@]*|fi)(?![A-Za-z@])")


def _group_end(text: str, start: int) -> int:
    """Index just past the brace group opening at ``text[start] == "{"`` (or len(text))."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
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
        elif c == "%":
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        i += 1
    return n


def _blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` replaced by spaces (newlines kept: lines and offsets stay)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _hide_ignored(text: str) -> str:
    """Blank the content of ``comment``/verbatim-like environments and ``\\iffalse ... \\fi``
    (outside ``%`` comments), keeping every offset, so the parser never sees it."""
    pos = 0
    while True:
        m = _HIDDEN.search(text, pos)
        if m is None:
            return text
        if _in_comment(text, m.start()):
            pos = m.end()
            continue
        if m.group(1):
            end_m = re.compile(r"\\end\s*\{" + re.escape(m.group(1)) + r"\}").search(text, m.end())
            end = end_m.start() if end_m else len(text)
            text = _blank(text, m.end(), end)
            pos = end_m.end() if end_m else len(text)
            continue
        depth = 1
        end = len(text)
        for t in _IF.finditer(text, m.end()):
            depth += -1 if t.group(1) == "fi" else 1
            if depth == 0:
                end = t.end()
                break
        text = _blank(text, m.start(), end)
        pos = end


def _in_comment(text: str, pos: int) -> bool:
    """Is ``text[pos]`` inside a ``%`` comment (an unescaped ``%`` earlier on its line)?"""
    prefix = text[text.rfind("\n", 0, pos) + 1 : pos]
    return _strip_comment(prefix) != prefix


_GROUPS = {"newcommand": 2, "renewcommand": 2, "providecommand": 2, "DeclareMathOperator": 2, "def": 1,
           "NewDocumentCommand": 3, "RenewDocumentCommand": 3, "ProvideDocumentCommand": 3,
           "DeclareDocumentCommand": 3, "newenvironment": 3, "renewenvironment": 3}


def _definition_text(text: str, start: int) -> str:
    """The whole macro definition starting at ``text[start]`` (a backslash), verbatim."""
    m = re.match(r"\\([A-Za-z]+)\*?\s*", text[start:])
    assert m is not None
    command = m.group(1)
    i = start + m.end()
    if command == "let":
        let = re.match(r"\\[A-Za-z@]+\s*=?\s*(?:\\[A-Za-z@]+|.)", text[i:])
        return text[start : i + (let.end() if let else 0)]
    groups = _GROUPS.get(command, 1)
    if command not in ("def", "newenvironment", "renewenvironment") and text[i : i + 1] == "\\":
        groups -= 1  # \newcommand\x[1]{...}: the name is not a group
    n = len(text)
    while i < n and groups > 0:
        c = text[i]
        if c == "{":
            i = _group_end(text, i)
            groups -= 1
        elif c == "[":
            close = text.find("]", i)
            i = n if close < 0 else close + 1
        elif c.isspace() or c in "*#0123456789":
            i += 1
        elif c == "\\":
            name = re.match(r"\\(?:[A-Za-z@]+|.)", text[i:])
            i += name.end() if name else 1
        else:
            i += 1
    return text[start:i]


def _wrappers(text: str) -> dict[str, tuple[int, str]]:
    """Reference macros ``text`` defines: name -> (index of the label argument, argument spec)."""
    found: dict[str, tuple[int, str]] = {}
    for m in _DEFINITION.finditer(text):
        if _in_comment(text, m.start()):
            continue
        body_start = m.end() - 1
        body = text[body_start : _group_end(text, body_start)]
        refs = [int(r.group(1) or r.group(2)) for r in _WRAPPED_REF.finditer(body)]
        if not refs:
            continue
        if m.group(1):  # \newcommand
            name, nargs, optional = m.group(1), int(m.group(2) or 0), m.group(3) is not None
            spec = ("[" + "{" * (nargs - 1)) if optional and nargs else "{" * nargs
        elif m.group(4):  # \def
            name, nargs = m.group(4), len(re.findall(r"#\d", m.group(5) or ""))
            spec = "{" * nargs
        else:  # xparse: m = mandatory, o/O{..} = optional
            name = m.group(6)
            kinds = re.findall(r"[mO]\{[^}]*\}|[mosO]", m.group(7) or "")
            spec = "".join("{" if k == "m" else ("*" if k == "s" else "[") for k in kinds)
        if name in BLUEPRINT_MACROS or name in REFERENCE_MACROS or not spec or refs[0] > len(spec):
            continue
        found[name] = (refs[0] - 1, spec)
    return found


@dataclass
class _SourceFile:
    path: Path
    rel: str
    text: str
    newlines: list[int] = field(default_factory=list)
    parsed: str = ""  # ``text`` with ignored regions blanked (same length and lines)

    def __post_init__(self) -> None:
        self.newlines = [m.start() for m in re.finditer("\n", self.text)]
        self.parsed = _hide_ignored(self.text)

    def verbatim(self, node) -> str:
        """The original text of ``node`` (ignored regions included, as written)."""
        return self.text[node.pos : node.pos + node.len]

    def line(self, pos: int) -> int:
        """1-based line of character offset ``pos``."""
        return bisect_left(self.newlines, pos) + 1


def _decode(path: Path, rel: str, data: bytes, warnings: list[str]) -> str:
    if b"\x00" in data[:65536]:
        raise InputError(f"{rel}: binary file, not TeX", hint="give the .tex source of the document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        warnings.append(f"{rel}:{line}: file is not UTF-8; read as Latin-1")
        return data.decode("latin-1")


def _strip_comment(line: str) -> str:
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


def _check_balance(src: _SourceFile) -> None:
    """Raise ``InputError`` at the first unmatched ``\\begin``/``\\end`` (comments and verbatim
    content ignored; only the document body when the file has ``\\begin{document}``)."""
    stack: list[tuple[str, int]] = []
    lines = src.parsed.split("\n")
    start = 0
    for n, raw in enumerate(lines):
        if re.search(r"\\begin\s*\{document\}", _strip_comment(raw)):
            start = n
            break
    verbatim: str | None = None
    for n in range(start, len(lines)):
        line = lines[n]
        if verbatim is None:
            line = _strip_comment(line)
        for m in _BEGIN_END.finditer(line):
            what, name = m.group(1), m.group(2).strip()
            if verbatim is not None:
                if what == "end" and name == verbatim:
                    verbatim = None
                    stack.pop()
                continue
            if what == "begin":
                stack.append((name, n + 1))
                if name.rstrip("*") in VERBATIM_ENVS:
                    verbatim = name
            elif not stack:
                raise InputError(
                    f"{src.rel}:{n + 1}: \\end{{{name}}} without a matching \\begin{{{name}}}",
                    hint="fix the environment nesting in the source",
                )
            elif stack[-1][0] != name:
                open_name, open_line = stack[-1]
                raise InputError(
                    f"{src.rel}:{n + 1}: \\end{{{name}}} closes \\begin{{{open_name}}} "
                    f"opened at line {open_line}",
                    hint="fix the environment nesting in the source",
                )
            else:
                stack.pop()
    if stack:
        name, line_no = stack[-1]
        raise InputError(
            f"{src.rel}:{line_no}: \\begin{{{name}}} is never closed",
            hint=f"add \\end{{{name}}} or remove the \\begin",
        )


def _arg_text(node: LatexMacroNode, index: int) -> str | None:
    args = node.nodeargd.argnlist if node.nodeargd is not None else []
    if index >= len(args) or args[index] is None:
        return None
    text = args[index].latex_verbatim()
    if text[:1] in "{[" and text[-1:] in "}]":
        text = text[1:-1]
    return text.strip()


def _has_args(node: LatexMacroNode) -> bool:
    return node.nodeargd is not None and any(a is not None for a in node.nodeargd.argnlist)


def _last_arg_text(node: LatexMacroNode) -> str | None:
    args = node.nodeargd.argnlist if node.nodeargd is not None else []
    for i in range(len(args) - 1, -1, -1):
        if args[i] is not None and args[i].latex_verbatim()[:1] == "{":
            return _arg_text(node, i)
    return None


def _plain_term(tex: str) -> str:
    text = re.sub(r"\$[^$]*\$", " ", tex)
    text = re.sub(r"\\[a-zA-Z]+\*?", " ", text)
    text = re.sub(r"[{}~\\]", " ", text)
    return " ".join(text.split()).strip(" .,;:").lower()


@dataclass
class _Builder:
    stmt: Statement
    proof_seen: bool = False


@dataclass
class _Ctx:
    builder: _Builder | None = None
    in_proof: bool = False


class _TexReader:
    def __init__(self, main: Path, source_root: Path) -> None:
        self.main = main
        self.root = source_root
        self.warnings: list[str] = []
        self.files: list[str] = []
        self.statements: list[Statement] = []
        self.labels: dict[str, LabelSite] = {}
        self.theorem_envs: dict[str, str] = {}  # env name -> canonical kind
        self._stack: list[str] = []
        self._context = _latex_context()
        self._env_specs: set[str] = set()
        self.ref_wrappers: dict[str, int] = {}  # macro -> index of its label argument
        self.max_file_mib: float | None = None
        self.macros: list[str] = []

    def _announce_macros(self, text: str) -> None:
        """Find the reference macros a file defines (``\\newcommand{\\thmref}[1]{...\\ref{#1}}``)
        and tell the parser their arguments, before parsing the file; also keep every macro
        definition verbatim for the blueprint export."""
        wrappers = {k: v for k, v in _wrappers(text).items() if k not in self.ref_wrappers}
        if wrappers:
            _add_specs(self._context,
                       macros=[macrospec.MacroSpec(name, spec) for name, (_, spec) in sorted(wrappers.items())])
            self.ref_wrappers.update({name: index for name, (index, _) in wrappers.items()})
        for m in _MACRO_DEFINITION.finditer(text):
            if not _in_comment(text, m.start()):
                self.macros.append(_definition_text(text, m.start()))

    def _announce_environments(self, text: str) -> None:
        """Tell the parser about theorem environments a file declares, before parsing it, so
        their optional argument (the title) is parsed as one; the kind is set when the
        declaration itself is walked."""
        names = {m.group(1) or m.group(2) for m in _NEWTHEOREM.finditer(text)} - self._env_specs
        names = {n.strip() for n in names if n and n.strip()}
        if names:
            _add_specs(self._context, environments=[macrospec.EnvironmentSpec(n, "[") for n in sorted(names)])
            self._env_specs |= names

    # -- files -----------------------------------------------------------------------------
    def _rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    def _load(self, path: Path) -> _SourceFile:
        rel = self._rel(path)
        if self.max_file_mib is not None:
            from fyan.intake import check_size

            check_size(path, rel, self.max_file_mib)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise InputError(f"{rel}: cannot read: {e.strerror}") from None
        text = _decode(path, rel, data, self.warnings)
        src = _SourceFile(path, rel, text)
        if not self.files:  # the main file must look like TeX
            if "\\" not in text or not re.search(r"\\[a-zA-Z]+", text):
                raise InputError(
                    f"{rel}: does not look like a TeX document (no TeX command in it)",
                    hint="give the .tex source of the document",
                )
        _check_balance(src)
        return src

    def _resolve_include(self, name: str, src: _SourceFile, line: int, macro: str) -> Path | None:
        """The file an ``\\input``-like macro names. A missing ``\\include`` is a warning (None),
        like in LaTeX; a missing ``\\input``/``\\subfile`` raises ``InputError``."""
        name = name.strip()
        base = self.main.parent
        # LaTeX resolves against the folder it runs in (the main file's); a chapter file read
        # as the main file still names its siblings from the blueprint root, so try that too.
        folders = dict.fromkeys([base, src.path.parent, self.root])
        for folder in folders:
            for cand in (folder / name, folder / f"{name}.tex"):
                if cand.is_file():
                    return cand
        if macro == "include":
            self.warnings.append(f"{src.rel}:{line}: \\include{{{name}}}: file not found; skipped (LaTeX skips it too)")
            return None
        hint = "copy the whole source tree, or remove the \\input"
        for up in list(base.parents)[:3]:
            if (up / name).is_file() or (up / f"{name}.tex").is_file():
                hint = (f"it exists relative to {up}: give the main file of the document there "
                        f"(the file that \\inputs {src.rel}) so that paths resolve as LaTeX resolves them")
                break
        raise InputError(
            f"{src.rel}:{line}: included file {name!r} not found (looked in {self._rel(base)}/)", hint=hint
        )

    def read_file(self, path: Path, ctx: _Ctx) -> None:
        key = str(path.resolve())
        if key in self._stack:
            chain = " -> ".join(self._rel(Path(p)) for p in self._stack + [key])
            raise InputError(f"\\input loop: {chain}", hint="remove the circular \\input")
        self._stack.append(key)
        src = self._load(path)
        self.files.append(src.rel)
        self._announce_environments(src.parsed)
        self._announce_macros(src.parsed)
        walker = LatexWalker(src.parsed, latex_context=self._context, tolerant_parsing=True)
        nodes, _, _ = walker.get_latex_nodes()
        self._walk(nodes, src, ctx)
        self._stack.pop()

    # -- walking ---------------------------------------------------------------------------
    def _walk(self, nodes: list, src: _SourceFile, ctx: _Ctx) -> None:
        i = 0
        n = len(nodes)
        while i < n:
            node = nodes[i]
            i += 1
            if node is None or isinstance(node, LatexCommentNode):
                continue
            if isinstance(node, LatexEnvironmentNode):
                self._environment(node, src, ctx)
            elif isinstance(node, LatexMacroNode):
                if node.macroname in self.ref_wrappers and not _has_args(node):
                    # defined in a file read after this one was parsed: take the groups after it
                    args = []
                    while i < n and len(args) <= self.ref_wrappers[node.macroname]:
                        nxt = nodes[i]
                        if isinstance(nxt, LatexGroupNode):
                            args.append(nxt)
                        elif not (isinstance(nxt, LatexCharsNode) and not nxt.chars.strip()):
                            break
                        i += 1
                    if len(args) > self.ref_wrappers[node.macroname]:
                        group = args[self.ref_wrappers[node.macroname]]
                        self._reference(node.macroname, group.latex_verbatim()[1:-1], src, src.line(node.pos), ctx)
                    continue
                self._macro(node, src, ctx)
            elif isinstance(node, (LatexGroupNode, LatexMathNode)):
                self._walk(node.nodelist, src, ctx)

    def _kind_of(self, env: str) -> str | None:
        if env in self.theorem_envs:
            return self.theorem_envs[env]
        base = env.rstrip("*")
        if base in self.theorem_envs:
            return self.theorem_envs[base]
        return KIND_ALIASES.get(base)

    def _environment(self, node: LatexEnvironmentNode, src: _SourceFile, ctx: _Ctx) -> None:
        env = node.environmentname
        if env in PROOF_ENVS:
            self._proof(node, src, ctx)
            return
        kind = self._kind_of(env)
        if kind is None:
            self._walk(node.nodelist, src, ctx)
            if node.nodeargd is not None:
                self._walk([a for a in node.nodeargd.argnlist if a is not None], src, ctx)
            return
        start, end = src.line(node.pos), src.line(node.pos + node.len - 1)
        title = _arg_text(node, 0)
        stmt = Statement(
            index=len(self.statements),
            kind=kind,
            env=env,
            title=title or None,
            body=src.verbatim(node),
            provenance=Provenance(file=src.rel, line_start=start, line_end=end),
            parent=ctx.builder.stmt.index if ctx.builder is not None else None,
            in_parent_proof=ctx.builder is not None and ctx.in_proof,
        )
        self.statements.append(stmt)
        inner = _Ctx(_Builder(stmt), in_proof=False)
        if node.nodeargd is not None:
            self._walk([a for a in node.nodeargd.argnlist if a is not None], src, inner)
        self._walk(node.nodelist, src, inner)

    def _statement_of(self, label: str) -> Statement | None:
        site = self.labels.get(label.strip())
        if site is None or site.statement_index is None:
            return None
        return self.statements[site.statement_index]

    def _proof(self, node: LatexEnvironmentNode, src: _SourceFile, ctx: _Ctx) -> None:
        line = src.line(node.pos)
        target: Statement | None = None
        proves: str | None = None
        text = src.parsed[node.pos : node.pos + node.len]
        m = re.search(r"\\proves\s*\{([^{}]*)\}", text)
        if m:
            proves = m.group(1).strip()
            target = self._statement_of(proves)
            if target is None:
                self.warnings.append(f"{src.rel}:{line}: \\proves{{{proves}}} names no statement defined before it")
        if target is None:
            title = _arg_text(node, 0) or ""
            names = "|".join(["(?:c|C|auto|name)?ref"] + [re.escape(w) for w in self.ref_wrappers])
            for m in re.finditer(r"\\(?:" + names + r")\*?\s*\{([^{}]*)\}", title):
                target = next(filter(None, map(self._statement_of, m.group(1).split(","))), None)
                if target is not None:
                    break
        if target is None and self.statements:
            target = self.statements[-1]
            # a proof right after a nested claim's proof, at the outer level, is not the claim's
            while target.parent is not None and target.proof is not None and ctx.builder is None:
                target = self.statements[target.parent]
        if target is None:
            self.warnings.append(f"{src.rel}:{line}: proof with no statement before it; ignored")
            self._walk(node.nodelist, src, ctx)
            return
        prov = Provenance(file=src.rel, line_start=line, line_end=src.line(node.pos + node.len - 1))
        if target.proof is None:
            target.proof = ProofBlock(body=src.verbatim(node), provenance=prov, proves=proves)
        else:
            self.warnings.append(
                f"{src.rel}:{line}: second proof for {target.display} "
                f"(first at {target.proof.provenance}); its references count as proof references"
            )
        inner = _Ctx(_Builder(target, proof_seen=True), in_proof=True)
        self._walk(node.nodelist, src, inner)

    def _macro(self, node: LatexMacroNode, src: _SourceFile, ctx: _Ctx) -> None:
        name = node.macroname
        b = ctx.builder
        if name == "label":
            label = _arg_text(node, 0)
            if label:
                self._label(label, src, src.line(node.pos), b)
            return
        if name in REFERENCE_MACROS or name in self.ref_wrappers:
            line = src.line(node.pos)
            if name in self.ref_wrappers:
                indices = [self.ref_wrappers[name]]
            else:
                indices = [1, 2]  # after the star; crefrange has two labels
            for i in indices:
                text = _arg_text(node, i)
                if text:
                    self._reference(name, text, src, line, ctx)
            return
        if name == "proves":
            return
        if name == "lean":
            if b is not None:
                text = _arg_text(node, 0) or ""
                b.stmt.lean_names.extend(n.strip() for n in text.split(",") if n.strip())
            return
        if name == "leanok":
            if b is not None:
                if ctx.in_proof and b.stmt.proof is not None:
                    b.stmt.proof.leanok = True
                else:
                    b.stmt.leanok = True
            return
        if name == "mathlibok":
            if b is not None:
                b.stmt.mathlibok = True
            return
        if name in INCLUDE_MACROS:
            target = _last_arg_text(node)
            if target:
                path = self._resolve_include(target, src, src.line(node.pos), name)
                if path is not None:
                    self.read_file(path, ctx)
            return
        if name == "newtheorem":
            env = _arg_text(node, 1)
            display = _arg_text(node, 3)
            if env:
                self._declare(env, display)
            return
        if name == "declaretheorem":
            env = _arg_text(node, 1)
            opts = _arg_text(node, 0) or ""
            m = re.search(r"name\s*=\s*\{?([^,}\]]+)", opts)
            if env:
                self._declare(env, m.group(1) if m else env)
            return
        if name in TERM_MACROS and b is not None and b.stmt.kind == "definition" and not ctx.in_proof:
            text = _arg_text(node, 0)
            if text:
                term = _plain_term(text)
                if len(term) >= 3 and term not in b.stmt.defined_terms:
                    b.stmt.defined_terms.append(term)
        if node.nodeargd is not None:
            self._walk([a for a in node.nodeargd.argnlist if a is not None], src, ctx)

    def _reference(self, macro: str, text: str, src: _SourceFile, line: int, ctx: _Ctx) -> None:
        b = ctx.builder
        if b is None:
            return
        for label in text.split(","):
            label = label.strip()
            if label:
                b.stmt.references.append(
                    Reference(label=label, macro=macro, file=src.rel, line=line, in_proof=ctx.in_proof)
                )

    def _declare(self, env: str, display: str | None) -> None:
        words = _plain_term(display or env).split()
        kind = None
        for word in words + [env]:
            kind = KIND_ALIASES.get(word.lower())
            if kind:
                break
        self.theorem_envs[env] = kind or env.lower()

    def _label(self, label: str, src: _SourceFile, line: int, b: _Builder | None) -> None:
        if label in self.labels:
            first = self.labels[label]
            raise InputError(
                f"{src.rel}:{line}: label {label!r} is defined twice (first at {first.file}:{first.line})",
                hint="rename one of the labels",
            )
        index = b.stmt.index if b is not None else None
        self.labels[label] = LabelSite(label=label, file=src.rel, line=line, statement_index=index)
        if b is not None:
            b.stmt.labels.append(label)
            if b.stmt.label is None and not b.proof_seen:
                b.stmt.label = label


def read_tex(main: Path, *, source_root: Path | None = None, max_file_mib: float | None = None) -> Catalogue:
    """Read the TeX document whose main file is ``main`` (following its ``\\input`` tree).

    Provenance paths are relative to ``source_root`` (default: ``main``'s folder). Returns a
    ``Catalogue``; raises ``InputError`` as described in the module docstring.
    """
    main = main.resolve()
    root = (source_root or main.parent).resolve()
    reader = _TexReader(main, root)
    reader.max_file_mib = max_file_mib
    reader.read_file(main, _Ctx())
    return Catalogue(
        source_root=str(root),
        main_file=reader._rel(main),
        files=reader.files,
        statements=reader.statements,
        labels=reader.labels,
        warnings=reader.warnings,
        macros=list(dict.fromkeys(reader.macros)),
        theorem_envs=reader.theorem_envs,
    )
