"""Source lints on model-written Lean (defence in depth; never a substitute for the probe).

Each rule names a construct a proof file has no business containing, because it can hide a
gap from the kernel, run code at compile time, or change what a statement means
(``shared/lean-samples/README.md``, table of tricks). ``error`` findings fail the check that
runs the lint (the Planner's scaffold check, the Formalizer's check, the gate's
``source_lints``); ``warning`` findings are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fyan.lean.declarations import strip_comments

#: (rule id, severity, pattern on comment-free source, explanation)
RULES: tuple[tuple[str, str, str, str], ...] = (
    ("skip-kernel", "error", r"\bset_option\s+debug\.skipKernelTC\b", "turns off kernel type checking"),
    ("exit", "error", r"(?m)^\s*#exit\b", "stops elaboration: later declarations are never checked"),
    ("unsafe", "error", r"\bunsafe\b", "unsafe code is not checked by the kernel"),
    ("implemented-by", "error", r"@\[[^\]]*\bimplemented_by\b", "replaces compiled code by other code"),
    ("extern", "error", r"@\[[^\]]*\bextern\b", "binds to foreign code (FFI)"),
    ("csimp", "error", r"@\[[^\]]*\bcsimp\b", "replaces compiled code by other code"),
    ("opaque", "error", r"(?m)^\s*(?:@\[[^\]]*\]\s*)*(?:private\s+|protected\s+|noncomputable\s+)*opaque\b", "opaque constants hide their value"),
    ("axiom", "error", r"(?m)^\s*(?:@\[[^\]]*\]\s*)*(?:private\s+|protected\s+)*axiom\b", "declares an axiom"),
    ("eval", "error", r"(?m)^\s*#eval\b", "runs code (possibly IO) at compile time"),
    ("run-cmd", "error", r"(?m)^\s*(?:run_cmd|run_elab|run_meta)\b", "runs code at compile time"),
    ("initialize", "error", r"(?m)^\s*(?:builtin_)?initialize\b", "runs IO when the module is imported"),
    ("init-attr", "error", r"@\[[^\]]*\b(?:builtin_)?init\b", "runs IO when the module is imported"),
    ("meta-code", "error", r"(?m)^\s*(?:@\[[^\]]*\]\s*)*(?:local\s+|scoped\s+)?(?:elab|elab_rules|macro|macro_rules|syntax)\b", "defines new syntax or elaborators (compile-time code)"),
    ("auto-implicit", "error", r"\bset_option\s+(?:relaxedAutoImplicit|autoImplicit)\s+true\b", "lets a statement be generalised silently"),
    ("open-private", "error", r"\bopen\s+private\b", "reaches private declarations"),
    ("prelude", "error", r"(?m)^\s*prelude\b", "drops the standard prelude"),
    ("import", "error", r"(?m)^\s*import\b", "imports are written by Fyan, not by the model"),
    ("native-decide", "error", r"\bnative_decide\b|\bdecide\s*\+native\b", "trusts the compiler (Lean.ofReduceBool)"),
    ("notation", "warning", r"(?m)^\s*(?:local\s+|scoped\s+)?(?:notation|infix|infixl|infixr|prefix|postfix)\b", "new notation can change how a statement reads"),
    ("warn-sorry-off", "warning", r"\bset_option\s+warn\.sorry\s+false\b", "silences sorry warnings (the probe still sees sorryAx)"),
    ("sorry", "warning", r"\bsorry\b|\badmit\b", "an unfinished proof"),
)

_COMPILED = [(rule, sev, re.compile(pat), why) for rule, sev, pat, why in RULES]


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    line: int
    text: str
    why: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.rule} ({self.why}): {self.text}"


def lint(source: str, *, allow: frozenset[str] = frozenset()) -> list[Finding]:
    """Findings in ``source`` (comments ignored), except rules in ``allow``."""
    clean = strip_comments(source)
    findings: list[Finding] = []
    for rule, sev, pattern, why in _COMPILED:
        if rule in allow:
            continue
        for m in pattern.finditer(clean):
            line = clean.count("\n", 0, m.start()) + 1
            text = clean.splitlines()[line - 1].strip() if clean.splitlines() else ""
            findings.append(Finding(rule, sev, line, text[:120], why))
    findings.sort(key=lambda f: (f.line, f.rule))
    return findings


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]
