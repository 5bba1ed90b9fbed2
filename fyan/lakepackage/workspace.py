"""Per-unit proving workspaces (``workspaces/<unit>/``): where agents work.

A workspace is a Lake package of its own: the project's ``lakefile.toml`` with the library
narrowed to the unit's namespace (``fyan.lakepackage.package.workspace_lakefile``), the project's
``lean-toolchain``, and the unit's own modules (its candidate files) — nothing else of the
project's sources. Each upstream unit the unit imports (transitively) is read compiled: its
``.lake/build/lib/lean/<Lib>/<Unit>/Basic.olean`` is a link to the project package's output,
which the completion gate compiled once when that unit completed; the project
package (``lean/``) is bound read-only in the sandbox, so no agent can change those outputs, and
the gate never reads this folder anyway. An upstream unit without a recorded output (completed
before compiled outputs were recorded) is the exception: its source is copied here and built (its namespace joins the
library's roots).

A command agent edits files there (and may run ``lake build`` itself: the narrowed lakefile
and the links make that work). The dependencies (Mathlib) are the project package's one set,
fetched once by Fyan's trusted step (``fyan.lakepackage.fetch``) and read in place: the workspace's
``lakefile.toml`` sets Lake's ``packagesDir`` to the project package's ``.lake/packages``
(a relative path) and the project's ``lake-manifest.json`` is copied beside it, so Lake finds
every dependency already materialized at the manifest's revision and never creates a
``.lake/packages`` here — no workspace holds or builds a copy of Mathlib. The Formalizer's feedback
compiles (``compile_candidate``) take the gate's path: plain ``lean`` with the same
``LeanSetup``, upstream units read from the project package's outputs (the gate's own ``.olean``
files), output into ``.fyan-build/out/`` (on no search path), confined with writes limited to
``.fyan-build/`` — so a candidate that compiles here compiles the same way at the gate. Nothing
the gateway decides on is built here: agents can leave anything in this folder, so decisions use
the gate's own workspaces (``fyan.lakepackage.trusted``).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from fyan.sandbox import safefile
from fyan.lean.compile import CompileResult, LeanSetup, compile_module
from fyan.lakepackage.package import (
    BUILD_LIB, olean_path, packages_dir, unit_module, unit_namespace, upstream, with_packages_dir, workspace_lakefile,
)
from fyan.sandbox.runner import project_confinement
from fyan.project import Project
from fyan.state.models import UnitRecord
from fyan.state.store import Store


@dataclass(frozen=True)
class Workspace:
    root: Path
    lib: str
    #: upstream modules without a compiled output in the project package (their source is here)
    legacy: tuple[str, ...] = ()

    def module_file(self, module: str) -> Path:
        return self.root.joinpath(*module.split(".")).with_suffix(".lean")

    @property
    def lakefile(self) -> Path:
        return self.root / "lakefile.toml"


def prepare_workspace(project: Project, unit: UnitRecord, files: dict[str, str], *, store: Store) -> Workspace:
    """(Re)build ``workspaces/<unit>/`` (module docstring) with the candidate ``files`` (part
    name → Lean text, e.g. ``{"Basic": ...}``) and links to the compiled upstream modules of
    ``unit`` (``store``: where its dependencies are read). Keeps ``.lake/`` (the build cache)
    between attempts. Raises ``fyan.lakepackage.package.LakefileError`` when the project's
    ``lakefile.toml`` has no table for the library, ``OSError`` when the folder cannot be
    written."""
    lib = project.config.lean_lib
    pkg = project.paths.lean
    root = project.paths.workspace(unit.id)
    root.mkdir(parents=True, exist_ok=True)
    _drop_links(root, keep={})
    compiled: dict[str, Path] = {}
    sources: dict[str, Path] = {}
    for dep in upstream(store, unit.id):
        module = unit_module(project, dep)
        output = olean_path(pkg, module)
        if output.is_file():
            compiled[module] = output
        elif (pkg / lib / dep.module / "Basic.lean").is_file():
            sources[unit_namespace(project, dep)] = pkg / lib / dep.module / "Basic.lean"
    roots = [unit_namespace(project, unit), *sources]
    shared = shared_packages_dir(pkg, root)
    if (pkg / "lakefile.toml").is_file():
        text = with_packages_dir(workspace_lakefile(safefile.read_text(pkg / "lakefile.toml"), lib, roots), shared)
        if not _holds(root / "lakefile.toml", text):  # whatever an agent left there is replaced, never read
            safefile.write_text(root / "lakefile.toml", text, replace_folder=True)
    if (pkg / "lean-toolchain").is_file():
        safefile.copy_file(pkg / "lean-toolchain", root / "lean-toolchain", replace_folder=True)
    manifest = shared_manifest(pkg, shared)
    if manifest is not None and not _holds(root / "lake-manifest.json", manifest):
        safefile.write_text(root / "lake-manifest.json", manifest, replace_folder=True)
    lib_dir = root / lib
    own = lib_dir / unit.module
    if lib_dir.is_dir():  # only the unit's own modules (and sources of uncompiled upstream units)
        for child in lib_dir.iterdir():
            if child != own:
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    for ns, src in sources.items():
        dest = root.joinpath(*ns.split("."), "Basic.lean")
        dest.parent.mkdir(parents=True, exist_ok=True)
        safefile.copy_file(src, dest, replace_folder=True)
    _link_outputs(root, lib, [unit.module, *(ns.removeprefix(lib + ".") for ns in sources)], compiled)
    ws = Workspace(root, lib, tuple(f"{ns}.Basic" for ns in sources))
    for part, text in files.items():
        path = ws.module_file(unit_module(project, unit, part))
        path.parent.mkdir(parents=True, exist_ok=True)
        safefile.write_text(path, text, replace_folder=True)
    return ws


def clear_build(ws: Workspace) -> None:
    """Remove the workspace's build folder (``.fyan-build``; a link or file of that name is
    unlinked, never followed). A compile whose result Fyan decides on (a re-plan's refutation)
    clears it first: its ``upstream/`` folder is the first on the compile's search path, and an
    agent working here can leave an ``.olean`` there (an ``Init.olean`` declaring an axiom, read
    in place of the toolchain's: docs/lean-contract.md)."""
    build = ws.root / ".fyan-build"
    if build.is_symlink() or build.is_file():
        build.unlink()
    elif build.is_dir():
        shutil.rmtree(build)


def shared_packages_dir(package: Path, root: Path) -> str | None:
    """The project package's dependency folder (``fyan.lakepackage.package.packages_dir``) as a path
    relative to the Lake package in ``root`` (Lake joins ``packagesDir`` to the package folder),
    or None when there are no fetched dependencies."""
    packages = packages_dir(package)
    if not packages.is_dir():
        return None
    return Path(os.path.relpath(packages.resolve(), root.resolve())).as_posix()


def shared_manifest(package: Path, packages_dir: str | None) -> str | None:
    """The project package's ``lake-manifest.json`` with its ``packagesDir`` set to
    ``packages_dir`` (None when the package has no readable manifest or nothing is fetched)."""
    if packages_dir is None:
        return None
    try:
        data = json.loads(safefile.read_text(package / "lake-manifest.json"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    data["packagesDir"] = packages_dir
    return json.dumps(data, indent=1) + "\n"


def _holds(path: Path, text: str) -> bool:
    """``path`` is a regular file (under the cap) holding ``text``; a FIFO, device, link, folder
    or oversized file in its place is not (and is not read)."""
    try:
        return safefile.read_text(path) == text
    except (OSError, UnicodeDecodeError):
        return False


def _drop_links(root: Path, keep: dict[Path, Path]) -> None:
    """Remove every symbolic link in ``root`` but those of ``keep`` (link -> its only allowed
    target), without following any. An agent may leave links in its workspace; this code
    writes and deletes there unconfined, so a followed link would carry that out of the
    workspace (into ``units/``, the project's outputs, the user's files). The links Fyan wants
    are made again afterwards."""
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in [*dirnames, *filenames]:
            path = here / name
            if path.is_symlink() and keep.get(path) != Path(os.readlink(path)):
                path.unlink()
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]


def _link_outputs(root: Path, lib: str, built_here: list[str], compiled: dict[str, Path]) -> None:
    """Make ``root``'s build folder hold, besides the outputs of modules built here
    (``built_here``: unit module components under ``<Lib>``), exactly one link per compiled
    upstream module (to the project package's read-only output)."""
    built = root / BUILD_LIB / lib
    wanted = {olean_path(root, m): target.resolve() for m, target in compiled.items()}
    if built.is_dir():
        for dirpath, _, filenames in os.walk(built):
            here = Path(dirpath)
            if any(here == built / m or built / m in here.parents for m in built_here):
                continue
            for name in filenames:
                path = here / name
                if path not in wanted or not path.is_symlink() or Path(os.readlink(path)) != wanted[path]:
                    path.unlink()
    for path, target in wanted.items():
        if not path.is_symlink():
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, path)


def compile_candidate(project: Project, ws: Workspace, setup: LeanSetup, module: str, log_dir: Path,
                      name: str) -> CompileResult:
    """Compile ``module`` of the workspace as the gate would (module docstring): upstream units
    without an output first (into ``.fyan-build/upstream/``), then ``module`` into
    ``.fyan-build/out/``, searching those, then the project package's outputs, then the
    dependencies. Returns the first failure, else the module's result (logs in ``log_dir``)."""
    cfg = project.config.lean
    build = ws.root / ".fyan-build"
    upstream_out, out = build / "upstream", build / "out"
    search = [upstream_out, (project.paths.lean / BUILD_LIB).resolve()]
    confinement = project_confinement(project.paths.root, [build], toolchain=None, lake=None,
                                      read_only=[], extra_readable=[ws.root, *setup.readable(),
                                                                    *(Path(p).expanduser() for p in cfg.sandbox_readable)])
    for i, legacy in enumerate(ws.legacy):
        first = compile_module(setup, source_root=ws.root, module=legacy, out_root=upstream_out, search_path=search,
                               config=cfg, log_dir=log_dir, name=f"{name}-upstream-{i}", confinement=confinement)
        if not first.ok:
            return first
    return compile_module(setup, source_root=ws.root, module=module, out_root=out, search_path=search, config=cfg,
                          log_dir=log_dir, name=name, confinement=confinement)
