"""Test double of Fyan's trusted inspector (``lake-template/inspector/FyanInspector.lean``).

No Lean toolchain runs in CI, so the real inspector cannot be built here. The Lake double
(``tests/fakes/fake_lake.py``) "builds" this script in its place (``lake build fyan-inspector``
writes a shim that runs it) and "compiles" a module by copying its source into a stand-in
``.olean`` (JSON) under ``.lake/build/lib/lean``. This double stands in for the inspector at its
process boundary: same arguments (``--out``, ``--nonce``, ``--module``, ``--name``, ``--import``,
``--black-box``, ``--search-path``, ``--local-prefix``, ``--declarations``: ``write_declarations``), same JSON report (format
``fyan-inspector/3``, every field of the strict schema, the nonce echoed), read from the *built* stand-ins — never from the current sources — so a
stale or planted output is what it reports, as the real one would.

What it emulates from the built source (``fyan.lean.declarations.scan``; everything after an
``#exit`` is not in the environment):

* every declaration: kind (``theorem``/``lemma`` → theorem, ``def``/``abbrev``/``instance`` →
  def, ``structure``/``class``/``inductive`` → inductive, ``axiom``, ``opaque``), module,
  ``type_repr`` = the normalized header, ``value_repr`` = a definition's body, safety from
  ``unsafe``/``partial``, ``implemented_by``/``extern``/``init`` from attributes (both forms);
* **any** ``sorry``/``admit``/``sorryAx`` in a declaration is ``sorryAx`` (``sorry_direct`` and its
  axioms), ``native_decide``/``decide +native``/``native := true`` (any spelling of ``true``, as Lean
  elaborates it: ``(true)``, ``Bool.true``, comments between) adds
  ``<decl>._native.native_decide.ax_1_1``, an ``axiom`` is its own axiom; axioms are
  transitive through the declarations a declaration mentions (by name);
* kernel-evaluated constants: a declaration mentioning ``Lean.reduceBool``/``Lean.reduceNat`` (or
  ``reduceBool``/``reduceNat``) reaches them, transitively like the axioms;
* extension entries: the names real Lean 4.35.0 writes for honest modules (``HONEST_EXTENSIONS``:
  read from ``.olean`` files the real core ``lean`` wrote, ``tests/test_lean_contract.py``) —
  ``modPkgExt``, ``deprecatedModuleExt``, ``exportedAxiomsExt``, declaration ranges, namespaces,
  module docs, docstrings, ``reducibilityCore``, inductive/structure/class/instance/``simp``
  entries, the compiler's LCNF/IR caches, the linter log for a declaration with an unused
  variable — and, for the tricks, macros, syntax/notation, elaborators, ``csimp``,
  ``implemented_by``, ``extern``, ``init`` (``local`` ones are not exported, as in Lean);
* registrations: every ``instance`` (about its class and the constants after it) and every
  ``abbrev``/``@[reducible]`` declaration (about the constants of its value); a constant that is
  not a declaration of the loaded modules is taken to be the library's (module ``Init``);
* imports: ``Init`` (unless the header says ``prelude``) and the header's imports, read as Lean
  reads a header (``fyan.lean.header``);
* looked-up names: the same fields, the workspace declarations the statement mentions
  (``constants``, with the names mentioned in their own types as ``conclusion``) and, under
  ``--local-prefix``, transitively (``local_constants``); library names listed in the scenario's
  ``constants`` are found in module ``Init``; with ``--follow-references``, ``references`` as
  ``packageReferences`` computes it (the declarations of the ``--import`` modules reachable
  through what each declaration's source mentions, statement and proof).

A stand-in written by the SA-Pass compile double (``fake_lean_env.py``) carries a recorded
``inspection`` that is returned as is. Scenario overrides (``FYAN_FAKE_SCENARIO``):
``inspect`` ({decl: fields}), ``inspect_by_module`` ({module: {decl: fields}}, applied when that
module is inspected with ``--module``), ``inspect_module`` ({module: {"extensions": [...],
"imports": [...]}}), ``inspector_output`` (raw text written as the report; ``@NONCE@`` is replaced by the run's nonce),
``inspector_process`` ({"exit": n, "sleep": s, "signal": n; "times": n: only the first n runs}),
``inspector_nonce`` (echo this nonce instead of the one passed).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fyan.lean.declarations import scan, strip_comments  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_lake import LEAN_VERSION  # noqa: E402  (the double's one toolchain version)
from fyan.lean.header import read_header  # noqa: E402

from tests.fakes import fake_architect, instance_keys  # noqa: E402
from tests.fakes.fake_lake import limited  # noqa: E402  (the same run counter as the lean double)

KIND = {"theorem": "theorem", "def": "def", "abbrev": "def", "instance": "def", "opaque": "opaque",
        "axiom": "axiom", "structure": "inductive", "inductive": "inductive", "class": "inductive"}
_SORRY = re.compile(r"(?<![\w.'])(?:sorry|admit|sorryAx)(?![\w'])")
#: `decide`'s `native` option set (Lean elaborates every spelling of `true` alike: parenthesised,
#: `Bool.true`, `_root_.Bool.true`, comments around it, which `strip_comments` removes first)
_NATIVE = re.compile(r"native_decide|decide\s*\+\s*native|"
                     r"native\s*:=\s*(?:\(\s*)*(?:_root_\.)?(?:Bool\.)?true(?![\w'])")
_KERNEL_EVALUATED = {"Lean.reduceBool": re.compile(r"(?<![\w'])(?:Lean\.)?reduceBool(?![\w'])"),
                     "Lean.reduceNat": re.compile(r"(?<![\w'])(?:Lean\.)?reduceNat(?![\w'])")}


def scenario() -> dict:
    path = os.environ.get("FYAN_FAKE_SCENARIO")
    return json.loads(Path(path).read_text()) if path else {}


def parse(argv: list[str]) -> dict:
    opts: dict = {"modules": [], "names": [], "imports": [], "black_box": [], "search_path": [], "local_prefix": "",
                  "out": None, "nonce": "", "follow_references": False, "declarations": None}
    keys = {"--module": "modules", "--name": "names", "--import": "imports", "--black-box": "black_box",
            "--search-path": "search_path"}
    i = 0
    while i < len(argv):
        flag, value = argv[i], argv[i + 1] if i + 1 < len(argv) else None
        if flag == "--follow-references":  # a flag without a value (FyanInspector.lean parseArgs)
            opts["follow_references"] = True
            i += 1
            continue
        if value is None:
            raise SystemExit(f"fake inspector: incomplete argument {flag}")
        if flag in keys:
            opts[keys[flag]].append(value)
        elif flag == "--local-prefix":
            opts["local_prefix"] = value
        elif flag == "--out":
            opts["out"] = value
        elif flag == "--nonce":
            opts["nonce"] = value
        elif flag == "--declarations":
            opts["declarations"] = value
        else:
            raise SystemExit(f"fake inspector: unknown argument {flag}")
        i += 2
    return opts


def required_build_dirs() -> list[str]:
    """Build folders of the packages ``lakefile.toml`` requires by ``path``: ``lake env`` puts them
    on the search path, as for the real inspector."""
    try:
        import tomllib

        data = tomllib.loads(Path("lakefile.toml").read_text())
    except (OSError, ValueError):
        return []
    return [str(Path(r["path"]) / ".lake/build/lib/lean") for r in data.get("require", [])
            if isinstance(r, dict) and r.get("path")]


def find_olean(module: str, search_path: list[str]) -> Path | None:
    """``--search-path`` folders, then ``LEAN_PATH`` (as ``initSearchPath`` orders them; set by
    the gate, or by ``lake env``), then — for a run with neither — the package's own build folder
    and its path requirements."""
    rel = Path(*module.split(".")).with_suffix(".olean")
    lean_path = [p for p in os.environ.get("LEAN_PATH", "").split(os.pathsep) if p]
    for d in [*search_path, *lean_path, ".lake/build/lib/lean", *required_build_dirs()]:
        if (Path(d) / rel).is_file():
            return Path(d) / rel
    return None


def load(module: str, search_path: list[str]) -> dict | None:
    path = find_olean(module, search_path)
    return json.loads(path.read_text(encoding="utf-8")) if path else None


def _tokens(text: str) -> set[str]:
    """Identifiers in ``text``, with every dotted prefix (``magic.elim`` also gives ``magic``)."""
    out = set()
    for tok in re.findall(r"[A-Za-z_][A-Za-z0-9_'.]*", text):
        parts = tok.strip(".").split(".")
        out |= {".".join(parts[: i + 1]) for i in range(len(parts))}
    return out


#: `open X in` / `set_option o v in` before a command: Lean elaborates the command under it
_PREFIX = re.compile(r"(?m)^(?:(?:open\s+[^\n]*?\s+in|set_option\s+\S+\s+\S+\s+in)\s+)+")


class Env:
    """The declarations of the loaded modules (transitively through their imports)."""

    def __init__(self, roots: list[str], search_path: list[str]) -> None:
        self.decls: dict[str, dict] = {}
        self.modules: dict[str, dict] = {}
        self.missing: list[str] = []
        todo = list(roots)
        while todo:
            m = todo.pop()
            if m in self.modules or m == "Init" or m == "Lean":
                continue
            data = load(m, search_path)
            if data is None:
                self.missing.append(m)
                continue
            self.modules[m] = data
            if "inspection" not in data:
                todo += read_header(data["source"]).modules
                self._add(m, data["source"])
        self._axioms()

    def _add(self, module: str, source: str) -> None:
        source = _PREFIX.sub("", source)
        lines = source.split("\n")
        exit_at = next((i for i, line in enumerate(lines) if line.strip().startswith("#exit")), None)
        if exit_at is not None:
            source = "\n".join(lines[:exit_at])
        clean = strip_comments(source)
        impl = dict(re.findall(r"attribute\s*\[\s*(?:local\s+)?implemented_by\s+(\S+)\s*\]\s*(\S+)", clean))
        impl = {v: k for k, v in impl.items()}
        for d in scan(source):
            if d.kind == "example" or not d.full_name:
                continue
            kind = KIND.get(d.kind, d.kind)
            text = d.header + " " + d.body
            attrs = d.attributes
            m_impl = re.search(r"implemented_by\s+([^\s\],]+)", attrs)
            self.decls[d.full_name] = {
                "decl": d, "module": module, "kind": kind,
                "record": {
                    "name": d.full_name, "found": True, "kind": kind, "module": module, "level_params": [],
                    "type_repr": d.signature, "value_repr": d.body if kind == "def" else None, "type_pp": d.type_text,
                    "safety": "unsafe" if "unsafe" in d.modifiers else "partial" if "partial" in d.modifiers else "safe",
                    "implemented_by": m_impl.group(1) if m_impl else impl.get(d.name) or impl.get(d.full_name),
                    "extern": "extern" in attrs, "init": bool(re.search(r"\binit\b", attrs)),
                    "sorry_direct": bool(_SORRY.search(text)), "conclusion_true": d.type_text == "True",
                    "sorry_in_type": bool(_SORRY.search(d.header)), "kernel_evaluated": [], "missing_constants": [],
                },
                "kernel": [n for n, rx in _KERNEL_EVALUATED.items() if rx.search(text)],
                "own": (["sorryAx"] if _SORRY.search(text) else [])
                + ([f"{d.full_name}._native.native_decide.ax_1_1"] if _NATIVE.search(strip_comments(text)) else [])
                + ([d.full_name] if kind == "axiom" else []),
                "tokens": _tokens(text), "type_tokens": _tokens(d.header),
            }

    def mentions(self, tokens: set[str]) -> list[str]:
        return [full for full, e in self.decls.items()
                if e["decl"].name in tokens or full in tokens or e["decl"].name.split(".")[-1] in tokens]

    def _axioms(self) -> None:
        uses = {n: [m for m in self.mentions(e["tokens"]) if m != n] for n, e in self.decls.items()}
        for own, field in (("own", "axioms"), ("kernel", "kernel_evaluated")):
            marks = {n: set(e[own]) for n, e in self.decls.items()}
            changed = True
            while changed:
                changed = False
                for n in marks:
                    new = marks[n].union(*(marks[m] for m in uses[n])) if uses[n] else marks[n]
                    if new != marks[n]:
                        marks[n], changed = new, True
            for n, e in self.decls.items():
                e["record"][field] = sorted(marks[n])

    def module_of(self, name: str) -> str:
        """The module of a declaration of the loaded modules; any other name is the library's."""
        e = self.decls.get(name)
        return e["module"] if e else "Init"


#: Extension names real Lean 4.35.0 writes for honest modules, read from the ``.olean`` files the
#: real core ``lean`` (``tests/lean_core.py``) wrote for prelude modules with each construct
#: (``tests/test_lean_contract.py`` compiles them again and checks this table against them).
HONEST_EXTENSIONS = {
    "module": ["_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt", "Lean.deprecatedModuleExt",
               "_private.Lean.Util.CollectAxioms.0.Lean.exportedAxiomsExt", "Lean.declRangeExt"],
    "namespace": ["_private.Lean.Namespace.0.Lean.namespacesExt"],
    "module_doc": ["_private.Lean.DocString.Extension.0.Lean.moduleDocExt"],
    "docstring": ["Lean.docStringExt"],
    "inductive": ["Lean.auxRecExt", "Lean.protectedExt", "reducibilityCore",
                  "_private.Lean.Compiler.LCNF.MonoTypes.0.Lean.Compiler.LCNF.trivialStructureInfoExt",
                  "Lean.Compiler.LCNF.monoTypeExt",
                  "_private.Lean.Compiler.LCNF.ToImpureType.0.Lean.Compiler.LCNF.impureTypeExt",
                  "_private.Lean.Compiler.LCNF.ToImpureType.0.Lean.Compiler.LCNF.impureTrivialStructureInfoExt",
                  "_private.Lean.Compiler.LCNF.ToImpureType.0.Lean.Compiler.LCNF.ctorLayoutExt"],
    "structure": ["Lean.projectionFnInfoExt", "_private.Lean.Structure.0.Lean.structureExt"],
    "class": ["Lean.classExtension"],
    "instance": ["Lean.Meta.instanceExtension", "reducibilityCore"],
    "abbrev": ["reducibilityCore", "Lean.Compiler.inlineAttrs"],
    "reducible": ["reducibilityCore"],
    "simp": ["Lean.Meta.simpExtension"],
    "def": ["Lean.IR.declMapExt", "Lean.Compiler.LCNF.baseExt", "Lean.Compiler.LCNF.monoExt",
            "Lean.Compiler.LCNF.impureSigExt", "Lean.Compiler.LCNF.UnreachableBranches.functionSummariesExt"],
    "linted": ["Lean.Linter.lintLogExt"],
    # read from the .olean files real 4.35.0 wrote for the honest-feature prelude modules of
    # tests/test_honest_controls_core.py (`@[ext]` and `termination_by` need Init: their names are
    # the extensions Lean's source registers, src/Lean/Meta/Tactic/Ext.lean, src/Lean/Elab/PreDefinition/WF/Eqns.lean)
    "noncomputable": ["Lean.noncomputableExt"],
    "export": ["Lean.aliasExtension"],
    "instance_argument": ["Lean.Compiler.LCNF.specExtension",
                          "_private.Lean.Compiler.LCNF.Specialize.0.Lean.Compiler.LCNF.Specialize.specCacheExt"],
    "match_pattern": ["Lean.matchPatternAttr"],
    "elab_as_elim": ["Lean.Elab.Term.elabAsElim"],
    "match": ["Lean.Meta.Match.Extension.extension"],
    "recursion": ["Lean.Elab.Structural.eqnInfoExt", "recExt"],
    "enumeration": ["Lean.noConfusionExt", "Lean.Meta.completionBlackListExt"],
    "ext": ["Lean.Meta.Ext.extExtension"],
    "well_founded": ["Lean.Elab.WF.eqnInfoExt", "recExt"],
}

#: Extension names Mathlib's attributes write, as its source registers them (no Mathlib runs
#: here: the rows of ``fyan.lean.extensions._MATHLIB_ROWS`` cite the file and line of each):
#: ``@[to_additive]`` records the translation, ``@[simps]`` the lemmas it generated (and each is a
#: ``@[simp]`` lemma), ``@[fun_prop]`` and ``@[gcongr]`` add a kernel-checked lemma to their sets.
MATHLIB_EXTENSIONS = {
    "to_additive": ["Mathlib.Tactic.ToAdditive.translations"],
    "simps": ["simpsAttr", "Simps.structureExt", "Lean.Meta.simpExtension"],
    "fun_prop": ["Mathlib.Meta.FunProp.functionTheoremsExt"],
    "gcongr": ["Mathlib.Tactic.GCongr.gcongrExt"],
}

#: every extension ``extensions`` can report (the double's registry, printed by ``lean --stats``)
TRICK_EXTENSIONS = ["Lean.Elab.macroAttribute", "Lean.Parser.parserExtension", "Lean.Elab.Command.commandElabAttribute",
                    "Lean.Elab.Tactic.tacticElabAttribute", "Lean.Compiler.CSimp.ext", "Lean.Compiler.implementedByAttr",
                    "Lean.externAttr", "Lean.regularInitAttr", "Lean.Meta.unificationHintExtension", "reducibilityExtra"]
REGISTRY = sorted({n for names in HONEST_EXTENSIONS.values() for n in names} | set(TRICK_EXTENSIONS))

_WORD = r"(?<![\w.'])%s(?![\w'])"


def _unused_binder(decl) -> bool:
    """The unused-variables linter (real Lean writes its warning into ``Lean.Linter.lintLogExt``):
    an explicit binder of a theorem used neither in its type nor in its proof."""
    if decl.kind not in ("theorem", "lemma"):
        return False
    binders = decl.header[: len(decl.header) - len(decl.type_text)] if decl.type_text else decl.header
    for group in re.findall(r"\(([^():]*):", binders):
        for name in group.split():
            if name != "_" and not re.search(_WORD % re.escape(name), decl.type_text + " " + decl.body):
                return True
    return False


def extensions(source: str, decls: list[dict]) -> list[dict]:
    clean = strip_comments(source)
    counts: dict[str, int] = {}

    def add(name: str, n: int = 1) -> None:
        if n:
            counts[name] = counts.get(name, 0) + n

    def honest(construct: str, n: int = 1) -> None:
        for name in HONEST_EXTENSIONS[construct]:
            add(name, n)

    honest("module")
    counts["Lean.declRangeExt"] += len(decls) - 1
    counts["_private.Lean.Util.CollectAxioms.0.Lean.exportedAxiomsExt"] += len(decls) - 1
    exported = re.sub(r"(?m)^\s*local\s+.*$", "", clean)  # local entries are not exported
    honest("namespace", len(re.findall(r"(?m)^\s*namespace\s", clean)))
    honest("module_doc", source.count("/-!"))
    honest("docstring", source.count("/--"))
    kinds = [d["decl"].kind for d in decls]
    honest("inductive", sum(k in ("inductive", "structure", "class") for k in kinds))
    honest("structure", sum(k in ("structure", "class") for k in kinds))
    honest("class", kinds.count("class"))
    honest("instance", len(re.findall(_WORD % "instance", exported)))
    honest("abbrev", kinds.count("abbrev"))
    honest("reducible", len(re.findall(r"@\[[^\]]*\breducible\b", exported)))
    honest("simp", len(re.findall(r"[\[,]\s*simp\b", exported)))
    honest("def", sum(d["kind"] == "def" for d in decls))
    honest("linted", sum(_unused_binder(d["decl"]) for d in decls))
    honest("noncomputable", len(re.findall(_WORD % "noncomputable", exported)))
    honest("export", len(re.findall(r"(?m)^\s*export\s", exported)))
    honest("instance_argument", sum(d["kind"] == "def" and "[" in d["decl"].header.split(":")[0] for d in decls))
    honest("match_pattern", len(re.findall(r"@\[[^\]]*\bmatch_pattern\b", exported)))
    honest("elab_as_elim", len(re.findall(r"@\[[^\]]*\belab_as_elim\b", exported)))
    honest("match", sum(d["kind"] == "def" and bool(re.search(r"(?m)^\s*\||\bmatch\b", d["decl"].body)) for d in decls))
    honest("recursion", sum(d["kind"] == "def" and bool(re.search(_WORD % re.escape(d["decl"].name.split(".")[-1]),
                                                                   d["decl"].body)) for d in decls))
    honest("enumeration", sum(k == "inductive" for k in kinds))
    honest("ext", len(re.findall(r"@\[[^\]]*\bext\b", exported)))
    honest("well_founded", len(re.findall(_WORD % "termination_by", exported)))
    for attribute, names in MATHLIB_EXTENSIONS.items():
        n = len(re.findall(r"@\[[^\]]*\b%s\b" % attribute, exported))
        for name in names:
            add(name, n)
    add("Lean.Elab.macroAttribute", len(re.findall(r"(?<![\w.'])(?:macro|macro_rules|notation|infix\w*)(?![\w'])|"
                                                    r"\[\s*macro\b", exported)))
    add("Lean.Parser.parserExtension", len(re.findall(r"(?<![\w.'])(?:macro|syntax|notation|infix\w*|elab)\s+\"",
                                                      exported)))
    add("Lean.Elab.Command.commandElabAttribute", len(re.findall(r"(?<![\w.'])elab(?:_rules)?(?![\w'])|"
                                                                 r"\[\s*command_elab\b", exported)))
    add("Lean.Elab.Tactic.tacticElabAttribute", len(re.findall(r"\[\s*tactic\b", exported)))
    add("Lean.Compiler.CSimp.ext", len(re.findall(r"[\[,]\s*(?:local\s+)?csimp\b", exported)))
    add("Lean.Compiler.implementedByAttr", len(re.findall(r"implemented_by", exported)))
    add("Lean.externAttr", len(re.findall(r"[\[,]\s*extern\b", exported)))
    add("Lean.regularInitAttr", len(re.findall(r"(?<![\w.'])initialize(?![\w'])|[\[,]\s*init\b", exported)))
    add("Lean.Meta.unificationHintExtension", len(re.findall(r"(?<![\w.'])unif_hint(?![\w'])", exported)))
    add("reducibilityExtra", len(re.findall(r"attribute\s*\[[^\]]*\b(?:reducible|irreducible)\b", exported)))
    return [{"name": k, "entries": v} for k, v in counts.items()]


def registrations(env: "Env", module: str, source: str) -> list[dict]:
    """Instances (about their class and the constants after it) and ``abbrev``/``@[reducible]``
    declarations (about the constants of their value) of ``module``."""
    exported = re.sub(r"(?m)^\s*local\s+.*$", "", strip_comments(source))
    out = []
    for full, e in env.decls.items():
        d = e["decl"]
        if e["module"] != module:
            continue
        if d.kind == "instance" and re.search(_WORD % "instance", exported):
            about = [t for t in re.findall(r"[A-Za-z_][\w'.]*", d.type_text) if t not in ("Type", "Prop", "Sort")]
            kind = "instance"
        elif d.kind == "abbrev" or re.search(r"\breducible\b", d.attributes):
            about = [t for t in re.findall(r"[A-Za-z_][\w'.]*", d.body) if t[0].isupper()]
            kind = "reducible"
        else:
            continue
        names = []
        for t in about:
            resolved = next(iter(env.mentions({t})), t)
            if resolved not in names and resolved != full:
                names.append(resolved)
        keys: list[dict] = []
        out_params: list[int] = []
        if kind == "instance":
            keys, out_params = instance_keys_of(env, d)
        out.append({"kind": kind, "declaration": full, "module": module, "scoped": "scoped" in d.modifiers,
                    "about": [{"name": n, "module": env.module_of(n)} for n in names],
                    "keys": keys, "out_params": out_params})
    return out


_BINDER_NAMES = re.compile(r"[({\[⦃]\s*([^:(){}\[\]⦃⦄]+?)\s*:")


def _scope(env: "Env") -> "instance_keys.Scope":
    """The reducible definitions, structures and constructors of the loaded modules, and a resolver
    of written names, for ``instance_keys``."""
    reducible, structures, constructors = {}, {}, {}
    for full, e in env.decls.items():
        d = e["decl"]
        if d.kind == "abbrev" or re.search(r"\breducible\b", d.attributes):
            binders = d.header[: len(d.header) - len(d.type_text)] if d.type_text else d.header
            params = [n for group in _BINDER_NAMES.findall(binders) for n in group.split()]
            reducible[full] = (params, " ".join(d.body.split()))
        if d.kind in ("structure", "class"):
            fields = re.findall(r"(?m)^\s*([^\s:()]+)\s*:", d.body)
            structures[full] = fields
            constructors[full + ".mk"] = full
        if d.kind == "inductive":
            for ctor in re.findall(r"\|\s*([^\s:(|]+)", d.body):
                constructors[f"{full}.{ctor}"] = full
    known = list(env.decls) + list(constructors) + [f"{st}.{f}" for st, fs in structures.items() for f in fs]

    def resolve(name: str) -> str:
        name = name.lstrip("@")
        if name in env.decls or name in constructors or name in known:
            return name
        hit = next((k for k in known if k.endswith("." + name)), None)
        return hit or name

    return instance_keys.Scope(reducible=reducible, structures=structures, constructors=constructors, resolve=resolve)


def instance_keys_of(env: "Env", d) -> tuple[list[dict], list[int]]:
    """The keys Lean stores for the instance ``d`` (``instance_keys.keys`` of its type's
    conclusion, the instance's binders as variables) with each constant's module, and the
    ``outParam`` positions of its class (an own class: its binders written ``outParam``; a library
    class: ``instance_keys.LIBRARY_OUT_PARAMS``). An unreadable type gives no keys (the policy then
    refuses the instance: fail closed)."""
    scope = _scope(env)
    binders = d.header[: len(d.header) - len(d.type_text)] if d.type_text else ""
    bound = frozenset(n for group in _BINDER_NAMES.findall(binders) for n in group.split())
    conclusion = d.type_text
    while True:  # the conclusion after `∀`/`→` binders written in the type
        m = re.match(r"^(?:∀|forall)\s+[^,]+,\s*(.*)$", conclusion) or re.match(r"^\[[^\]]*\]\s*→\s*(.*)$", conclusion)
        if not m:
            break
        conclusion = m.group(1)
    try:
        keys = instance_keys.keys(conclusion, scope, bound)
    except (ValueError, RecursionError):
        return [], []
    for k in keys:
        k["module"] = env.module_of(k["name"]) if k["kind"] in ("const", "proj") else ""
    cls = keys[0]["name"] if keys and keys[0]["kind"] == "const" else ""
    if cls in env.decls:
        header = env.decls[cls]["decl"].header
        groups = re.findall(r"\(([^():]+):([^()]*(?:\([^()]*\))?[^()]*)\)", header)
        out, i = [], 0
        for names, typ in groups:
            for _ in names.split():
                if "outParam" in typ:
                    out.append(i)
                i += 1
        return keys, out
    return keys, list(instance_keys.LIBRARY_OUT_PARAMS.get(cls, []))


def _library_record(name: str) -> dict:
    """A library constant a scenario says exists (``constants``): found in module ``Init``."""
    return {"name": name, "found": True, "kind": "theorem", "module": "Init", "level_params": [], "type_repr": name,
            "type_pp": name, "value_repr": None, "safety": "safe", "implemented_by": None, "extern": False,
            "init": False, "sorry_direct": False, "sorry_in_type": False, "conclusion_true": False, "axioms": [],
            "kernel_evaluated": [], "missing_constants": [], "constants": [], "local_constants": [],
            "binder_domains": [], "references": []}


def package_references(env: "Env", home: set[str], name: str, limit: int = 20000) -> list[dict]:
    """``FyanInspector.lean`` ``packageReferences``: the declarations of the modules ``home`` that
    ``name`` reaches through its statement and proof (here: the declarations its source text
    mentions), breadth first, ``name`` first, each with those it refers to directly."""
    out, todo, seen, at = [], [name], {name}, 0
    while at < len(todo) and len(out) < limit:
        c = todo[at]
        at += 1
        e = env.decls.get(c)
        if e is None:
            continue
        direct = []
        for d in env.mentions(e["tokens"]):
            if env.decls[d]["module"] in home and d != c and d not in direct:
                direct.append(d)
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        out.append({"name": c, "references": direct})
    return out


def blueprint(env: Env, sc: dict) -> dict:
    """The report's ``blueprint`` field (docs/lean-contract.md, "LeanArchitect", the row on
    ``blueprintExt`` entries). The real inspector finds ``Architect.blueprintExt`` declared when a
    module of the environment imports LeanArchitect (``Architect.Basic`` declares it); this double
    says so when a loaded module imports a module under ``Architect`` (the Lake double does not
    model LeanArchitect's own modules), and reads the entries from the loaded modules' sources
    (``fake_architect.extension_entries``). The scenario's ``blueprint`` replaces the whole field,
    ``blueprint_edit`` (declaration -> fields) changes entries: what a test needs to make the
    compiled attributes differ from the generated files."""
    if "blueprint" in sc:
        return sc["blueprint"]
    sources = {m: d["source"] for m, d in env.modules.items() if "source" in d}
    if not any(i.split(".")[0] == "Architect" for text in sources.values() for i in read_header(text).modules):
        return {"present": False}
    entries = fake_architect.extension_entries({m: (text, Path(*m.split(".")).with_suffix(".lean"))
                                                for m, text in sources.items()})
    edits = sc.get("blueprint_edit", {})
    entries = [{**e, **edits.get(e["name"], {})} for e in entries]
    return {"present": True, "extension": "Architect.blueprintExt", "layout_problem": None, "entries": entries}


def report(opts: dict, sc: dict) -> dict:
    env = Env(opts["modules"] + opts["imports"], opts["search_path"])
    out = {"format": "fyan-inspector/3", "nonce": sc.get("inspector_nonce", opts["nonce"]), "lean_version": sc.get("lean_version", LEAN_VERSION),
           "import_level": "private", "modules": [], "lookups": [], "problems": [], "blueprint": {"present": False},
           "error": None}
    missing = [m for m in opts["modules"] + opts["imports"] if m in env.missing]
    if missing:
        rel = Path(*missing[0].split(".")).with_suffix(".olean")
        out["error"] = f"object file '.lake/build/lib/lean/{rel}' of module {missing[0]} does not exist"
        return out
    overrides = dict(sc.get("inspect", {}))
    for module in opts["modules"]:
        overrides.update(sc.get("inspect_by_module", {}).get(module, {}))
    for module in opts["modules"]:
        data = env.modules[module]
        if "inspection" in data:  # a recorded inspection (SA-Pass replay)
            recorded = data["inspection"]
            out["modules"] += [m for m in recorded.get("modules", []) if m["name"] == module]
            out["lookups"] += [d for d in recorded.get("lookups", []) if d["name"] in opts["names"]]
            continue
        decls = [e for e in env.decls.values() if e["module"] == module]
        lookup_only = {"constants", "local_constants", "binder_domains", "references"}
        records = [{**e["record"], **{k: v for k, v in overrides.get(e["record"]["name"], {}).items()
                                      if k not in lookup_only}} for e in decls
                   if overrides.get(e["record"]["name"], {}).get("found", True)]  # found: false = absent
        mod = {"name": module, "found": True, "is_module": read_header(data["source"]).module,
               "imports": (["Init"] if not read_header(data["source"]).prelude else [])
               + read_header(data["source"]).modules,
               "declarations": records, "extensions": extensions(data["source"], decls),
               "registrations": registrations(env, module, data["source"]), "extra_constants": []}
        mod.update(sc.get("inspect_module", {}).get(module, {}))
        out["modules"].append(mod)
    out["blueprint"] = blueprint(env, sc)
    if any("inspection" in env.modules[m] for m in opts["modules"]):
        return out
    prefix = opts["local_prefix"]
    for name in opts["names"]:
        e = env.decls.get(name)
        if e is None:
            rec = {"name": name, "found": False}
            if name in sc.get("constants", []):
                rec = _library_record(name)
            out["lookups"].append({**rec, **overrides.get(name, {})})
            continue
        d = e["decl"]
        meaning_tokens = _tokens(d.header + (" " + d.body if e["kind"] == "def" else ""))
        direct = [{"name": m, "module": env.decls[m]["module"], "kind": env.decls[m]["kind"], "projection": False,
                   "conclusion": env.mentions(env.decls[m]["type_tokens"])}
                  for m in env.mentions(meaning_tokens) if m != name]
        local, todo, seen = [], [c["name"] for c in direct], {name}
        while todo:
            full = todo.pop(0)
            if full in seen or not prefix or not env.decls[full]["module"].startswith(prefix + "."):
                continue
            seen.add(full)
            ce = env.decls[full]
            cd = ce["decl"]
            local.append({"name": full, "module": ce["module"], "kind": ce["kind"], "meaning": [cd.frozen_signature]})
            todo += env.mentions(_tokens(cd.header + (" " + cd.body if ce["kind"] == "def" else "")))
        references = package_references(env, set(opts["imports"]), name) if opts["follow_references"] else []
        rec = {**e["record"], "constants": direct, "local_constants": local, "binder_domains": [],
               "references": references}
        rec.update(overrides.get(name, {}))
        if rec.get("found") is False:
            rec = {"name": name, "found": False}
        out["lookups"].append(rec)
    return out


def main(argv: list[str]) -> int:
    log = os.environ.get("FYAN_FAKE_LOG")
    if log:  # every call, as the Lake and lean doubles log theirs
        try:
            with open(log, "a") as fh:
                fh.write(json.dumps({"argv": ["fyan-inspector", *argv], "cwd": os.getcwd()}) + "\n")
        except OSError:  # inside the sandbox the log's folder is read-only
            pass
    sc = scenario()
    spec = limited(sc.get("inspector_process", {}), "inspector")
    if spec.get("sleep"):
        time.sleep(float(spec["sleep"]))
    if spec.get("signal"):
        os.kill(os.getpid(), int(spec["signal"]))
    opts = parse(argv)
    if not opts["out"]:
        print("fake inspector: --out FILE is required", file=sys.stderr)
        return 2
    if "inspector_output" in sc:
        # "@NONCE@" stands for the nonce of this run (a lying answer that echoes it correctly)
        Path(opts["out"]).write_text(sc["inspector_output"].replace("@NONCE@", opts["nonce"]), encoding="utf-8")
    else:
        Path(opts["out"]).write_text(json.dumps(report(opts, sc)) + "\n", encoding="utf-8")
    if opts["declarations"]:
        write_declarations(Path(opts["declarations"]), opts["nonce"])
    return int(spec.get("exit", 0))


#: Lean core's declarations as ``--declarations`` lists them (written by hand in that format;
#: tests/test_declaration_list.py reads the same file)
CORE_DECLARATIONS = Path(__file__).resolve().parents[1] / "data" / "inspector-declarations.jsonl"


def write_declarations(path: Path, nonce: str) -> None:
    """``--declarations FILE`` (docs/lean-contract.md, "The trusted inspector", the
    ``--declarations FILE`` row): a ``{format: fyan-inspector-declarations/1, nonce, count}``
    line, then one ``{name, kind, module, signature}`` line per constant. Every environment
    imports Lean core (``Init``), so the double lists the recorded core declarations
    (``CORE_DECLARATIONS``) with this run's nonce echoed."""
    lines = [line for line in CORE_DECLARATIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    head = json.loads(lines[0].replace("NONCE", nonce))
    head["count"] = len(lines) - 1
    path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raise SystemExit(main(sys.argv[1:]))
