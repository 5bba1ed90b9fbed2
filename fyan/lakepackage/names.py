"""Do these declaration names exist in the unit's environment? (Planner citations, Curator skills.)

Models propose names of existing lemmas (``cites`` of a lemma-DAG node, ``lemmas`` of a skill);
before anything uses them, code checks that they exist:

* **with a toolchain** — in the compiled environment, through the trusted inspector
  (``fyan.lean.inspector``): a gate workspace (``fyan.lakepackage.trusted``) holds the upstream units'
  recorded files (and the unit's own recorded ``Basic.lean`` for a complete unit), they are
  built, and the inspector, importing them and ``[lean] extra_imports``, reports ``found`` for
  each candidate name. A name is tried as written and qualified by every namespace the unit's
  files open (upstream units, the unit's own). Lean core and imported libraries are thus
  covered.
* **without a toolchain** — against the declarations of the upstream units' published
  ``Basic.lean`` (and the unit's own), scanned by ``fyan.lean.declarations``. Library names
  cannot be confirmed this way and count as missing: a check that cannot see the environment
  fails closed, and the unit cannot pass the completion gate without a toolchain
  anyway.

When the environment cannot be built (a build or the inspector fails) every name counts as
missing and ``problem`` says why. Adoption looks names up in an existing, built Lake package the
same way (``fyan.lean.inspector.run_inspector`` with ``names`` and ``imports``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from fyan.lean import declarations
from fyan.lakepackage import trusted
from fyan.lean.inspector import ensure_inspector
from fyan.lakepackage.package import unit_module, unit_namespace, upstream
from fyan.lean.toolchain import Discovery, check_pin, discover
from fyan.project import Project
from fyan.state.models import UnitRecord
from fyan.state.store import Store


class NameCheck(BaseModel):
    method: Literal["lean", "upstream"]
    found: dict[str, str] = Field(default_factory=dict, description="name as given -> full name in the environment")
    missing: list[str] = Field(default_factory=list)
    problem: str | None = Field(default=None, description="Why the environment could not be consulted")

    def describe(self) -> str:
        where = "in the compiled environment (Lean)" if self.method == "lean" else "among the upstream units' declarations (no Lean toolchain)"
        return where + (f"; {self.problem}" if self.problem else "")


def _namespaces(project: Project, store: Store, unit: UnitRecord) -> list[str]:
    return [unit_namespace(project, unit)] + [unit_namespace(project, d) for d in upstream(store, unit.id)]


def candidates(name: str, namespaces: list[str]) -> list[str]:
    """Full names ``name`` may denote where ``namespaces`` are open (``_root_.`` is absolute)."""
    if name.startswith("_root_."):
        return [name[len("_root_."):]]
    return [name] + [f"{ns}.{name}" for ns in namespaces]


def check_names(
    project: Project, store: Store, unit: UnitRecord, names: list[str], *, log_dir: Path,
    include_self: bool = False, discovery: Discovery | None = None,
) -> NameCheck:
    """Check ``names`` for ``unit`` (module docstring). ``include_self``: the unit is complete
    and its own declarations count (the Curator)."""
    names = list(dict.fromkeys(names))
    disc = discovery or discover(project.config.lean)
    spaces = _namespaces(project, store, unit)
    if disc.toolchain is None:
        return _check_upstream(project, store, unit, names, spaces, include_self)
    if not names:
        return NameCheck(method="lean")
    cfg = project.config.lean
    tc = disc.toolchain
    direct = {d.depends_on for d in store.deps(unit.id)}
    imports = [unit_module(project, d) for d in upstream(store, unit.id) if d.id in direct]
    tried = {n: candidates(n, spaces) for n in names}
    probe_names = list(dict.fromkeys(c for cs in tried.values() for c in cs))
    ws = None
    try:
        files = {"Basic": trusted.recorded_bytes(project, store, unit.id, "Basic.lean")} if include_self else {}
        ws = trusted.prepare(project, store, unit, files, purpose="names", toolchain=tc, log_dir=log_dir)
        pin = check_pin(tc, ws.root)
        if not pin.ok:
            return NameCheck(method="lean", missing=names, problem=pin.reason)
        inspector, why = ensure_inspector(tc, pin.pin or "", cfg, log_dir)
        if inspector is None:
            return NameCheck(method="lean", missing=names, problem=f"no trusted inspector: {why}")
        own = [unit_module(project, unit)] if include_self else []
        first, build = trusted.build(ws, cfg, log_dir, trusted=ws.upstream_modules, candidate=own,
                                     name="names-build")
        failed = next((b for b in (first, build) if b is not None and not b.ok), None)
        if failed is not None:
            return NameCheck(method="lean", missing=names,
                             problem=f"could not build the environment to look names up: {failed.reason}")
        inspection = trusted.inspect(ws, inspector, cfg, log_dir, name="names-inspect",
                                     imports=imports + own + list(cfg.extra_imports) or ["Init"], names=probe_names)
    except (trusted.RecordedInputError, trusted.GateEnvironmentError) as e:
        return NameCheck(method="lean", missing=names, problem=str(e))
    finally:
        if ws is not None:
            ws.remove()
    if not inspection.ok:
        return NameCheck(method="lean", missing=names, problem=f"the inspector could not look names up: {inspection.problem}")
    records = inspection.report.records
    check = NameCheck(method="lean")
    for n, cs in tried.items():
        hit = next((c for c in cs if records.get(c) is not None and records[c].found), None)
        if hit is None:
            check.missing.append(n)
        else:
            check.found[n] = hit
    return check


def _check_upstream(project: Project, store: Store, unit: UnitRecord, names: list[str], spaces: list[str],
                    include_self: bool) -> NameCheck:
    known: set[str] = set()
    units = upstream(store, unit.id) + ([unit] if include_self else [])
    for dep in units:
        path = project.paths.unit(dep.id) / "Basic.lean"
        if path.is_file():
            known |= {d.full_name for d in declarations.scan(path.read_text(encoding="utf-8")) if d.full_name}
    check = NameCheck(method="upstream")
    for n in names:
        hit = next((c for c in candidates(n, spaces) if c in known), None)
        if hit is None:
            check.missing.append(n)
        else:
            check.found[n] = hit
    return check
