"""Source lints on model-written Lean: fast feedback and a second line, never the evidence.

The completion gate decides from the compiled environment through the trusted inspector
(``fyan.lean.inspector``, ``fyan.lean.policy``). These lints run before anything is compiled:
they give the Formalizer precise feedback (the line of the construct itself), keep code that
would run at compile time from ever being compiled (a candidate a lint rejects is not built),
and catch what leaves no trace in the environment (``#eval``, ``run_cmd``: compile-time code).

Each rule names a construct a proof file has no business containing, because it can hide a gap
from the kernel, run code at compile time, or change what a statement means
(``shared/lean-samples/README.md``, table of tricks). The rules are written against the ways
text can hide a construct, as families, not examples:

* **position** — every rule matches the construct's token *anywhere*, not at the start of a
  line, so a prefix (``open X in``, ``set_option … in``, ``@[…]``, modifiers, another command
  on the same line) does not hide it; the reported line is the token's own line;
* **spelling** — ``«»``-quoted name components are read without their quotes
  (``debug.«skipKernelTC»``, ``«autoImplicit»``), and option names are matched as tokens;
* **attributes** — attribute lists are parsed in both forms, ``@[a, b c]`` and
  ``attribute [a] f`` (``local``/``scoped`` included), and every attribute that runs or
  replaces code or changes elaboration is refused (``macro``, ``term_elab``,
  ``command_elab``, ``tactic``, ``csimp``, ``implemented_by``, ``extern``, ``init``, ...);
* **literals** — comments are found exactly as Lean finds them (``declarations.lex``): string
  and character literals (``'"'``, ``'\\\\''``), raw strings and ``«»`` names never start a comment;
  literal forms whose reading depends on context (raw strings, strings with braces) are
  refused rather than guessed;
* **meta-programming** — any use of the APIs that build or change declarations (``addDecl``,
  ``Lean.Elab``, ``MetaM``, ...), IO, ``run_tac``/``run_cmd``/``#eval``/``#guard`` and every
  ``#``-command outside a short allow-list of ones that only print (a library's ``#html`` may
  evaluate code), and compiler trust (``native_decide``, ``decide +native``,
  ``(config := {native := true})``, ``bv_decide``).

``error`` findings fail the check that runs the lint (the Planner's scaffold check, the
Formalizer's check, the gate's ``source_lints``); ``warning`` findings are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fyan.lean.declarations import lex

#: (rule id, severity, pattern on the comment-free text with «» quotes removed, explanation)
RULES: tuple[tuple[str, str, str, str], ...] = (
    ("skip-kernel", "error", r"\bskipKernelTC\b", "turns off kernel type checking"),
    ("exit", "error", r"#exit\b", "stops elaboration: later declarations are never checked"),
    ("unsafe", "error", r"(?<![\w.'])unsafe(?![\w'])", "unsafe code is not checked by the kernel"),
    ("partial", "error", r"(?<![\w.'])partial(?![\w'])", "partial definitions are opaque to the kernel"),
    ("opaque", "error", r"(?<![\w.'])opaque(?![\w'])", "opaque constants hide their value"),
    ("axiom", "error", r"(?<![\w.'])axiom(?![\w'])", "declares an axiom"),
    ("eval", "error", r"#(?:eval|guard)(?![\w_])|#eval!", "runs code (possibly IO) at compile time"),
    ("run-cmd", "error", r"(?<![\w.'])(?:run_cmd|run_elab|run_meta|run_tac|by_elab)(?![\w'])",
     "runs meta-code at compile time (it can add declarations without kernel checking)"),
    ("initialize", "error", r"(?<![\w.'])(?:builtin_)?initialize(?![\w'])", "runs IO when the module is imported"),
    ("meta-code", "error",
     r"(?<![\w.'])(?:elab|elab_rules|macro|macro_rules|syntax|declare_syntax_cat|simproc|dsimproc|"
     r"builtin_simproc|declare_simp_like_tactic)(?![\w'])",
     "defines new syntax, elaborators or simprocs (compile-time code)"),
    ("notation", "error", r"(?<![\w.'])(?:notation3?|infix|infixl|infixr|prefix|postfix)(?![\w'])",
     "new notation can change how a statement reads"),
    ("io", "error", r"(?<![\w'])(?:IO\.|unsafeIO|unsafeBaseIO|unsafeEIO)|(?<![\w.'])(?:EIO|BaseIO|IO)(?![\w'])",
     "IO in a proof file: code with effects"),
    ("meta-api", "error",
     r"(?<![\w'])(?:addDecl|addAndCompile|addDeclWithoutChecking|addDeclCore|modifyEnv|setEnv|unsafeCast|"
     r"evalExpr|evalConst|liftCoreM|liftTermElabM|liftMetaM|CoreM|MetaM|TermElabM|CommandElabM|TacticM|"
     r"CommandElab|TermElab|MacroM|Macro|"
     r"Lean\.Elab|Lean\.Meta|Lean\.Environment|Lean\.Kernel|Lean\.Compiler|Elab\.Command|Elab\.Tactic|"
     r"ofReduceBool|trustCompiler)(?![\w'])",
     "meta-programming API: code that builds or changes declarations"),
    ("auto-implicit", "error", r"(?<![\w'])(?:relaxedAutoImplicit|autoImplicit)(?![\w'])",
     "lets a statement be generalised silently"),
    ("open-private", "error", r"(?<![\w.'])open\s+private(?![\w'])", "reaches private declarations"),
    ("prelude", "error", r"(?<![\w.'])prelude(?![\w'])", "drops the standard prelude"),
    ("import", "error", r"(?<![\w.'])import(?![\w'])", "imports are written by Fyan, not by the model"),
    ("native-decide", "error",
     r"(?<![\w.'])(?:native_decide|bv_decide|bv_check)(?![\w'])|\+\s*native(?![\w'])|"
     r"(?<![\w.'])native\s*:=(?!\s*(?:\(\s*)*(?:_root_\.)?(?:Bool\.)?false(?![\w']))|"
     r"(?<![\w.'])(?:Lean\.Parser\.Tactic\.)?DecideConfig(?![\w'])",
     "trusts the compiler (Lean.ofReduceBool, *._native.* axioms)"),
    ("warn-sorry-off", "error", r"(?<![\w'])warn\.sorry(?![\w'])", "silences sorry warnings"),
    ("sorry", "warning", r"(?<![\w.'])(?:_root_\.)?(?:sorry|admit|sorryAx)(?![\w'])", "an unfinished proof"),
)

#: Attributes that run or replace code, or change how later code elaborates.
FORBIDDEN_ATTRIBUTES = {
    "implemented_by": "replaces compiled code by other code",
    "extern": "binds to foreign code (FFI)",
    "csimp": "replaces compiled code by other code",
    "init": "runs IO when the module is imported",
    "builtin_init": "runs IO when the module is imported",
    "export": "exports compiled code under a C name",
    "macro": "a macro: rewrites syntax before elaboration",
    "term_elab": "a term elaborator (meta-code)",
    "command_elab": "a command elaborator (meta-code)",
    "tactic": "a tactic elaborator (meta-code)",
    "delab": "a delaborator (changes how terms read)",
    "app_delab": "a delaborator (changes how terms read)",
    "app_unexpander": "an unexpander (changes how terms read)",
    "simproc": "a simproc (meta-code)",
    "default_instance": "a default instance (changes how later statements elaborate)",
    "command_parser": "a parser", "term_parser": "a parser", "tactic_parser": "a parser",
    "combinator_formatter": "a formatter", "combinator_parenthesizer": "a parenthesizer",
    "run_builtin_parser_attribute_hooks": "parser hooks", "builtin_doc": "builtin registration",
    "env_linter": "a linter (meta-code)",
}

#: ``#``-commands a proof file may use (they only print); any other (``#eval``, ``#guard``,
#: Mathlib's ``#html``, a library's own) may run code at compile time and is refused.
HARMLESS_HASH_COMMANDS = frozenset({"check", "print", "reduce", "synth", "help", "find", "guard_msgs", "check_failure",
                                    "where", "version", "exit"})

_COMPILED = [(rule, sev, re.compile(pat), why) for rule, sev, pat, why in RULES]
_HASH_COMMAND = re.compile(r"(?<![\w.'#])#([A-Za-z_][\w!?]*)")
_GUILLEMETS = re.compile(r"«([^»\n]*)»")
_ATTR_START = re.compile(r"@\[|(?<![\w.'])attribute\s*\[")


#: Constants and namespaces a proof file has no business reaching, by their full names (a name and
#: everything under it), with the rule that reports them. Resolved as Lean resolves identifiers
#: (``resolved_names``), so no spelling (``_root_.IO``, ``open IO in``, ``open Lean renaming``,
#: ``export``, ``namespace Lean``) hides them.
FORBIDDEN_NAMES: dict[str, tuple[str, str]] = {
    **{n: ("io", "IO in a proof file: code with effects") for n in ("IO", "EIO", "BaseIO", "unsafeIO", "unsafeBaseIO",
                                                                   "unsafeEIO", "unsafeCast")},
    **{n: ("meta-api", "meta-programming API: code that builds or changes declarations")
       for n in ("Lean.Elab", "Lean.Meta", "Lean.Environment", "Lean.Kernel", "Lean.Compiler", "Lean.Core",
                 "Lean.Parser", "Lean.Macro", "Lean.MacroM", "Lean.addDecl", "Lean.addAndCompile", "Lean.modifyEnv",
                 "Lean.setEnv", "Lean.evalConst")},
    **{n: ("kernel-evaluated", "the kernel runs compiled code and believes it (Lean.reduceBool/reduceNat, "
                               "Lean.ofReduceBool, Lean.trustCompiler)")
       for n in ("Lean.reduceBool", "Lean.reduceNat", "Lean.ofReduceBool", "Lean.ofReduceNat", "Lean.trustCompiler")},
}

_IDENT = re.compile(r"(?<![\w'.!?])(?:[^\W\d][\w'!?]*)(?:\.[^\W\d][\w'!?]*)*")
#: ``open``/``export``/``namespace`` and the namespaces they name (``open A B in``, ``open A (x)``,
#: ``open A renaming x → y``, ``open A hiding x``, ``open scoped A``, ``export A (x)``)
_SCOPE = re.compile(r"(?<![\w.'])(open|export|namespace)[ \t]+((?:[^\W\d][\w'!?.]*[ \t]*)+)")


def _root(name: str) -> str:
    return name[len("_root_."):] if name.startswith("_root_.") else name


def resolved_names(text: str) -> list[tuple[int, str, set[str]]]:
    """(offset, identifier, the full names Lean could resolve it to) for every identifier of the
    comment-free ``text``: the name itself without ``_root_.``, and the name under every namespace
    the file opens, exports or enters anywhere (``open … in`` included; src/Lean/ResolveName.lean
    ``resolveGlobalName``: the current namespace's prefixes and every ``OpenDecl``). Over-approximates
    on purpose (an ``open`` counts for the whole file): a lint may refuse too much, never too little."""
    scopes: set[str] = set()
    for m in _SCOPE.finditer(text):
        words = m.group(2).split()
        kind = m.group(1)
        for w in words:
            if w in ("in", "renaming", "hiding"):
                break
            if w in ("scoped", "private"):
                continue
            w = _root(w.rstrip("."))
            if kind == "namespace":
                parts = w.split(".")
                scopes |= {".".join(parts[: i + 1]) for i in range(len(parts))}
            else:
                scopes |= {w} | {f"{s}.{w}" for s in list(scopes)}
    out = []
    for m in _IDENT.finditer(text):
        name = _root(m.group(0))
        out.append((m.start(), m.group(0), {name} | {f"{s}.{name}" for s in scopes}))
    return out


def _forbidden(names: set[str]) -> tuple[str, str, str] | None:
    for n in sorted(names):
        parts = n.split(".")
        for i in range(len(parts), 0, -1):
            hit = FORBIDDEN_NAMES.get(".".join(parts[:i]))
            if hit:
                return ".".join(parts[:i]), *hit
    return None


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    line: int
    text: str
    why: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.rule} ({self.why}): {self.text}"


def _attribute_names(text: str) -> list[tuple[int, str]]:
    """(offset, attribute name) of every attribute in ``@[…]`` and ``attribute […]`` lists."""
    found = []
    for m in _ATTR_START.finditer(text):
        start = m.end()
        depth, j = 1, start
        while j < len(text) and depth:
            if text[j] in "[(":
                depth += 1
            elif text[j] in "])":
                depth -= 1
            j += 1
        body = text[start : j - 1]
        depth, item_start = 0, 0
        items = []
        for k, ch in enumerate(body + ","):
            if ch in "[({":
                depth += 1
            elif ch in "])}":
                depth -= 1
            elif ch == "," and depth == 0:
                items.append((item_start, body[item_start:k]))
                item_start = k + 1
        for off, item in items:
            words = item.split()
            while words and words[0] in ("local", "scoped", "-"):
                words = words[1:]
            if words:
                name = words[0].lstrip("-")
                found.append((start + off + max(0, item.find(name)), name))
    return found


def lint(source: str, *, allow: frozenset[str] = frozenset()) -> list[Finding]:
    """Findings in ``source`` (comments ignored), except rules in ``allow``. Rule
    ``unreadable-literal`` reports literals Lean could read differently (``declarations.lex``)."""
    lexed = lex(source)
    # «» quotes removed: line breaks never occur inside them, so line numbers do not move
    clean = _GUILLEMETS.sub(lambda m: m.group(1), lexed.code)
    lines = clean.splitlines() or [""]
    findings: list[Finding] = []

    def add(rule: str, sev: str, offset: int, why: str, text_src: str) -> None:
        line = text_src.count("\n", 0, offset) + 1
        text = lines[line - 1].strip() if line <= len(lines) else ""
        findings.append(Finding(rule, sev, line, text[:120], why))

    for rule, sev, pattern, why in _COMPILED:
        if rule in allow:
            continue
        for m in pattern.finditer(clean):
            add(rule, sev, m.start(), why, clean)
    seen = {(f.rule, f.line) for f in findings}
    for offset, ident, names in resolved_names(clean):
        # under an opened forbidden namespace (`open IO`) the `open` itself is reported, not every name
        own = _root(ident)
        hit = _forbidden({n for n in names if n == own or _forbidden({n[: -len(own) - 1]}) is None})
        if hit is None or hit[1] in allow:
            continue
        full, rule, why = hit
        line = clean.count("\n", 0, offset) + 1
        if (rule, line) not in seen:
            seen.add((rule, line))
            add(rule, "error", offset, f"{why}: `{ident}` resolves to {full}", clean)
    if "hash-command" not in allow:
        for m in _HASH_COMMAND.finditer(clean):
            if m.group(1) not in HARMLESS_HASH_COMMANDS and m.group(1).rstrip("!") not in ("eval", "guard"):
                add("hash-command", "error", m.start(), f"#{m.group(1)}: a command Fyan does not know to be harmless "
                    "(it may run code at compile time)", clean)
    if "attribute" not in allow:
        for offset, name in _attribute_names(clean):
            if name in FORBIDDEN_ATTRIBUTES:
                add("attribute", "error", offset, f"@[{name}]: {FORBIDDEN_ATTRIBUTES[name]}", clean)
    if "unreadable-literal" not in allow:
        for offset, what in lexed.problems:
            add("unreadable-literal", "error", offset,
                f"{what}: Fyan's checks cannot read it as Lean would (proofs need no such literal)", lexed.code)
    findings.sort(key=lambda f: (f.line, f.rule))
    return findings


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]
