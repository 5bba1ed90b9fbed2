"""The project's Lake package (``lean/``) and the Lean files of each unit.

Layout (``<Lib>`` from ``[project] lean_lib``, ``<Unit>`` the unit's module component)::

    lean/lakefile.toml  lean/lean-toolchain  lean/<Lib>.lean (root: imports complete units)
    lean/<Lib>/<Unit>/Basic.lean   one per complete unit (copied from units/<unit>/Basic.lean)
    lean/.lake/build/lib/lean/<Lib>/<Unit>/Basic.olean
                                   its module as the completion gate compiled it (copied from
                                   units/<unit>/Basic.olean, recorded with its SHA-256; read-only)

Each complete unit is compiled once, by the completion gate's trusted build: a
workspace (an agent's or the gate's) reads the ``.olean`` of each upstream module it imports
instead of compiling the upstream sources again. A workspace's ``lakefile.toml`` is the
project's with the library's ``roots`` narrowed to the unit's own namespace
(``workspace_lakefile``), so Lake owns, and builds, only the unit's modules there and takes
every other ``<Lib>.…`` import from the search path (the workspace's ``.lake/build/lib/lean``),
as it does for any module no library of the package owns (Lake: ``LeanLib.isLocalModule``).

A unit file is written by code around the model's declarations: the imports (upstream units
and ``[lean] extra_imports``), ``open`` of every upstream unit's namespace, and
``namespace <Lib>.<Unit>`` so declarations of different units never collide. Models never
write imports (the ``import`` lint rejects them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from string import Template

from fyan.lean.header import read_header
from fyan.lean.render import comment_text, dotted_name
from fyan.project import Project
from fyan.resources import data_dir
from fyan.state.models import UnitRecord, UnitStatus
from fyan.state.store import Store

MODEL_BEGIN = "-- fyan: begin model-written declarations"
MODEL_END = "-- fyan: end model-written declarations"


def unit_namespace(project: Project, unit: UnitRecord) -> str:
    return f"{project.config.lean_lib}.{unit.module}"


def unit_module(project: Project, unit: UnitRecord, part: str = "Basic") -> str:
    return f"{project.config.lean_lib}.{unit.module}.{part}"


def upstream(store: Store, unit_id: str) -> list[UnitRecord]:
    """All transitive dependencies of ``unit_id``, in document order."""
    import networkx as nx  # here: the restart path imports this module, not this function

    g = nx.DiGraph()
    g.add_edges_from((d.unit, d.depends_on) for d in store.deps())
    ids = nx.descendants(g, unit_id) if unit_id in g else set()
    return [u for u in store.units() if u.id in ids]


def unit_imports(project: Project, store: Store, unit: UnitRecord) -> list[str]:
    """The modules Fyan makes ``unit``'s files import: its direct upstream units' modules, then
    ``[lean] extra_imports`` (what the inspector expects the compiled module to import)."""
    direct = {d.depends_on for d in store.deps(unit.id)}
    adopted = store.adoptions()
    out: list[str] = []
    for d in upstream(store, unit.id):
        if d.id not in direct:
            continue
        record = adopted.get(d.id)
        if record is not None and record.outcome == "adopted":  # its declarations' modules in the adopted package
            out += [m for x in record.evidence.get("decls", []) if (m := x.get("module")) and m not in out]
        else:
            out.append(unit_module(project, d))
    return out + list(project.config.lean.extra_imports)


def render_unit_file(project: Project, store: Store, unit: UnitRecord, body: str, part: str) -> str:
    """The full Lean file of ``unit`` (``part`` = Statement or Basic) around ``body``.

    Document-derived text (the unit id, its provenance: file path, lines, label) enters only
    through ``fyan.lean.render`` (a comment that cannot be closed early); names through
    ``dotted_name``."""
    deps = upstream(store, unit.id)
    lines = [f"import {dotted_name(m)}" for m in unit_imports(project, store, unit)]
    lines += [
        "",
        f"/-! Fyan unit `{comment_text(unit.id)}` ({comment_text(part)}). Source: {comment_text(str(unit.provenance))}.",
        "The declarations between the markers are model-written; everything else is written by Fyan. -/",
        "",
    ]
    if deps:
        lines.append("open " + " ".join(dotted_name(unit_namespace(project, d)) for d in deps))
        lines.append("")
    ns = dotted_name(unit_namespace(project, unit))
    lines += [f"namespace {ns}", "", MODEL_BEGIN, body.strip("\n"), MODEL_END, "", f"end {ns}", ""]
    return "\n".join(lines)


def model_part(text: str) -> str:
    """The model-written declarations of a unit file (the text between the markers)."""
    start = text.find(MODEL_BEGIN)
    end = text.rfind(MODEL_END)
    if start < 0 or end < start:
        return text
    return text[start + len(MODEL_BEGIN) : end].strip("\n")


#: where Lake puts a package's compiled modules (relative to the package)
BUILD_LIB = Path(".lake") / "build" / "lib" / "lean"


def olean_path(package: Path, module: str) -> Path:
    """``<package>/.lake/build/lib/lean/<A>/<B>/<C>.olean`` for module ``A.B.C``."""
    return package.joinpath(BUILD_LIB, *module.split(".")).with_suffix(".olean")


def place_output(path: Path, data: bytes) -> None:
    """Write a compiled module read-only (0444) at ``path``, replacing what is there atomically;
    a no-op when it already holds ``data``."""
    try:
        if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    tmp.write_bytes(data)
    tmp.chmod(0o444)
    tmp.replace(path)


class LakefileError(Exception):
    """The project's ``lakefile.toml`` has no ``[[lean_lib]]`` for the project's library, so a
    workspace's library cannot be narrowed to one unit (the message says what to do)."""


def workspace_lakefile(text: str, lib: str, roots: list[str]) -> str:
    """The project's ``lakefile.toml`` ``text`` with the ``[[lean_lib]]`` named ``lib`` given
    ``roots`` (module names: the unit's namespace, e.g. ``Lib.Unit``), replacing any ``roots``
    it had. Lake then builds only modules under those roots in the workspace and reads every
    other import from the search path. Raises ``LakefileError`` when there is no such table."""
    value = "roots = [" + ", ".join(f'"{r}"' for r in roots) + "]"
    blocks = re.split(r"(?m)^(?=\[)", text)
    for i, block in enumerate(blocks):
        if block.startswith("[[lean_lib]]") and re.search(rf'(?m)^name[ \t]*=[ \t]*"{re.escape(lib)}"[ \t]*$', block):
            if re.search(r"(?m)^roots\s*=", block):
                block = re.sub(r"(?m)^roots[ \t]*=.*$", lambda m: value, block)
            else:
                block = re.sub(rf'(?m)^(name[ \t]*=[ \t]*"{re.escape(lib)}"[ \t]*)$', lambda m: f"{m.group(1)}\n{value}", block,
                           count=1)
            blocks[i] = block
            return "".join(blocks)
    raise LakefileError(f'the project\'s lakefile.toml has no [[lean_lib]] with name = "{lib}"; restore it '
                        "(lake-template/lakefile.toml) or add that table")


def with_packages_dir(text: str, packages_dir: str | None) -> str:
    """``lakefile.toml`` ``text`` with the top-level ``packagesDir`` (Lake's ``WorkspaceConfig``
    option: where the workspace's dependencies are, relative to the package) set to
    ``packages_dir``; unchanged for None."""
    if packages_dir is None:
        return text
    line = f"packagesDir = {json.dumps(packages_dir)}"
    head, sep, rest = text.partition("\n[")
    head = re.sub(r"(?m)^packagesDir[ \t]*=.*\n?", "", head)
    return f"{line}\n{head}{sep}{rest}"


def packages_dir(package: Path) -> Path:
    """Where the Lake package in ``package`` keeps its dependencies: its ``lakefile.toml``'s
    top-level ``packagesDir`` joined to the package folder, default ``.lake/packages``."""
    import tomllib

    try:
        value = tomllib.loads((package / "lakefile.toml").read_text(encoding="utf-8")).get("packagesDir")
    except (OSError, UnicodeDecodeError, ValueError):
        value = None
    return package / (value if isinstance(value, str) and value else ".lake/packages")


def _template(name: str, **values: str) -> str:
    return Template((data_dir("lake-template") / name).read_text(encoding="utf-8")).substitute(**values)


def write_package_config(project: Project, folder: Path) -> None:
    """Write ``lakefile.toml`` and ``lean-toolchain`` for the project's library into ``folder``:
    the ``[[require]]`` of Mathlib at ``[lean] mathlib`` (when set) and of the adopted package,
    and the toolchain pin of ``[lean] toolchain`` (fyan init writes the pair together). An
    adopted package keeps its own Mathlib: the project package's ``packagesDir`` is the adopted
    package's ``.lake/packages``, where its dependencies already are (one set, shared)."""
    from fyan.lean.mathlib import require_block as mathlib_require

    folder.mkdir(parents=True, exist_ok=True)
    lib = project.config.lean_lib
    mathlib = mathlib_require(project.config.lean.mathlib) if project.config.lean.mathlib else ""
    text = _template("lakefile.toml", lib=lib) + mathlib + require_block(project)
    adopted = project.config.adopt.package
    if adopted and not mathlib:  # the adopted package keeps its own Mathlib: read from its folder, never fetched again
        text = with_packages_dir(text, Path(os.path.relpath(Path(adopted) / ".lake" / "packages",
                                                            folder.resolve())).as_posix())
    (folder / "lakefile.toml").write_text(text, encoding="utf-8")
    (folder / "lean-toolchain").write_text(
        _template("lean-toolchain", toolchain=project.config.lean.toolchain), encoding="utf-8"
    )


def require_block(project: Project) -> str:
    """The ``[[require]]`` of the adopted Lake package (``[adopt] package``; Lake's TOML form of a
    local dependency: ``name`` and ``path``), or "" when the project adopts none. Its files are
    used in place, never copied or reformatted."""
    a = project.config.adopt
    if not a.package:
        return ""
    return f'\n[[require]]\nname = {json.dumps(a.package_name)}\npath = {json.dumps(a.package)}\n'


def require_adopted(project: Project) -> bool:
    """Add ``require_block`` to ``lean/lakefile.toml`` when it is not there yet (a lakefile a
    user edited keeps everything else); True when the file changed."""
    block = require_block(project)
    path = project.paths.lean / "lakefile.toml"
    if not block:
        return False
    if not path.is_file():
        write_package_config(project, project.paths.lean)
        return True
    text = path.read_text(encoding="utf-8")
    if block.strip() in text:
        return False
    path.write_text(text.rstrip("\n") + "\n" + block, encoding="utf-8")
    return True


def init_package(project: Project) -> None:
    """Create ``lean/`` from ``lake-template/`` (keeps an existing lakefile a user edited)."""
    lean = project.paths.lean
    if not (lean / "lakefile.toml").exists():
        write_package_config(project, lean)
    _write_root(project, [])


def _write_root(project: Project, modules: list[str]) -> None:
    lib = project.config.lean_lib
    text = _template("Root.lean", lib=lib, imports="\n".join(f"import {m}" for m in modules))
    root = project.paths.lean / f"{lib}.lean"
    if not root.exists() or root.read_text(encoding="utf-8") != text:
        root.parent.mkdir(parents=True, exist_ok=True)
        root.write_text(text, encoding="utf-8")


def sync_package(project: Project, store: Store, complete: list[UnitRecord] | None = None) -> list[str]:
    """Make ``lean/`` hold exactly the complete units (idempotent); returns their modules.
    ``complete``: the complete units when the caller already knows them (else computed)."""
    if not store.exists:
        return []
    lib = project.config.lean_lib
    if complete is None:
        views = store.views(project.config.scheduler.attempts_per_stage)
        records = [v.unit for v in views.values() if v.status is UnitStatus.COMPLETE]
    else:
        records = sorted(complete, key=lambda u: u.order)
    modules = []
    keep = set()
    for record in records:
        uid = record.id
        src = project.paths.unit(uid) / "Basic.lean"
        if not src.is_file():
            continue
        dest = project.paths.lean / lib / record.module / "Basic.lean"
        keep.add(record.module)
        data = src.read_bytes()
        if not dest.is_file() or dest.read_bytes() != data:
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(dest)
        modules.append(unit_module(project, record))
        _place_unit_output(project, record)
    lib_dir = project.paths.lean / lib
    if lib_dir.is_dir():
        for child in lib_dir.iterdir():
            if child.is_dir() and child.name not in keep:
                shutil.rmtree(child)
    built = project.paths.lean / BUILD_LIB / lib
    if built.is_dir():  # outputs of units that are no longer complete
        for child in built.iterdir():
            if child.is_dir() and child.name not in keep:
                _remove_outputs(child)
    if project.paths.lean.is_dir():
        _write_root(project, modules)
    return modules


def _place_unit_output(project: Project, unit: UnitRecord) -> None:
    """Put the module the completion gate compiled (``units/<unit>/Basic.olean``, published by
    the gateway with its recorded SHA-256) into the project package's outputs; remove a stale
    one when the unit has none (completed before compiled outputs were recorded: dependents then build its source)."""
    dest = olean_path(project.paths.lean, unit_module(project, unit))
    src = project.paths.unit(unit.id) / "Basic.olean"
    if src.is_file():
        place_output(dest, src.read_bytes())
    elif dest.exists():
        dest.unlink()


def _remove_outputs(folder: Path) -> None:
    for dirpath, dirnames, _ in os.walk(folder):
        os.chmod(dirpath, 0o755)
    shutil.rmtree(folder, ignore_errors=True)


#: root module path -> ((st_mtime_ns, st_size) of the file as last written here, its imports):
#: lets ``add_unit_module`` append one import without re-reading the whole root module
_ROOT_IMPORTS: dict[Path, tuple[tuple[int, int], set[str]]] = {}


def _root_imports(root: Path, lib: str) -> set[str]:
    """The root module's imports of ``<lib>.…`` modules, read as Lean reads its header
    (``fyan.lean.header``; cached while the file is unchanged)."""
    try:
        st = root.stat()
    except FileNotFoundError:
        _ROOT_IMPORTS.pop(root, None)
        return set()
    cached = _ROOT_IMPORTS.get(root)
    if cached is not None and cached[0] == (st.st_mtime_ns, st.st_size):
        return cached[1]
    text = root.read_text(encoding="utf-8")
    imports = {m for m in read_header(text).modules if m.startswith(f"{lib}.")}  # as Lean reads the header
    _ROOT_IMPORTS[root] = ((st.st_mtime_ns, st.st_size), imports)
    return imports


def add_unit_module(project: Project, unit: UnitRecord) -> str:
    """Incremental ``sync_package`` for one unit that just became complete: copy its
    ``Basic.lean`` into ``lean/`` and import it from the root module; returns the module.
    O(1) in the number of units (the full ``sync_package`` re-derives everything and runs at
    recovery): the root module's imports are cached by the file's size and modification time,
    and a new import is appended (the template ends with the import lines). Callers serialise
    calls for one project (``Gateway`` holds its package lock)."""
    lib = project.config.lean_lib
    src = project.paths.unit(unit.id) / "Basic.lean"
    module = unit_module(project, unit)
    if not src.is_file():
        return module
    dest = project.paths.lean / lib / unit.module / "Basic.lean"
    data = src.read_bytes()
    if not dest.is_file() or dest.read_bytes() != data:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(dest)
    _place_unit_output(project, unit)
    root = project.paths.lean / f"{lib}.lean"
    imports = _root_imports(root, lib)
    if module in imports:
        return module
    if not imports:
        _write_root(project, [module])
    else:
        with open(root, "a", encoding="utf-8") as fh:
            fh.write(f"import {module}\n")
    imports.add(module)
    st = root.stat()
    _ROOT_IMPORTS[root] = ((st.st_mtime_ns, st.st_size), imports)
    return module
