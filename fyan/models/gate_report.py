"""The gate's result types, one home below both the completion gate and the shadow gate.

``CheckResult`` is one check with its status, reason and evidence; ``GateReport`` the verdict of a
completion gate run with every check (``fyan.gates.completion`` fills it, ``fyan.shadow.gate``
adds ``shadow_alignment``, ``fyan gate`` and ``fyan verify`` print it, the stage flow keeps it as
``units/<unit>/gate/report.json``). Neither gate imports the other.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field


class CheckResult(BaseModel):
    name: str
    status: Literal["pass", "fail", "unavailable"]
    required: bool = True
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "pass"


class GateReport(BaseModel):
    """The gate's verdict with every check, its evidence and its reason.

    ``toolchain``: what ``lake --version`` said (None: no toolchain); ``toolchain_pin``: the
    workspace's ``lean-toolchain``; ``toolchain_trust``: whether that toolchain passed ``fyan
    selftest`` (``fyan.trust.record``) — or was trusted unproven (``[lean]
    trust_without_selftest = true``, stated in every report); ``sandbox``: how model-written code was confined — or that it
    was not (``[lean] sandbox = "off"``, stated in every report); ``inspector``: the trusted
    inspector used (its folder and SHA-256); ``workspace``: the gate-owned workspace the build ran
    in; ``log_dir``: where the build, inspector and checker logs of this run are.
    ``environment_problem``: why Lean could not run here at all (no toolchain, a wrong or missing
    pin, a broken Lake package, a sandbox refusal, no inspector): no candidate can fix that, so
    the stage flow blocks the unit instead of asking the Formalizer again. ``environment_transient``:
    it came from a crashed or killed Lean process or inspector, or a missing binary (retried
    with backoff and never charged to the proof: the next run may not meet it).
    """

    unit: str
    passed: bool
    roots: list[str]
    checks: list[CheckResult]
    toolchain: str | None = None
    toolchain_pin: str | None = None
    toolchain_trust: str | None = None
    sandbox: str | None = None
    inspector: str | None = None
    workspace: str | None = None
    log_dir: str | None = None
    environment_problem: str | None = None
    #: the environment problem is a crash, a kill or a missing binary another run may not meet
    #: (retried in the same attempt: ``fyan.gates.stages.run_gate_retrying``), not configuration
    environment_transient: bool = False
    created_at: float
    #: a passing gate's compiled module (``fyan.lakepackage.trusted.module_outputs``: ``Basic.olean``
    #: as its build wrote it and ``Basic.olean.json``, base64): the gateway records them under
    #: ``units/<unit>/`` and dependents read the ``.olean`` instead of compiling the unit again,
    #: so each complete unit is compiled once; neither is written to ``report.json`` (the artifacts record the SHA-256)
    module_outputs_b64: dict[str, str] | None = None
    module_olean_sha256: str | None = None

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    @property
    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.required and not c.passed]

    def summary(self) -> str:
        if self.passed:
            return "all required checks passed"
        return "; ".join(f"{c.name}: {c.reason}" for c in self.failures)


def report_json(report: GateReport) -> bytes:
    return json.dumps(report.model_dump(mode="json", exclude={"module_outputs_b64", "module_olean_sha256"}), indent=2, sort_keys=False).encode("utf-8") + b"\n"


def report_text(report: GateReport) -> str:
    """The human form of a report (``fyan gate``): the verdict, the context, one line per check
    with its reason, and the key evidence under it."""
    lines = [f"Completion gate for {report.unit}: {'PASSED' if report.passed else 'NOT PASSED'}"]
    lines.append(f"  roots: {', '.join(report.roots) or '(none frozen)'}")
    pin = f"; lean-toolchain: {report.toolchain_pin}" if report.toolchain_pin else ""
    lines.append(f"  toolchain: {report.toolchain or 'none'}{pin}")
    if report.toolchain_trust:
        lines.append(f"  selftest: {report.toolchain_trust}")
    if report.sandbox:
        lines.append(f"  sandbox: {report.sandbox}")
    if report.inspector:
        lines.append(f"  inspector: {report.inspector}")
    if report.log_dir:
        lines.append(f"  logs: {report.log_dir}")
    for c in report.checks:
        mark = {"pass": "ok  ", "fail": "FAIL", "unavailable": "n/a "}[c.status]
        lines.append(f"  [{mark}] {c.name}{'' if c.required else ' (not required)'}: {c.reason}")
        ev = c.evidence
        if c.name == "build" and "command" in ev:
            lines.append(f"         $ {ev['command']}  (exit {ev['exit_code']}, {ev['duration_s']} s, "
                         f"{'sandboxed' if ev.get('sandboxed') else 'not sandboxed'}; log {ev.get('log')})")
        if c.name == "axiom_audit" and ev.get("axioms"):
            for root, axioms in ev["axioms"].items():
                lines.append(f"         {root}: [{', '.join(axioms)}]")
        if c.name == "sorry_free" and "sorry_warnings" in ev:
            lines.append(f"         sorry warnings: {ev['sorry_warnings']}; sorryAx in: "
                         f"{', '.join(ev['declarations_with_sorryAx']) or 'none'}")
        if c.name in ("source_lints", "environment_policy") and ev.get("findings"):
            lines += [f"         {f}" for f in ev["findings"][:10]]
    return "\n".join(lines)
