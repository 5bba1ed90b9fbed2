"""``fyan verify``: re-run the completion gate of every complete unit, from scratch.

A unit is complete when the state store records a succeeded gate run (``fyan.state.lifecycle``).
Under confinement no agent can write the store, but a project run with ``[lean] sandbox =
"off"`` — or a store restored from elsewhere, or a toolchain that changed — deserves a check that
does not trust the record: ``verify_project`` runs the gate again for each complete unit, in a
fresh gate workspace (``fyan.lakepackage.trusted``), from the recorded, hash-checked artifacts, with the
trusted inspector, and lists every unit whose completion does not reproduce, with the failing
checks. It writes nothing to the store (it decides nothing): logs and reports go to
``.fyan/logs/verify/<time>/<unit>/``. A unit complete by adoption has no gate run: the adopted package is built and inspected again
(``fyan.adopt.run.reverify_adoptions``) and the unit is listed when its declaration is no longer
proved or its statement is no longer the one frozen at adoption.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from pydantic import BaseModel, Field

from fyan.gates.completion import run_gate
from fyan.models.gate_report import GateReport, report_json
from fyan.lean.toolchain import Discovery, discover
from fyan.project import Project
from fyan.state.models import UnitStatus
from fyan.state.store import Store


class UnitVerification(BaseModel):
    unit: str
    reproduced: bool
    reason: str
    failing_checks: list[str] = Field(default_factory=list)
    log_dir: str


class Verification(BaseModel):
    """The outcome of ``verify_project``: one entry per complete unit, in dependency order."""

    project: str
    units: list[UnitVerification]
    log_dir: str
    elapsed_s: float

    @property
    def not_reproduced(self) -> list[UnitVerification]:
        return [u for u in self.units if not u.reproduced]


def verify_project(project: Project, store: Store, *, only: set[str] | None = None,
                   discovery: Discovery | None = None,
                   on_unit: Callable[[UnitVerification, GateReport], None] | None = None) -> Verification:
    """Re-run the gate of every complete unit (or of ``only``, which must be complete) as the
    module docstring says; ``on_unit`` is called after each (progress). Never raises for a
    failing gate: a unit that does not pass again is listed with the failing checks."""
    start = time.monotonic()
    views = store.views(project.config.scheduler.attempts_per_stage)
    # units complete by adoption have no gate run to repeat: their package is inspected again
    adopted = [v.unit.id for v in views.values() if v.status is UnitStatus.COMPLETE and v.adopted
               and (only is None or v.unit.id in only)]
    complete = [v.unit for v in views.values() if v.status is UnitStatus.COMPLETE and not v.adopted]
    complete.sort(key=lambda u: (u.layer, u.order))
    if only is not None:
        complete = [u for u in complete if u.id in only]
    root = project.paths.logs / "verify" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    disc = discovery or discover(project.config.lean, cwd=project.paths.lean)
    results = []
    for unit in complete:
        log_dir = root / unit.id
        report = run_gate(project, store, unit, log_dir, disc)
        (log_dir / "report.json").write_bytes(report_json(report))
        failing = [c.name for c in report.failures]
        entry = UnitVerification(
            unit=unit.id, reproduced=report.passed,
            reason="the completion gate passes again" if report.passed else report.summary(),
            failing_checks=failing, log_dir=project.paths.rel(log_dir))
        results.append(entry)
        if on_unit is not None:
            on_unit(entry, report)
    if adopted:
        from fyan.adopt.run import reverify_adoptions

        log_dir = root / "adoption"
        for uid, (holds, why) in reverify_adoptions(project, store, adopted, log_dir).items():
            results.append(UnitVerification(unit=uid, reproduced=holds, reason=why, log_dir=project.paths.rel(log_dir)
                                            if log_dir.exists() else ""))
    return Verification(project=project.name, units=results, log_dir=project.paths.rel(root) if results else "",
                        elapsed_s=round(time.monotonic() - start, 3))


def render(v: Verification) -> str:
    """The human form of a verification."""
    if not v.units:
        return f"{v.project}: no complete unit to verify."
    bad = v.not_reproduced
    lines = [f"{v.project}: {len(v.units) - len(bad)}/{len(v.units)} complete unit(s) reproduce their completion "
             f"({v.elapsed_s}s; logs {v.log_dir})"]
    for u in bad:
        lines.append(f"  NOT REPRODUCED {u.unit}: {', '.join(u.failing_checks)}")
        lines.append(f"    {u.reason[:400]}")
    if bad:
        lines.append("A unit whose completion does not reproduce is not trustworthy: inspect its report "
                     "(`fyan gate <project> <unit>`) before relying on it.")
    return "\n".join(lines)


__all__ = ["Verification", "UnitVerification", "verify_project", "render"]
