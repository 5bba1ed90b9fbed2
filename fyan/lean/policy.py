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
* **Extension entries** (``extension_findings``): every attribute, syntax, elaborator, instance,
  ... a module registers is an entry of some environment extension, decided by its effect
  (``fyan.lean.extensions``: one row per extension). Bookkeeping is admitted; instances and
  unification hints face the ownership rule below; meaning-changing, syntax, meta-code and
  compiler-trusting extensions are refused; an extension no row classifies is refused unless the
  validated ``[lean] extension_allowlist`` names it. A refusal names the effect, the rule and what
  to do. Instances are refused in SA-Pass candidates (``strict``).
* **Meaning changed from another unit** (``foreign_meaning_findings``): instances and unification
  hints the unit does not own — decided from the keys Lean stored for them, outside the class's
  ``outParam`` positions — unless the plan declared them.
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


#: Extensions of instances: refused in SA-Pass candidates (``strict``) whatever the table says.
INSTANCE_EXTENSIONS = frozenset({"Lean.Meta.instanceExtension", "instanceExt", "Lean.Meta.globalInstanceExtension"})

#: Kinds of dangerous extensions, recognised by name. They say what an extension no row of the
#: policy table (``fyan.lean.extensions``) classifies probably does, and keep such a name out of
#: ``[lean] extension_allowlist`` (``refused_extension_allowlist_entries``); every one is checked
#: against the real extension names of Lean 4.35.0 (tests/test_extension_registry.py): each pattern
#: matches only extensions the table refuses.
_DANGEROUS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), why) for p, why in (
    (r"(?i)macro", "a macro (rewrites syntax before elaboration)"),
    (r"(?i)parser|(?<!deprecated)syntax|notation|token", "new syntax or notation"),
    (r"(?i)delab|unexpander|formatter|parenthesizer", "a pretty-printer extension (changes how terms read)"),
    (r"(?i)tacticElab|tacElab", "a tactic (meta-code)"),
    (r"(?i)elab(?!AsElim|WithoutExpectedType)", "an elaborator (runs meta-code while elaborating)"),
    (r"(?i)csimp", "@[csimp] (replaces compiled code)"),
    (r"(?i)implementedBy|implemented_by", "@[implemented_by] (replaces compiled code)"),
    (r"(?i)extern", "@[extern] (foreign code)"),
    (r"(?i)exportAttr", "@[export] (exported compiled symbol)"),
    (r"(?i)initattr|\binit\b", "@[init]/initialize (runs code when the module is imported)"),
    (r"(?i)simproc", "a simproc (meta-code run by simp)"),
    (r"(?i)defaultinstance", "a default instance (changes how later statements elaborate)"),
    (r"(?i)unif", "a unification hint (changes how later statements elaborate)"),
    (r"(?i)reducibilityExtra", "a reducibility change of a declaration of another module"),
    (r"(?i)builtin", "a builtin registration"),
    (r"(?i)^(?:Lean\.)?attributeExtension$|attributeMapRef", "a new attribute"),
    (r"(?i)envExtension|persistentEnvExtensions", "a new environment extension"),
))


def danger(name: str) -> str | None:
    """The kind of danger the name of an extension shows (``_DANGEROUS``), or None. Only the name's
    last component is read (with the one before it when the last is a short suffix such as ``up``):
    the namespace says where an extension lives (``Lean.Elab.…`` holds equation information too),
    not what it does."""
    parts = normalize_extension_name(name).split(".")
    tail = ".".join(parts[-2:]) if len(parts) > 1 and len(parts[-1]) <= 4 else parts[-1]
    return next((why for pattern, why in _DANGEROUS if pattern.search(tail)), None)


_LEAN_NAME = re.compile(r"^[^\s.*?\[\]]+(?:\.[^\s.*?\[\]]+)*$")


def refused_extension_allowlist_entries(entries: list[str]) -> list[str]:
    """The entries of ``[lean] extension_allowlist`` that may never be admitted, each with the reason:
    not an extension's name (empty, a pattern, blanks), an extension the policy table refuses
    (``fyan.lean.extensions``: meaning, syntax, meta-code, trusting the compiler), or an extension no
    row classifies whose name shows a dangerous kind (``danger``). An entry naming an extension the
    table admits anyway is accepted (it changes nothing)."""
    from fyan.lean.extensions import row

    bad = []
    for entry in entries:
        if not isinstance(entry, str) or not _LEAN_NAME.match(entry.strip()):
            bad.append(f"{entry!r} (not an extension's name: name one extension exactly, as the gate report prints it)")
            continue
        known = row(entry)
        if known is not None:
            if not known.effect.admitted:
                bad.append(f"{entry} ({known.effect.what}: refused by Fyan's policy whatever the allow-list says)")
            continue
        why = danger(entry)
        if why is not None:
            bad.append(f"{entry} ({why}: a dangerous kind is never admitted)")
    return bad


def extension_reason(name: str, *, strict: bool = False, allow: frozenset[str] | set[str] = frozenset()) -> str | None:
    """Why entries of the extension ``name`` are refused, or None when they are admitted.

    The policy table (``fyan.lean.extensions``) decides an extension it classifies: admitted by
    effect (bookkeeping; instances and unification hints then face the ownership rule of
    ``foreign_meaning_findings``), or refused naming the effect, the rule and what to do. With
    ``strict`` (SA-Pass candidates) instances are refused whatever the table says. An extension no
    row classifies is admitted only when ``allow`` (``[lean] extension_allowlist``, validated by
    ``refused_extension_allowlist_entries``) names it, raw or normalised
    (``normalize_extension_name``); otherwise it is refused, naming the module that registers it
    and how to admit it (fail closed)."""
    from fyan.lean.extensions import registering_module, row

    norm = normalize_extension_name(name)
    if strict and (name in INSTANCE_EXTENSIONS or norm in INSTANCE_EXTENSIONS):
        return ("effect: an instance, which changes how checkers elaborate; rule: no instance in an SA-Pass "
                "candidate; to do: prove the checker without declaring an instance")
    known = row(name)
    if known is not None:
        if known.effect.admitted:
            return None
        return (f"effect: {known.effect.what}; rule: refused by Fyan's policy by effect ({known.source}); "
                f"to do: {known.effect.remedy}")
    allowed = {normalize_extension_name(a) for a in allow}
    if name in allow or norm in allowed:
        return None
    kind = danger(name)
    return (f"effect: unknown{f' (its name suggests {kind})' if kind else ''}; rule: an extension no row of Fyan's "
            f"policy classifies is refused (fail closed); registered in {registering_module(name)}; to do: check "
            f"what its entries do there and, if they are bookkeeping, name it in [lean] extension_allowlist")


def extension_admissions(extensions: list[tuple[str, int]], allow: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The extensions of ``extensions`` admitted only because ``[lean] extension_allowlist`` names
    them (no row of the policy table classifies them), each as ``<name> (<n> entries): admitted by
    [lean] extension_allowlist``: what a gate report lists beside its findings."""
    from fyan.lean.extensions import row

    allowed = {normalize_extension_name(a) for a in allow}
    return [f"{name} ({count} entr{'y' if count == 1 else 'ies'}): admitted by [lean] extension_allowlist"
            for name, count in extensions
            if row(name) is None and (name in allow or normalize_extension_name(name) in allowed)]


def extension_findings(extensions: list[tuple[str, int]], *, strict: bool = False,
                       allow: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """One finding per refused extension: ``<name> (<n> entries): effect: …; rule: …; to do: …``."""
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


def key_arguments(keys: list[Any]) -> list[list[Any]] | None:
    """The stored keys of an instance (``StoredKey``s in pre-order, the class first) split into
    the class's arguments: one list of keys per argument, in order. None when the keys do not
    read as one tree rooted at a constant (fail closed: the caller refuses)."""
    if not keys or keys[0].kind != "const":
        return None

    def end(i: int) -> int:
        if i >= len(keys):
            raise IndexError
        j = i + 1
        for _ in range(keys[i].arity):
            j = end(j)
        return j

    try:
        args, j = [], 1
        for _ in range(keys[0].arity):
            k = end(j)
            args.append(list(keys[j:k]))
            j = k
    except (IndexError, RecursionError):
        return None
    return args if j == len(keys) else None


def foreign_meaning_findings(module_report: Any, own_prefix: str, declared: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Registrations of ``module_report`` (an ``InspectedModule``) that change how code of *other*
    units elaborates, decided from the keys Lean stored for them: an instance is the unit's when
    its class is own (a module under ``own_prefix``, the unit's namespace, e.g. ``Lib.ThmRoot``)
    or when an own constant survives in its stored keys outside the class's ``outParam``
    positions; a unification hint when an own constant is among its keys. Lean keys an instance
    after reducing its type (``reduceDT``: beta, ``let``, projections of constructors, matches on
    constructors, reducible definitions, own aliases included), so an own constant that reduction
    erases (``LE ((fun _ => Int) Tag.mk)``, ``LE (Ignore Int Tag)``) is not there; and instance
    search replaces an ``outParam`` argument by a metavariable, so an own type only there (``HAdd
    Int Int Tag``) does not keep the instance to the unit's terms. A function type is keyed by its
    domain alone (``arrow`` then the domain's keys), so an own type only in a codomain (``LE (Int →
    Tag)``) is not there either: its keys equal those of the foreign ``LE (Int → Ignore Int Tag)``
    (``Int → Int`` after reduction), and it is refused with the remedy of an own wrapper structure. ``declared`` names
    registrations the plan declared (by declaration name), which are admitted. Returns one finding
    per refused registration, naming the declaration, the effect, the foreign constants of the
    stored keys and what to do."""
    found = []
    for r in getattr(module_report, "registrations", []):
        if r.declaration in declared or r.kind == "reducible":
            continue
        keys = list(r.keys)
        if r.kind == "instance":
            args = key_arguments(keys)
            if args is None:
                found.append(f"{r.declaration}: an instance whose stored keys cannot be read ({len(keys)} keys): "
                             "refused (fail closed); declare it in the plan if intended")
                continue
            if _owned(keys[0].module, own_prefix):
                continue  # an instance of the unit's own class
            outs = set(r.out_params)
            subjects = [k for i, arg in enumerate(args) if i not in outs for k in arg if k.kind in ("const", "proj")]
        else:
            subjects = [k for k in keys if k.kind in ("const", "proj")]
        if any(_owned(k.module, own_prefix) for k in subjects):
            continue
        foreign = sorted({k.name for k in subjects} or {"(no constant)"})
        what = "a unification hint" if r.kind == "unification_hint" else "an instance"
        # Lean keys a function type by its domain alone (DiscrTree `.forallE _ d _ _ => (.arrow, [d])`):
        # an own codomain is not in the keys, which then cannot tell `Int → Tag` from the foreign
        # `Int → Ignore Int Tag` (reducing to `Int → Int`)
        arrow = any(k.kind == "arrow" for k in keys)
        todo = ("state it on an own structure wrapping the function (`structure F where f : α → Tag`; Lean keys a "
                "function type by its domain alone, so an own codomain does not make it the unit's)" if arrow else
                "state it on an own type")
        found.append(f"{r.declaration}: {what}{' (scoped)' if r.scoped else ''} about {', '.join(foreign[:6])}, which "
                     f"{own_prefix} does not own: it would change how other units' statements elaborate (effect: "
                     "meaning for later statements; rule: the unit must own a constant Lean keeps in the stored keys "
                     f"outside outParams; to do: {todo}, or declare it in the plan if intended)")
    return found
