"""Write back: the project's verified work as a patch to the adopted package.

``export_patch`` writes one unified diff (``git apply`` / ``patch -p1`` in the package's
folder) that a maintainer can review:

* **Lean** — for every unit completed by Fyan's gate (not an adopted one) its proof module
  ``units/<unit>/Basic.lean`` becomes a new file ``<Lib>/Fyan/<Module>.lean`` of the package's
  first library ``<Lib>``, with Fyan's imports of other Fyan units rewritten to those new
  modules (imports of the package's own modules stay), and the library's root module
  ``<Lib>.lean`` imports them. Headers are read and edited as Lean parses them
  (``fyan.lean.header``: ``module``, ``prelude``, ``public``/``meta`` imports, ``import all``,
  comments), never matched as lines. A *candidate* unit (its declaration existed with ``sorry``) is
  also proved in place: the existing declaration's proof becomes ``by first | exact <copy> |
  apply <copy>`` (the copy has the same elaborated type: ``fyan.adopt.candidate``) and its file
  imports the new module, unless that would make an import cycle (then it is listed in
  ``not_proved_in_place``). Existing files are not rewritten otherwise.
* **Blueprint** — each unit's first statement in the blueprint source gets the ``\\lean`` and
  ``\\leanok`` the gate verified: a complete unit (adopted, or closed by the gate) has
  ``\\lean{<its declarations>}`` and ``\\leanok`` on its statement and proof; an incomplete
  one loses a ``\\leanok`` on its proof, and on its statement when its declaration is not
  declared (``pipeline``). Found at ``<package>/blueprint/src`` when the project's copy of the
  source matches the files there (paths in the patch are then package-relative), else the
  patch's blueprint paths are relative to the source folder given to ``fyan init`` (apply those
  there, with ``-p1``). A LeanArchitect node (``\\inputleannode``) is not edited: its
  ``\\lean`` and ``\\leanok`` are generated from the Lean attribute.

Decided from the store only (adoptions, completions, freezes), never from the blueprint text.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from pydantic import BaseModel

from fyan.adopt.package import read_package
from fyan.errors import ProjectError
from fyan.intake.catalogue import Catalogue, ProofBlock, Statement
from fyan.lean.header import add_import, imported_modules, rename_imports, split_name
from fyan.project import Project
from fyan.state.models import UnitStatus
from fyan.state.store import Store

_LEANOK = re.compile(r"[ \t]*\\leanok(?![A-Za-z@])[ \t]*\n?")
_LEAN = re.compile(r"\\lean\s*\{[^{}]*\}")
_ANCHOR = re.compile(r"\\begin\{[^{}]+\}(?:\[[^\]]*\])?(?:\s*\\label\{[^{}]*\})?(?:\s*\\lean\s*\{[^{}]*\})?")


class PatchReport(BaseModel):
    out: str
    package: str
    new_modules: list[str]
    blueprint_files: list[str]
    blueprint_base: str
    units_marked: int
    units_unmarked: int
    proved_in_place: list[str] = []
    not_proved_in_place: list[str] = []


def git_diff(rel: str, old: str | None, new: str) -> str:
    """One file's unified diff as ``git apply`` takes it (``a/<rel>``, ``b/<rel>``; ``/dev/null``
    for a new file); empty when nothing changes."""
    a = old.splitlines(keepends=True) if old is not None else []
    b = new.splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{rel}", f"b/{rel}", n=3))
    fixed = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]
    return "".join(fixed)


def _set_marks(body: str, decls: list[str] | None, leanok: bool) -> str:
    """``body`` (a statement or proof environment) with its ``\\lean`` set to ``decls`` (None:
    unchanged) and ``\\leanok`` present or absent."""
    if decls is not None:
        wanted = f"\\lean{{{', '.join(decls)}}}"
        if _LEAN.search(body):
            first = True

            def one(m: re.Match) -> str:
                nonlocal first
                keep, first = first, False
                return wanted if keep else ""
            body = _LEAN.sub(one, body)
        else:
            m = _ANCHOR.match(body)
            body = body[: m.end()] + wanted + body[m.end():] if m else body
    has = bool(_LEANOK.search(body))
    if leanok and not has:
        m = _ANCHOR.match(body)
        if m:
            body = body[: m.end()] + "\\leanok" + body[m.end():]
    elif not leanok and has:
        body = _LEANOK.sub(lambda m: "\n" if m.group(0).endswith("\n") and m.start() > 0 and body[m.start() - 1] != "\n"
                           else "", body)
    return body


def _locate(text: str, body: str, line_start: int) -> int:
    """Offset of ``body`` in ``text`` at or after line ``line_start`` (1-based); -1 if absent."""
    offset = 0
    for _ in range(max(line_start - 1, 0)):
        nl = text.find("\n", offset)
        if nl < 0:
            break
        offset = nl + 1
    at = text.find(body, offset)
    return at if at >= 0 else text.find(body)


def _blueprint_base(project: Project, catalogue: Catalogue, package: Path) -> tuple[Path | None, str]:
    """Where the project's copy of the source sits in ``package``: its ``blueprint/src`` folder,
    or the package folder itself (a source copied from there: ``[intake] source_origin``, a
    LeanArchitect blueprint's files below the package), when every file read matches; else None."""
    for base, prefix in ((package / "blueprint" / "src", "blueprint/src/"), (package, "")):
        if all((base / rel).is_file() and (base / rel).read_bytes() == (project.paths.source / rel).read_bytes()
               for rel in catalogue.files):
            return base, prefix
    return None, ""


def export_patch(project: Project, store: Store, out: Path | None = None) -> PatchReport:
    """Write the patch (module docstring) to ``out`` (default ``<project>/export/adoption.patch``).
    Raises ``ProjectError`` when the project adopts no package or was not ingested."""
    if not project.config.adopt.package:
        raise ProjectError(f"{project.paths.root}: adopts no Lake package, so there is nothing to write back to",
                           hint="adopt one first: `fyan adopt <project> --lean-project <folder>`")
    raw = store.meta("catalogue") if store.exists else None
    if raw is None:
        raise ProjectError(f"{project.paths.root}: the project has not been ingested yet", hint="run `fyan run` first")
    pkg = read_package(project.config.adopt.package)
    catalogue = Catalogue.model_validate_json(raw)
    units = store.units()
    views = store.views(project.config.scheduler.attempts_per_stage)
    adoptions = store.adoptions()
    lib, fyan_lib = pkg.libs[0], project.config.lean_lib
    parts: list[str] = []

    # -- Lean: units closed by Fyan's gate become modules of the package
    closed = [u for u in units if views[u.id].status is UnitStatus.COMPLETE and not views[u.id].adopted
              and (project.paths.unit(u.id) / "Basic.lean").is_file()]
    renamed = {f"{fyan_lib}.{u.module}.Basic": f"{lib}.Fyan.{u.module}" for u in closed}
    new_modules = []
    for u in closed:
        module = renamed[f"{fyan_lib}.{u.module}.Basic"]
        text = rename_imports((project.paths.unit(u.id) / "Basic.lean").read_text(encoding="utf-8"), renamed)
        rel = "/".join(module.split(".")) + ".lean"
        if (pkg.folder / rel).exists():
            raise ProjectError(f"{pkg.folder / rel} exists already: the patch would overwrite it",
                               hint="rename or remove that file in the package, then export again")
        parts.append(git_diff(rel, None, text))
        new_modules.append(module)
    texts = {renamed[f"{fyan_lib}.{u.module}.Basic"]: rename_imports(
        (project.paths.unit(u.id) / "Basic.lean").read_text(encoding="utf-8"), renamed) for u in closed}
    wired, not_wired = _wire_candidates(project, store, pkg.folder, closed, adoptions, renamed, fyan_lib, texts, parts)
    root = pkg.folder / f"{lib}.lean"
    if new_modules and root.is_file():
        old = root.read_text(encoding="utf-8")
        new = old
        for m in new_modules:
            new = add_import(new, m)
        parts.append(git_diff(f"{lib}.lean", old, new))

    # -- blueprint: \lean and \leanok as the gate verified them
    base_dir, prefix = _blueprint_base(project, catalogue, pkg.folder)
    edits: dict[str, list[tuple[Statement | ProofBlock, str, str]]] = {}
    marked = unmarked = 0
    for u in units:
        view, adoption = views[u.id], adoptions.get(u.id)
        stmt = catalogue.statements[u.statements[0]]
        if stmt.lean_node is not None:  # a LeanArchitect node: its marks are generated from Lean, not edited
            continue
        complete = view.status is UnitStatus.COMPLETE
        if complete:
            decls = list(dict.fromkeys(f.decl for f in store.freezes(u.id) if f.role in ("root", "bridge")))
            decls = wired.get(u.id, decls)  # a candidate proved in place keeps its existing name
            new_stmt = _set_marks(stmt.body, decls or None, True)
            new_proof = _set_marks(stmt.proof.body, None, True) if stmt.proof else None
        else:
            declared = adoption is not None and adoption.outcome == "candidate"
            new_stmt = _set_marks(stmt.body, None, stmt.leanok and declared)
            new_proof = _set_marks(stmt.proof.body, None, False) if stmt.proof else None
        for block, new in ((stmt, new_stmt), (stmt.proof, new_proof)):
            if block is not None and new is not None and new != block.body:
                edits.setdefault(block.provenance.file, []).append((block, block.body, new))
                if complete:
                    marked += 1
                else:
                    unmarked += 1
    files = []
    for rel, items in sorted(edits.items()):
        old = (project.paths.source / rel).read_text(encoding="utf-8")
        text = old
        located = sorted(((_locate(old, body, b.provenance.line_start), body, new) for b, body, new in items),
                         key=lambda x: -x[0])
        for at, body, new in located:
            if at >= 0:
                text = text[:at] + new + text[at + len(body):]
        if text != old:
            parts.append(git_diff(prefix + rel, old, text))
            files.append(prefix + rel)
    out = out or project.paths.root / "export" / "adoption.patch"
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Fyan write-back for {pkg.folder} ({pkg.name}): apply in that folder with `git apply` or "
              f"`patch -p1`.\n" + ("" if base_dir else "# The blueprint paths are relative to the blueprint's source "
                                    "folder (the folder of the file given to `fyan init --source`).\n"))
    out.write_text(header + "".join(parts), encoding="utf-8")
    return PatchReport(out=str(out), package=str(pkg.folder), new_modules=new_modules, blueprint_files=files,
                       blueprint_base=str(base_dir or "the source folder of `fyan init`"),
                       units_marked=marked, units_unmarked=unmarked, proved_in_place=sorted(n for v in wired.values()
                                                                                              for n in v),
                       not_proved_in_place=not_wired)


def _imports(text: str) -> list[str]:
    """The modules ``text`` imports, read as Lean reads its header (``fyan.lean.header``)."""
    return imported_modules(text)


def _reaches(start: list[str], target: str, package: Path, texts: dict[str, str]) -> bool:
    """Does importing ``start`` (transitively, through the package's sources and the new
    modules ``texts``) import ``target``?"""
    seen, todo = set(), list(start)
    while todo:
        m = todo.pop()
        if m == target:
            return True
        if m in seen:
            continue
        seen.add(m)
        if m in texts:
            todo += _imports(texts[m])
        else:
            path = package.joinpath(*split_name(m)).with_suffix(".lean")
            if path.is_file():
                todo += _imports(path.read_text(encoding="utf-8", errors="replace"))
    return False


def _body_start(span: str) -> int:
    """Offset of the top-level ``:=`` of a declaration's text (-1 if none)."""
    depth = 0
    for i, ch in enumerate(span):
        if ch in "([{⦃⟨":
            depth += 1
        elif ch in ")]}⦄⟩":
            depth -= 1
        elif depth == 0 and span.startswith(":=", i):
            return i
    return -1


def _wire_candidates(project: Project, store: Store, package: Path, closed, adoptions, renamed: dict[str, str],
                     fyan_lib: str, texts: dict[str, str], parts: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """For each candidate unit Fyan's gate closed: replace the unfinished proof of its existing
    declaration by the proved copy (same elaborated type, checked at its audit:
    ``fyan.adopt.candidate``) — ``by first | exact <copy> | apply <copy>`` — and import the
    copy's new module there. Skipped (listed with the reason) when the unit has several
    declarations, the declaration's source is not found, or the import would make a cycle.
    Returns (unit id -> the existing names now proved, the skipped ones)."""
    from fyan.lean import declarations

    wired: dict[str, list[str]] = {}
    skipped: list[str] = []
    edits: dict[Path, str] = {}
    for u in closed:
        record = adoptions.get(u.id)
        if record is None or record.outcome != "candidate":
            continue
        existing = [d for d in record.evidence.get("decls", []) if d.get("found")]
        roots = [f.decl for f in store.freezes(u.id) if f.role == "root"]
        if len(existing) != 1 or len(roots) != 1:
            skipped.append(f"{u.id}: {len(existing)} existing declaration(s), {len(roots)} root(s): left as new module")
            continue
        name, module = existing[0]["name"], existing[0].get("module") or ""
        new_module = renamed[f"{fyan_lib}.{u.module}.Basic"]
        path = package / ("/".join(module.split(".")) + ".lean")
        if "." not in module:  # a library's root module: its imports are the patch's to extend already
            skipped.append(f"{u.id}: {name} is in the root module {module}: left as new module")
            continue
        if not path.is_file() or _reaches(_imports(texts[new_module]), module, package, texts):
            skipped.append(f"{u.id}: {name} " + ("has no source file" if not path.is_file() else
                                                  f"cannot import {new_module} (import cycle)"))
            continue
        text = edits.get(path) or path.read_text(encoding="utf-8")
        decl = declarations.find(declarations.scan(text), name)
        lines = text.split("\n")
        if decl is None:
            skipped.append(f"{u.id}: {name} not found in {path.name}")
            continue
        head = sum(len(x) + 1 for x in lines[: decl.line_start - 1])
        end = sum(len(x) + 1 for x in lines[: decl.line_end]) - 1
        at = _body_start(text[head:end])
        if at < 0:
            skipped.append(f"{u.id}: no := in {name}")
            continue
        copy = roots[0]
        text = text[: head + at] + f":= by\n  first\n  | exact {copy}\n  | apply {copy}" + text[end:]
        text = add_import(text, new_module)
        edits[path] = text
        wired[u.id] = [name]
    for path, text in edits.items():
        rel = path.relative_to(package).as_posix()
        parts.append(git_diff(rel, path.read_text(encoding="utf-8"), text))
    return wired, skipped
