"""An existing Lake package to adopt: its name, toolchain pin and the modules of its targets, as Lake resolves them.

Read from its configuration only — ``lakefile.toml`` (TOML) or ``lakefile.lean`` (Lake's DSL,
read by pattern, never run) — and ``lean-toolchain``. The modules adopted are those Lake builds
for the package's library targets (docs/lean-contract.md, "Lake targets"):

* each ``lean_lib`` has ``roots`` (default: its name) and ``globs`` (default: one ``Glob.one`` per
  root); a glob ``M`` selects the module ``M``, ``M.*`` the module and every submodule
  (``Glob.andSubmodules``), ``M.+`` the submodules only (``Glob.submodules``) — submodules being
  the ``.lean`` files below ``<srcDir>/M/`` (``Lean.forEachModuleInDir``);
* sources live below the package's ``srcDir`` then the library's ``srcDir`` (both default ``.``);
* a target module's imports that are the package's own files are built with it (Lake builds a
  module's imports first), so they belong to the target too;
* the libraries are the ``defaultTargets`` (``@[default_target]``) that are ``lean_lib``s — what
  a bare ``lake build`` builds — or every ``lean_lib`` when no library is a default target.

Every other ``.lean`` file of the package (a scratch file, an old test, an executable's root)
is outside every target: listed in ``LakePackage.outside`` and ignored. Nothing in the package
is written.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from fyan.errors import InputError
from fyan.lean.header import module_name, read_header
from fyan.lean.toolchain import read_pin

_NAME = r"«([^»]+)»|([A-Za-z_][A-Za-z0-9_']*)"
#: a Lean name in a lakefile.lean (``Foo.Bar``, ``«a b».C``)
_DOTTED = r"(?:«[^»]*»|[A-Za-z_][A-Za-z0-9_'!?]*)(?:\.(?:«[^»]*»|[A-Za-z_][A-Za-z0-9_'!?]*))*"


@dataclass(frozen=True)
class Glob:
    """A Lake module glob: ``kind`` ``one`` / ``submodules`` / ``andSubmodules`` of ``name`` (dotted)."""

    kind: str
    name: str

    @classmethod
    def parse(cls, text: str) -> "Glob":
        """Lake's ``Glob.ofString?``: ``M``, ``M.*`` (and submodules), ``M.+`` (submodules only)."""
        if text.endswith(".*"):
            return cls("andSubmodules", text[:-2])
        if text.endswith(".+"):
            return cls("submodules", text[:-2])
        return cls("one", text)


@dataclass(frozen=True)
class LeanLib:
    """One ``lean_lib`` target: ``name``, ``roots``, ``globs``, ``src_dir`` (relative to the package)."""

    name: str
    roots: tuple[str, ...]
    globs: tuple[Glob, ...]
    src_dir: str = "."


@dataclass(frozen=True)
class LakePackage:
    """An adoptable Lake package: ``folder`` (absolute), ``name``, ``libs`` (the adopted libraries'
    names), ``modules`` (dotted module names of their targets, each library's in glob order),
    ``pin`` (its ``lean-toolchain``), ``targets`` (the adopted ``LeanLib``s), ``sources``
    (module -> source path relative to the folder) and ``outside`` (relative paths of the
    package's ``.lean`` files no adopted target selects: ignored)."""

    folder: Path
    name: str
    libs: list[str]
    pin: str
    modules: list[str] = field(default_factory=list)
    targets: list[LeanLib] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    outside: list[str] = field(default_factory=list)

    def imports_within(self, module: str) -> list[str]:
        """The package's target modules ``module``'s source imports (read by ``fyan.lean.header``)."""
        rel = self.sources.get(module)
        if rel is None or not (self.folder / rel).is_file():
            return []
        text = (self.folder / rel).read_text(encoding="utf-8", errors="replace")
        return [m for m in read_header(text).modules if m in self.sources]


def _module_of(rel: Path) -> str | None:
    parts = rel.with_suffix("").parts
    return module_name(parts) if parts and all(parts) else None


def _glob_modules(base: Path, glob: Glob) -> list[tuple[str, Path]]:
    """(module, source path) of every module ``glob`` selects below ``base`` (``Glob.forEachModuleIn``)."""
    from fyan.lean.header import split_name

    parts = split_name(glob.name)
    out: list[tuple[str, Path]] = []
    if glob.kind in ("one", "andSubmodules"):
        out.append((glob.name, base.joinpath(*parts).with_suffix(".lean") if parts else base))
    if glob.kind in ("submodules", "andSubmodules"):
        folder = base.joinpath(*parts)
        if folder.is_dir():
            for p in sorted(folder.rglob("*.lean")):
                rel = p.relative_to(base)
                if any(x.startswith(".") for x in rel.parts):
                    continue
                m = _module_of(rel)
                if m:
                    out.append((m, p))
    return out


def _strings(value: object) -> list[str]:
    """Lake's ``decodeArrayOrSingleton``: a string or an array of strings."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def _toml_libs(data: dict) -> tuple[list[LeanLib], list[str]]:
    libs = []
    for lib in data.get("lean_lib", []):
        if not isinstance(lib, dict) or not lib.get("name"):
            continue
        name = str(lib["name"])
        roots = tuple(_strings(lib.get("roots")) or [name])
        globs = tuple(Glob.parse(g) for g in _strings(lib.get("globs"))) or tuple(Glob("one", r) for r in roots)
        libs.append(LeanLib(name=name, roots=roots, globs=globs, src_dir=str(lib.get("srcDir", "."))))
    return libs, _strings(data.get("defaultTargets"))


def _lean_names(text: str) -> list[str]:
    return re.findall(rf"`({_DOTTED})", text)


def _lean_libs(text: str) -> tuple[list[LeanLib], list[str]]:
    """``lean_lib`` declarations of a ``lakefile.lean`` (read by pattern: ``roots``, ``globs``
    — `` `M``, ``.one``/``.submodules``/``.andSubmodules `M``, `` `M.*``/`` `M.+`` — ``srcDir``,
    ``@[default_target]``)."""
    text = re.sub(r"--[^\n]*", "", text)
    text = re.sub(r"/-.*?-/", "", text, flags=re.S)
    libs, defaults = [], []
    heads = list(re.finditer(rf"(?m)^(@\[[^\]]*\]\s*)?lean_lib\s+(?:{_NAME})", text))
    for k, m in enumerate(heads):
        name = m.group(2) or m.group(3)
        nxt = re.compile(r"(?m)^(?=\S)").search(text, m.end())
        body = text[m.end(): nxt.start() if nxt else len(text)]
        if m.group(1) and "default_target" in m.group(1):
            defaults.append(name)
        roots_m = re.search(r"\broots\s*:=\s*#\[([^\]]*)\]", body)
        roots = tuple(_lean_names(roots_m.group(1))) if roots_m else (name,)
        globs_m = re.search(r"\bglobs\s*:=\s*#\[([^\]]*)\]", body)
        globs: list[Glob] = []
        if globs_m:
            for g in re.finditer(rf"(?:(?:Glob)?\.(one|submodules|andSubmodules)\s+)?`({_DOTTED})(\.[*+])?",
                                 globs_m.group(1)):
                kind = g.group(1) or {".*": "andSubmodules", ".+": "submodules", None: "one"}[g.group(3)]
                globs.append(Glob(kind, g.group(2)))
        src = re.search(r'\bsrcDir\s*:=\s*"([^"]*)"', body)
        libs.append(LeanLib(name=name, roots=roots, globs=tuple(globs) or tuple(Glob("one", r) for r in roots),
                            src_dir=src.group(1) if src else "."))
    return libs, defaults


def read_package(folder: Path | str) -> LakePackage:
    """The ``LakePackage`` in ``folder``. Raises ``InputError`` (saying what to give instead) when
    the folder is missing, has no lakefile, a lakefile that cannot be read, no ``lean_lib``, no
    ``lean-toolchain`` or no module."""
    folder = Path(folder).expanduser().resolve()
    hint = "give --lean-project the folder holding the package's lakefile.toml or lakefile.lean"
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder", hint=hint)
    toml, lean = folder / "lakefile.toml", folder / "lakefile.lean"
    if toml.is_file():
        try:
            data = tomllib.loads(toml.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise InputError(f"{toml}: not valid TOML: {e}", hint="fix the lakefile (`lake build` reads it too)") from None
        name = str(data.get("name", ""))
        libs, defaults = _toml_libs(data)
        pkg_src = str(data.get("srcDir", "."))
    elif lean.is_file():
        text = lean.read_text(encoding="utf-8", errors="replace")
        m = re.search(rf"(?m)^\s*package\s+(?:{_NAME})", re.sub(r"--[^\n]*", "", text))
        name = (m.group(1) or m.group(2)) if m else ""
        libs, defaults = _lean_libs(text)
        src = re.search(r'(?m)^package[^\n]*(?:\n[ \t]+[^\n]*)*?\n[ \t]+srcDir\s*:=\s*"([^"]*)"', text)
        pkg_src = src.group(1) if src else "."
    else:
        raise InputError(f"{folder}: no lakefile.toml or lakefile.lean (not a Lake package)", hint=hint)
    if not name:
        raise InputError(f"{folder}: the lakefile names no package", hint="Lake needs `name = \"...\"` (TOML) or "
                         "`package «...»` (lakefile.lean)")
    if not libs:
        raise InputError(f"{folder}: the lakefile declares no lean_lib", hint="adoption reads the declarations of "
                         "the package's Lean libraries; declare one ([[lean_lib]] or lean_lib)")
    pin = read_pin(folder)
    if not pin:
        raise InputError(f"{folder}: no lean-toolchain file", hint="pin the package's toolchain (e.g. "
                         "`leanprover/lean4:v4.31.0`) as `lake new` does")
    chosen = [lib for lib in libs if lib.name in defaults] or libs
    sources: dict[str, str] = {}
    for lib in chosen:
        base = (folder / pkg_src / lib.src_dir).resolve()
        for glob in lib.globs:
            for module, path in _glob_modules(base, glob):
                if path.is_file():
                    sources.setdefault(module, path.relative_to(folder).as_posix() if path.is_relative_to(folder)
                                       else str(path))
    bases = [(folder / pkg_src / lib.src_dir).resolve() for lib in chosen]
    todo = list(sources)
    while todo:  # Lake builds a target module's imports too: the package's own ones belong to it
        module = todo.pop()
        text = (folder / sources[module]).read_text(encoding="utf-8", errors="replace")
        for imp in read_header(text).imports:
            if imp.module in sources:
                continue
            path = next((b.joinpath(*imp.parts).with_suffix(".lean") for b in bases
                         if b.joinpath(*imp.parts).with_suffix(".lean").is_file()), None)
            if path is not None and path.is_relative_to(folder):
                sources[imp.module] = path.relative_to(folder).as_posix()
                todo.append(imp.module)
    modules = list(sources)
    if not modules:
        raise InputError(f"{folder}: no module of {', '.join(lib.name for lib in chosen)} found "
                         f"(roots/globs {', '.join(g.name for lib in chosen for g in lib.globs)})", hint=hint)
    selected = set(sources.values())
    outside = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.lean")
                     if not any(x.startswith(".") for x in p.relative_to(folder).parts)
                     and p.name != "lakefile.lean" and p.relative_to(folder).as_posix() not in selected)
    return LakePackage(folder=folder, name=name, libs=[lib.name for lib in chosen], pin=pin, modules=modules,
                       targets=chosen, sources=sources, outside=outside)
