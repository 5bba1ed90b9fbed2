"""What a compiled unit may contain: axioms, declarations and extension entries.

The completion gate decides from the trusted inspector's report (``fyan.lean.inspector``), never
from source text. This module holds the rules it applies to that report; it
imports nothing heavy, so the configuration can validate the allow-list with it.

* **Axioms** (``classify_axioms``): a declaration's transitive axioms must be in ``[lean]
  axiom_allowlist`` (default ``propext``, ``Classical.choice``, ``Quot.sound``). ``sorryAx``,
  ``Lean.ofReduceBool``, ``Lean.trustCompiler`` and any ``*._native.*`` axiom (``native_decide``,
  ``bv_decide``, ``decide +native``; ``shared/lean-samples/README.md``) are refused whatever the
  allow-list says, and the configuration refuses to list them (``refused_allowlist_entries``).
* **Declarations** (``declaration_findings``): a unit's modules may not declare axioms, ``unsafe``
  or ``partial`` definitions, ``opaque`` constants, carry ``implemented_by``, ``extern`` or
  ``init`` (code that replaces the logic or runs at import), reach a kernel-evaluated constant
  (``KERNEL_EVALUATED``: ``Lean.reduceBool``/``Lean.reduceNat``, refused like
  ``Lean.ofReduceBool``), or reach a constant missing from the environment (fail closed).
* **Extension entries** (``extension_findings``): every attribute, syntax,
  elaborator, instance, ... a module registers is an entry of some environment extension. An
  extension is admitted only when an honest control of Fyan's writes it on this toolchain
  (learned by ``fyan selftest``: ``fyan.selftest.trust.learned_extensions``) or ``[lean]
  extension_allowlist`` names it, matched after normalising ``_private.<Module>.0.`` prefixes
  and before any danger pattern; everything else is refused (fail closed), named, with the
  danger pattern's reason where one matches (macros, syntax, elaborators, ``csimp``, ...).
  Instances are refused in SA-Pass candidates (``strict``) whatever was learned.
* **Meaning changed from another unit** (``foreign_meaning_findings``): instances
  and unification hints about constants the unit does not own (seen through its own reducible
  aliases), unless the plan declared them.
"""

from __future__ import annotations

import re
from typing import Any

#: Axioms refused by name whatever the allow-list says (and never accepted in it).
REJECT_ALWAYS = {
    "sorryAx": "sorry: an unfinished proof",
    "Lean.ofReduceBool": "native_decide/compiler evaluation: trusts the compiler",
    "Lean.trustCompiler": "native_decide/compiler evaluation: trusts the compiler",
    "Lean.ofReduceNat": "compiler evaluation (Lean.reduceNat): trusts the compiler",
}
#: Axioms of Lean's core library (anything else is a user axiom).
CORE_AXIOMS = {"propext", "Classical.choice", "Quot.sound", "sorryAx", "Lean.ofReduceBool", "Lean.ofReduceNat",
               "Lean.trustCompiler"}


def is_native_axiom(name: str) -> bool:
    """A per-proof axiom of ``native_decide``/``bv_decide`` (``<decl>._native.…``, Lean ≥ 4.29)."""
    return "._native." in name or name.startswith("_native.")


def refused_allowlist_entries(entries: list[str]) -> list[str]:
    """The entries of an axiom allow-list that can never be acceptable, each with the reason."""
    bad = []
    for a in entries:
        if a in REJECT_ALWAYS:
            bad.append(f"{a} ({REJECT_ALWAYS[a]})")
        elif is_native_axiom(a) or a.endswith("._native") or a in ("_native", "*._native.*"):
            bad.append(f"{a} (native_decide/bv_decide axiom: trusts the compiler)")
        elif "*" in a:
            bad.append(f"{a} (patterns are not allowed: name each axiom)")
    return bad


def classify_axioms(axioms: list[str], allow: list[str]) -> list[str]:
    """The axioms of ``axioms`` that the allow-list does not admit, each with the reason."""
    bad = []
    for a in axioms:
        if a in REJECT_ALWAYS:
            bad.append(f"{a} (rejected by name: {REJECT_ALWAYS[a]})")
        elif is_native_axiom(a):
            bad.append(f"{a} (rejected by name: native_decide/bv_decide axiom, trusts the compiler)")
        elif a in allow:
            continue
        elif a not in CORE_AXIOMS:
            bad.append(f"{a} (user axiom, not in the allow-list)")
        else:
            bad.append(f"{a} (not in the allow-list)")
    return bad


#: Constants the kernel evaluates with compiled code instead of by reduction: ``Lean.reduceBool`` and
#: ``Lean.reduceNat`` are opaques, not axioms (src/Init/Core.lean), and src/kernel/type_checker.cpp
#: ``reduce_native`` (Lean ≤ 4.34; gone in 4.35.0, whose library has no such code) runs the compiled
#: code of their argument and believes the result. A proof reaching them shows no axiom; the
#: inspector reports them as ``kernel_evaluated`` (reached transitively, like the axioms).
KERNEL_EVALUATED = {
    "Lean.reduceBool": "Lean.reduceBool: the kernel runs compiled code and believes it (like Lean.ofReduceBool)",
    "Lean.reduceNat": "Lean.reduceNat: the kernel runs compiled code and believes it (like Lean.ofReduceNat)",
}


def kernel_evaluated_findings(names: list[str] | tuple[str, ...], allow: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """One finding per kernel-evaluated constant reached (``KERNEL_EVALUATED``; any other name the
    inspector reports there too), unless ``allow`` (``[lean] kernel_allow``) names it."""
    return [f"reaches {KERNEL_EVALUATED.get(n, n + ': evaluated by the kernel with compiled code')} (refused)"
            for n in names if n not in allow]


_PRIVATE_PREFIX = re.compile(r"^_private\.(?:[^.]+\.)*?0\.")


def normalize_extension_name(name: str) -> str:
    """An extension's name without the ``_private.<Module>.0.`` prefix Lean gives a ``private``
    declaration (``_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt`` → ``Lean.modPkgExt``): the
    same extension is private in one Lean version and not in another."""
    return _PRIVATE_PREFIX.sub("", name, count=1)


#: Extensions of instances: refused in SA-Pass candidates (``strict``) whatever was learned.
INSTANCE_EXTENSIONS = frozenset({"Lean.Meta.instanceExtension", "instanceExt", "Lean.Meta.globalInstanceExtension"})

#: Known kinds of dangerous entries, for a precise reason when an extension no honest control
#: writes is refused (every unlearned extension is refused; these only say why).
_DANGEROUS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), why) for p, why in (
    (r"(?i)macro", "a macro (rewrites syntax before elaboration)"),
    (r"(?i)parser|syntax|notation|token", "new syntax or notation"),
    (r"(?i)delab|unexpander|formatter|parenthesizer", "a pretty-printer extension (changes how terms read)"),
    (r"(?i)tactic", "a tactic (meta-code)"),
    (r"(?i)elab(?!AsElim)", "an elaborator (runs meta-code while elaborating)"),
    (r"(?i)csimp", "@[csimp] (replaces compiled code)"),
    (r"(?i)implementedBy|implemented_by", "@[implemented_by] (replaces compiled code)"),
    (r"(?i)extern", "@[extern] (foreign code)"),
    (r"(?i)export", "@[export] (exported compiled symbol)"),
    (r"(?i)initattr|\binit\b", "@[init]/initialize (runs code when the module is imported)"),
    (r"(?i)simproc", "a simproc (meta-code run by simp)"),
    (r"(?i)defaultinstance", "a default instance (changes how later statements elaborate)"),
    (r"(?i)unif", "a unification hint (changes how later statements elaborate)"),
    (r"(?i)reducibilityExtra", "a reducibility change of a declaration of another module"),
    (r"(?i)builtin", "a builtin registration"),
    (r"(?i)attribute(Ext|Extension|MapRef)?$", "a new attribute"),
    (r"(?i)envExtension|persistentEnvExtensions", "a new environment extension"),
))

UNLEARNED = ("an extension no honest control writes on this toolchain (refused: fail closed; `fyan selftest` "
             "learns the extensions honest modules write, [lean] extension_allowlist adds more)")


def extension_reason(name: str, *, strict: bool = False, allow: frozenset[str] | set[str] = frozenset()) -> str | None:
    """Why entries of the extension ``name`` are refused, or None when they are admitted.

    Order: with ``strict`` (SA-Pass candidates) instances are refused first; then
    ``name`` is admitted when it, or its normalised form (``normalize_extension_name``), is in
    ``allow`` (the extensions ``fyan selftest`` learned from Fyan's honest controls on this
    toolchain, plus ``[lean] extension_allowlist``) — before any danger pattern, so Lean's
    ``exportedAxiomsExt`` is not taken for ``@[export]``; anything else is refused, with the danger
    pattern's reason when one matches."""
    norm = normalize_extension_name(name)
    if strict and (name in INSTANCE_EXTENSIONS or norm in INSTANCE_EXTENSIONS):
        return "an instance (changes how checkers elaborate)"
    allowed = {normalize_extension_name(a) for a in allow}
    if name in allow or norm in allowed:
        return None
    for pattern, why in _DANGEROUS:
        if pattern.search(norm):
            return f"{why}; {UNLEARNED}"
    return UNLEARNED


def extension_findings(extensions: list[tuple[str, int]], *, strict: bool = False,
                       allow: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """One finding per refused extension: ``<name> (<n> entries): <why>``."""
    out = []
    for name, count in extensions:
        why = extension_reason(name, strict=strict, allow=allow)
        if why is not None:
            out.append(f"{name} ({count} entr{'y' if count == 1 else 'ies'}): {why}")
    return out


def declaration_findings(kind: str | None, safety: str | None, implemented_by: str | None, extern: bool, init: bool, *,
                         kernel_evaluated: list[str] | tuple[str, ...] = (),
                         missing: list[str] | tuple[str, ...] = (),
                         kernel_allow: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Why a declaration may not be part of a unit's modules (empty: it may). ``missing``: constants
    it reaches that are not in the environment (fail closed: a missing constant adds no axioms, so it must not count as clean)."""
    out = []
    if kind == "axiom":
        out.append("declares an axiom")
    if kind == "opaque":
        out.append("an opaque constant (hides its value from the kernel)")
    if safety == "unsafe":
        out.append("unsafe (not checked by the kernel)")
    if safety == "partial":
        out.append("partial (its logical value is opaque)")
    if implemented_by:
        out.append(f"@[implemented_by {implemented_by}] (compiled code replaced)")
    if extern:
        out.append("@[extern] (foreign code)")
    if init:
        out.append("@[init]/initialize (runs code when the module is imported)")
    out += kernel_evaluated_findings(kernel_evaluated, kernel_allow)
    if missing:
        out.append(f"refers to {', '.join(missing[:5])}, not in the inspected environment (refused: fail closed)")
    return out


# -- meaning changed from another unit -------------------------------------------

def _owned(module: str, own_prefix: str) -> bool:
    return bool(module) and (module == own_prefix or module.startswith(own_prefix + "."))


def foreign_meaning_findings(module_report: Any, own_prefix: str, declared: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Registrations of ``module_report`` (an ``InspectedModule``) that change how code of *other*
    units elaborates: an instance or unification hint none of whose subjects the unit owns, or a
    ``@[reducible]`` declaration whose value unfolds only to constants of other units used by
    such an instance. The unit owns the constants of modules under ``own_prefix`` (its module's
    namespace, e.g. ``Lib.ThmRoot``); ``declared`` names registrations the plan declared (by
    declaration name), which are admitted.

    An instance is about the constants of its type's conclusion after the class (the first one,
    ``Registration.about``); an own reducible alias counts as the constants it unfolds to (through
    every alias of a chain; the class too: ``abbrev MyLE := LE`` names ``LE``), so ``abbrev MyInt
    := Int`` with ``instance : LE MyInt`` is an instance on ``Int``. An instance is the unit's when
    one of its constants is own — but when an own alias was unfolded, only when all of them are:
    an alias may erase an argument (``abbrev Ignore (α _ : Type) := α`` makes ``Add (Ignore Int
    Tag)`` an ``Add Int`` instance), and the report names constants, not the key Lean stores. A unification
    hint is about the constants of its value. Returns one finding per refused registration,
    naming the declaration and the foreign constants."""
    regs = list(getattr(module_report, "registrations", []))
    aliases = {r.declaration: [a for a in r.about if a.name != r.declaration]
               for r in regs if r.kind == "reducible" and _owned(r.module, own_prefix)}

    def subjects(about: list[Any]) -> tuple[list[Any], bool]:
        # every own alias unfolded, however long the chain (instance search unfolds it all): an
        # alias is never a subject itself; one met again (only a forged report has a cycle) adds
        # nothing. Also says whether an alias was unfolded: then which of the other constants
        # survive reduction is unknown (`abbrev Ignore (α _ : Type) := α` erases its second
        # argument; Lean keys an instance after unfolding, src/Lean/Meta/DiscrTree.lean `reduceDT`)
        out: list[Any] = []
        seen: set[str] = set()
        todo = list(about)
        while todo:
            a = todo.pop(0)
            if a.name in aliases:
                if a.name not in seen:
                    seen.add(a.name)
                    todo += aliases[a.name]
            else:
                out.append(a)
        return out, bool(seen)

    found = []
    for r in regs:
        if r.declaration in declared or r.kind == "reducible":
            continue
        about = list(r.about)
        if r.kind == "instance" and about:
            cls, about = about[0], about[1:]
            # an own alias of a foreign class (`abbrev MyLE := LE`) is that class: Lean unfolds
            # abbreviations to find an instance's class (src/Lean/Meta/Basic.lean `isClassApp?`)
            if any(_owned(c.module, own_prefix) for c in subjects([cls])[0]):
                continue  # an instance of the unit's own class
        subj, unfolded = subjects(about)
        owned = [_owned(a.module, own_prefix) for a in subj]
        # through an own alias, only an instance wholly about own constants is known to stay the
        # unit's after reduction (the report lists constants, not the key Lean stores); without
        # one, an own constant anywhere in the type keeps the instance to the unit's own terms
        if (all(owned) if unfolded else any(owned)) and subj:
            continue
        foreign = sorted({a.name for a, own in zip(subj, owned) if a.module and not own} or {"(no constant)"})
        what = "a unification hint" if r.kind == "unification_hint" else "an instance"
        found.append(f"{r.declaration}: {what}{' (scoped)' if r.scoped else ''} about {', '.join(foreign[:6])}, which "
                     f"{own_prefix} does not own: it would change how other units' statements elaborate (declare it in "
                     "the plan if intended)")
    return found
