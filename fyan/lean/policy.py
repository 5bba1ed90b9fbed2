"""What a compiled unit may contain: axioms, declarations and extension entries.

The completion gate decides from the trusted inspector's report (``fyan.lean.inspector``), never
from source text (DESIGN.md §3). This module holds the rules it applies to that report; it
imports nothing heavy, so the configuration can validate the allow-list with it.

* **Axioms** (``classify_axioms``): a declaration's transitive axioms must be in ``[lean]
  axiom_allowlist`` (default ``propext``, ``Classical.choice``, ``Quot.sound``). ``sorryAx``,
  ``Lean.ofReduceBool``, ``Lean.trustCompiler`` and any ``*._native.*`` axiom (``native_decide``,
  ``bv_decide``, ``decide +native``; ``shared/lean-samples/README.md``) are refused whatever the
  allow-list says, and the configuration refuses to list them (``refused_allowlist_entries``).
* **Declarations** (``declaration_findings``): a unit's modules may not declare axioms, ``unsafe``
  or ``partial`` definitions, ``opaque`` constants, or carry ``implemented_by``, ``extern`` or
  ``init`` (code that replaces the logic or runs at import).
* **Extension entries** (``extension_findings``): every attribute, syntax, elaborator, instance,
  ... a module registers is an entry of some environment extension. The gate admits an entry
  only when its extension is on the allow-list of harmless extensions (declaration ranges,
  documentation, namespaces, compiler caches, ``simp`` and similar lemma sets, structure and
  class information, equation lemmas): anything else — macros, syntax and notation, term,
  command and tactic elaborators, delaborators, ``csimp``, ``implemented_by``, ``extern``,
  ``init``, ``export``, simprocs, default instances, and every extension Fyan does not know —
  is refused (fail closed), with the extension's name. ``[lean] extension_allowlist`` admits
  more names for a project that needs them. Instances are admitted in units (a definition unit
  may define an instance of its own structure; a downstream statement that would depend on an
  instance no audit saw is caught by the frozen-statement check) and refused in SA-Pass
  candidates (``strict``), where nothing may change how a checker elaborates.
"""

from __future__ import annotations

import re

#: Axioms refused by name whatever the allow-list says (and never accepted in it).
REJECT_ALWAYS = {
    "sorryAx": "sorry: an unfinished proof",
    "Lean.ofReduceBool": "native_decide/compiler evaluation: trusts the compiler",
    "Lean.trustCompiler": "native_decide/compiler evaluation: trusts the compiler",
}
#: Axioms of Lean's core library (anything else is a user axiom).
CORE_AXIOMS = {"propext", "Classical.choice", "Quot.sound", "sorryAx", "Lean.ofReduceBool", "Lean.trustCompiler"}


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


#: Extensions whose entries never change how later code elaborates or what compiled code does
#: (exact names; older toolchains used short names such as ``declranges``).
HARMLESS_EXTENSIONS = frozenset({
    "Lean.declRangeExt", "declranges", "Lean.docStringExt", "docstring", "Lean.moduleDocExt", "moduleDoc",
    "Lean.versoDocStringExt", "Lean.versoModuleDocExt", "Lean.namespacesExt", "namespaces", "Lean.protectedExt",
    "protected", "Lean.privateExt", "Lean.noncomputableExt", "noncomputable", "Lean.aliasExtension", "aliasesExt",
    "Lean.reducibilityCoreExt", "Lean.reducibilityExtraExt", "Lean.reducibilityAttrs", "reducibility",
    "Lean.structureExt", "structExt", "Lean.classExtension", "classExt", "Lean.Meta.Match.Extension.extension",
    "Lean.Meta.matcherExt", "Lean.Meta.simpExtension", "simpExt", "Lean.Meta.sizeOfSpecLemmasExt",
    "Lean.Elab.Structural.eqnInfoExt", "Lean.Elab.WF.eqnInfoExt", "Lean.Elab.Eqns.eqnInfoExt", "Lean.Meta.eqnsExt",
    "Lean.Meta.eqn1ThmExt", "Lean.Meta.recursorAttribute", "Lean.Linter.deprecatedAttr", "Lean.Meta.Rfl.reflExt",
    "Lean.Meta.Symm.symmExt", "Lean.Meta.Trans.transExt", "Lean.Meta.extExtension", "Lean.Elab.Tactic.Ext.extExtension",
    "Lean.Meta.coeDeclAttr", "Lean.Meta.NormCast.normCastExt", "Lean.Meta.instanceExtension", "instanceExt",
    "Lean.Meta.globalInstanceExtension", "Lean.Elab.Command.derivingHandlersExt", "Lean.Meta.congrExtension",
    "Lean.Elab.Term.elabAsElim", "Lean.Meta.Simp.simpTheoremsExt",
})
#: Families of harmless extensions, by name prefix (compiler caches and IR of definitions).
HARMLESS_PREFIXES = ("Lean.Compiler.LCNF.", "Lean.IR.", "Lean.Compiler.")
#: Extensions of instances: admitted in units, refused in SA-Pass candidates (``strict``).
INSTANCE_EXTENSIONS = frozenset({"Lean.Meta.instanceExtension", "instanceExt", "Lean.Meta.globalInstanceExtension"})

#: Known kinds of dangerous entries (checked before the allow-list, for precise reasons).
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
    (r"(?i)builtin", "a builtin registration"),
    (r"(?i)attribute(Ext|Extension|MapRef)?$", "a new attribute"),
    (r"(?i)envExtension|persistentEnvExtensions", "a new environment extension"),
))


def extension_reason(name: str, *, strict: bool = False, extra_allow: frozenset[str] | set[str] = frozenset()) -> str | None:
    """Why entries of the extension ``name`` are refused, or None when they are admitted.
    ``strict``: also refuse instances (SA-Pass candidates)."""
    if name in extra_allow:
        return None
    if name in INSTANCE_EXTENSIONS:
        return "an instance (changes how checkers elaborate)" if strict else None
    if name in HARMLESS_EXTENSIONS:
        return None
    for pattern, why in _DANGEROUS:
        if pattern.search(name):
            return why
    if name.startswith(HARMLESS_PREFIXES):
        return None
    return "an extension Fyan does not know to be harmless (refused: fail closed)"


def extension_findings(extensions: list[tuple[str, int]], *, strict: bool = False,
                       extra_allow: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """One finding per refused extension: ``<name> (<n> entries): <why>``."""
    out = []
    for name, count in extensions:
        why = extension_reason(name, strict=strict, extra_allow=extra_allow)
        if why is not None:
            out.append(f"{name} ({count} entr{'y' if count == 1 else 'ies'}): {why}")
    return out


def declaration_findings(kind: str | None, safety: str, implemented_by: str | None, extern: bool, init: bool) -> list[str]:
    """Why a declaration may not be part of a unit's modules (empty: it may)."""
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
    return out
