"""Frozen signatures: what a freeze binds, and what changed since (docs/design.md: a
certification never carries over to a changed statement).

When the semantic audit freezes a declaration, ``freeze_specs`` records

* its **normalized signature** (kind, name, binders and type with whitespace collapsed; for a
  definition also its body) and the SHA-256 of that text;
* its **bound input files** (``bound_inputs``: project-relative path → SHA-256): the unit's
  ``problem.tex`` and the ``Basic.lean`` of every upstream unit;
* with a toolchain, from the trusted inspector (``fyan.lean.inspector``) on the audited
  ``Statement.lean`` built in a gate workspace (``fyan.lakepackage.trusted``): the SHA-256 of the
  **elaborated statement** (``type_hash``: the full structure of the type, plus the value of a
  definition), the digest of every **local definition** the statement depends on
  (``bound_inputs["lean:<name>"]``), and the toolchain that elaborated it
  (``bound_inputs["lean:@toolchain"]``).

At gate time ``compare`` recomputes each of them and names exactly what changed: the source
signature, a bound file, the elaborated statement (with the toolchain change when there was
one), a local definition changed, no longer used or newly used. Any difference makes the
certification **stale**; nothing carries over silently. A freeze made without a toolchain has
no elaborated evidence; the gate then elaborates the audited ``Statement.lean`` again and uses
that as the reference (``compare``'s ``reference`` argument).

``unaudited_dependencies`` closes a way around the audit across units: the audit reads a
statement's *text*, so a declaration of an upstream unit that no audit saw (an instance of
``LE Int`` added to a proof file, say) could change what a downstream statement means while it
reads the same. A frozen statement may therefore use, from upstream units' modules, only their
frozen declarations, the projections of a frozen structure (``Foo.x``: the inspector says it is
a projection), and constants whose own type concludes in a frozen declaration (a constructor of
a frozen inductive type; an instance *for* a frozen structure). A name alone proves nothing (an
instance can be called ``Foo.anything``), so no prefix rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fyan.lean import declarations
from fyan.lean.inspector import InspectedDeclaration, InspectedLookup, MissingDeclaration
from fyan.project import Project
from fyan.state.models import FreezeRecord, UnitRecord
from fyan.state.store import Store

#: Prefix of ``bound_inputs`` keys that bind a local definition (``lean:<full name>``).
LEAN_KEY = "lean:"
#: ``bound_inputs`` key of the toolchain version that elaborated the frozen statement.
TOOLCHAIN_KEY = "lean:@toolchain"


def bound_files(project: Project, store: Store, unit: UnitRecord) -> dict[str, str]:
    """The files a freeze of ``unit`` binds: ``problem.tex`` and every upstream unit's
    ``Basic.lean`` (project-relative path → SHA-256)."""
    from fyan.lakepackage.package import upstream
    from fyan.state.gateway import sha256_file

    paths = [project.paths.unit(unit.id) / "problem.tex"]
    paths += [project.paths.unit(d.id) / "Basic.lean" for d in upstream(store, unit.id)]
    return {project.paths.rel(p): sha256_file(p) for p in paths if p.is_file()}


def elaborated_bindings(record: InspectedDeclaration | MissingDeclaration | None, toolchain_version: str | None) -> dict[str, str]:
    """``bound_inputs`` entries from an inspector record: local definitions and the toolchain."""
    if record is None or not record.found or record.statement_hash is None:
        return {}
    out = {LEAN_KEY + name: d for name, d in record.local_digests.items()}
    if toolchain_version:
        out[TOOLCHAIN_KEY] = toolchain_version
    return out


def split_bindings(bound: dict[str, str]) -> tuple[dict[str, str], dict[str, str], str | None]:
    """(files, local definitions by name, toolchain) of a freeze's ``bound_inputs``."""
    files = {k: v for k, v in bound.items() if not k.startswith(LEAN_KEY)}
    local = {k[len(LEAN_KEY):]: v for k, v in bound.items() if k.startswith(LEAN_KEY) and k != TOOLCHAIN_KEY}
    return files, local, bound.get(TOOLCHAIN_KEY)


def _short(h: str | None) -> str:
    if not h:
        return "none"
    return h[:19] + "…" if len(h) > 20 else h


@dataclass
class Comparison:
    """What changed for one frozen declaration (empty ``changes``: unchanged)."""

    decl: str
    changes: list[str] = field(default_factory=list)
    compared: list[str] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        return bool(self.changes)


def signature_change(freeze: FreezeRecord, decls: list[declarations.Declaration], where: str = "Basic.lean") -> str | None:
    """Why the frozen declaration is not in ``decls`` (the scan of ``where``) with its frozen
    signature, or None when it is. The one wording every check uses."""
    d = declarations.find(decls, freeze.decl)
    if d is None:
        return f"{freeze.decl}: not declared in {where}"
    if d.frozen_signature != freeze.normalized_signature:
        return (f"{freeze.decl}: signature changed in {where}: frozen `{freeze.normalized_signature}`, "
                f"now `{d.frozen_signature}`")
    return None


def bound_file_changes(freeze: FreezeRecord, project_root: Path) -> list[str]:
    """The bound files (``problem.tex``, upstream units) of a freeze that changed since it."""
    from fyan.state.gateway import sha256_file

    changes = []
    files, _, _ = split_bindings(freeze.bound_inputs)
    for rel, digest in sorted(files.items()):
        path = project_root / rel
        if not path.is_file():
            changes.append(f"{freeze.decl}: bound input {rel} is missing since the freeze")
        elif sha256_file(path) != digest:
            changes.append(f"{freeze.decl}: bound input {rel} changed since the freeze")
    return changes


def compare_source(freeze: FreezeRecord, decls: list[declarations.Declaration], project_root: Path) -> Comparison:
    """Compare a freeze with the candidate's source text and the bound files on disk."""
    c = Comparison(freeze.decl)
    change = signature_change(freeze, decls)
    if change:
        c.changes.append(change)
    c.compared.append("signature")
    c.changes += bound_file_changes(freeze, project_root)
    c.compared.append("bound files")
    return c


def compare_compiled(freeze: FreezeRecord, record: InspectedDeclaration | MissingDeclaration | None,
                     toolchain_version: str | None,
                     reference: InspectedDeclaration | MissingDeclaration | None = None) -> Comparison:
    """Compare a freeze with the inspector's record of the compiled declaration.

    The elaborated statement and the local definitions are compared with the freeze's own
    evidence, or, when the freeze has none (frozen without a toolchain), with ``reference``:
    the inspector's record of the audited ``Statement.lean`` elaborated now. With neither, the
    comparison fails closed.
    """
    c = Comparison(freeze.decl)
    if record is None or not record.found:
        c.changes.append(f"{freeze.decl}: not in the compiled environment")
        return c
    _, local, frozen_toolchain = split_bindings(freeze.bound_inputs)
    if freeze.type_hash is not None:
        expected, expected_local, source = freeze.type_hash, local, "the freeze"
    elif reference is not None and reference.found and reference.statement_hash is not None:
        expected, expected_local, source = reference.statement_hash, reference.local_digests, "the audited Statement.lean"
        frozen_toolchain = None
    else:
        c.changes.append(f"{freeze.decl}: no elaborated reference (frozen without a toolchain and the audited "
                         "Statement.lean could not be elaborated now)")
        return c
    if record.statement_hash != expected:
        why = ""
        if frozen_toolchain and toolchain_version and frozen_toolchain != toolchain_version:
            why = f"; the toolchain changed since the freeze ({frozen_toolchain} → {toolchain_version})"
        c.changes.append(f"{freeze.decl}: elaborated statement differs from {source} "
                         f"({_short(expected)} → {_short(record.statement_hash)}){why}")
    c.compared.append(f"elaborated statement (vs {source})")
    now = record.local_digests
    for name in sorted(set(expected_local) | set(now)):
        if name not in now:
            c.changes.append(f"{freeze.decl}: local definition {name} is no longer used by the statement")
        elif name not in expected_local:
            c.changes.append(f"{freeze.decl}: the statement now uses local definition {name}, not bound at the freeze")
        elif now[name] != expected_local[name]:
            c.changes.append(f"{freeze.decl}: local definition {name} changed since the freeze")
    c.compared.append(f"{len(expected_local)} local definition(s)")
    return c


def unaudited_dependencies(project: Project, store: Store, unit: UnitRecord,
                           record: InspectedLookup | MissingDeclaration | None, signature: str = "",
                           own_frozen: Sequence[str] = ()) -> list[str]:
    """The project constants that ``record``'s statement uses directly although no audit
    certified them (module docstring), each with why. ``signature``: the statement's frozen
    text; ``own_frozen``: the unit's own frozen (or being frozen) declarations.

    From an upstream unit's module only its frozen declarations, projections of its frozen
    structures and constants whose type concludes in a frozen declaration may be used. From the
    unit's own modules, a constant the statement *names* is visible to the audit; one it uses
    without naming it — an instance, a coercion, a default — must be frozen or conclude in a
    frozen declaration: otherwise an `instance : LE Int` written next to the statement would
    change what it means while its text reads the same."""
    from fyan.lakepackage.package import unit_module, upstream

    if not isinstance(record, InspectedLookup) or not record.found:
        return []
    lib = project.config.lean_lib
    own = {unit_module(project, unit, part) for part in ("Basic", "Statement")}
    frozen = {unit_module(project, d): [f.decl for f in store.freezes(d.id)] for d in upstream(store, unit.id)}
    mine = list(own_frozen) or [f.decl for f in store.freezes(unit.id)]
    named = set(re.findall(r"[^\s()\[\]{}⟨⟩,:]+", signature))

    out = []
    for c in record.constants:
        if not c.module.startswith(lib + "."):
            continue
        if c.module in own:
            short = c.name.rpartition(".")[2]
            written = c.name in named or short in named or any(n.endswith("." + short) for n in named)
            if c.name == record.name or c.name in mine or written or any(x in mine for x in c.conclusion):
                continue
            out.append(f"{record.name}: its statement uses {c.name} without naming it (an instance, coercion or "
                       "default of this unit that no audit certified)")
            continue
        names = frozen.get(c.module)
        if names is None:
            out.append(f"{record.name}: uses {c.name} from {c.module}, which is not an upstream unit's module")
            continue
        projection = c.projection and c.name.rpartition(".")[0] in names
        if c.name not in names and not projection and not any(x in names for x in c.conclusion):
            out.append(f"{record.name}: its statement depends on {c.name}, declared in upstream module {c.module} "
                       "but not frozen there: no audit certified what it means")
    return out


def freeze_specs(project: Project, store: Store, unit: UnitRecord, statement: str,
                 decls: dict[str, declarations.Declaration], log_dir: Path, role: str = "root",
                 discovery=None) -> tuple[list, str, list[str]]:
    """The ``FreezeSpec`` of each declaration in ``decls`` (full name → scanned declaration of
    the audited ``statement``, a rendered ``Statement.lean``), a note for the stage reason, and
    the problems that forbid freezing (``unaudited_dependencies``).

    With a toolchain (``discovery``, default: ``fyan.lean.toolchain.discover``) the statement
    is built in a gate workspace (``fyan.lakepackage.trusted``: upstream units from their recorded
    files, the statement's outputs built after theirs) and the trusted inspector reads it; the
    elaborated evidence is bound as the module docstring says. Logs go to ``log_dir``
    (``freeze-build*.log``, ``freeze-inspect.*``). Without one, or when the build or the
    inspector fails, only the text and the files are bound and the note says why (the gate then
    elaborates the audited statement itself). Never raises for a toolchain problem.
    """
    from fyan.lakepackage import trusted
    from fyan.lean.inspector import ensure_inspector
    from fyan.lakepackage.package import unit_module
    from fyan.lean.toolchain import check_pin, discover
    from fyan.state.gateway import FreezeSpec

    files = bound_files(project, store, unit)
    records: dict[str, InspectedLookup | MissingDeclaration] = {}
    disc = discovery or discover(project.config.lean, cwd=project.paths.lean)
    tc = disc.toolchain
    cfg = project.config.lean
    problems: list[str] = []
    if tc is None:
        note = f"elaborated types not recorded: {disc.problem}"
    else:
        module = unit_module(project, unit, "Statement")
        ws = None
        try:
            ws = trusted.prepare(project, store, unit, {"Statement": statement.encode("utf-8")}, purpose="freeze",
                                 toolchain=tc, log_dir=log_dir)
            pin = check_pin(tc, ws.root)
            inspector, problem = ensure_inspector(tc, pin.pin or "", cfg, log_dir) if pin.ok else (None, pin.reason)
            if inspector is None:
                note = f"elaborated types not recorded: {problem}"
            else:
                first, build = trusted.build(ws, cfg, log_dir, trusted=ws.upstream_modules, candidate=[module],
                                             name="freeze-build")
                failed = build if build is not None else first
                if build is None or not build.ok:
                    note = f"elaborated types not recorded: {failed.reason if failed else 'nothing built'}"
                else:
                    inspection = trusted.inspect(ws, inspector, cfg, log_dir, name="freeze-inspect",
                                                 modules=[module], names=list(decls), local_prefix=project.config.lean_lib)
                    if inspection.ok:
                        records = inspection.report.records
                        note = f"elaborated statements recorded with {tc.version}"
                        for name, rec in records.items():
                            problems += unaudited_dependencies(project, store, unit, rec, decls[name].frozen_signature
                                                               if name in decls else "", own_frozen=list(decls))
                    else:
                        note = f"elaborated types not recorded: {inspection.problem}"
        except (trusted.RecordedInputError, trusted.GateEnvironmentError) as e:
            note = f"elaborated types not recorded: {e}"
        finally:
            if ws is not None:
                ws.remove()
    specs = []
    for name, d in decls.items():
        rec = records.get(name)
        specs.append(FreezeSpec(
            decl=name, role=role, normalized_signature=d.frozen_signature,
            signature_hash=declarations.signature_hash(d.frozen_signature),
            type_hash=rec.statement_hash if rec is not None and rec.found else None,
            bound_inputs={**files, **elaborated_bindings(rec, tc.version if tc else None)},
        ))
    return specs, note, problems
