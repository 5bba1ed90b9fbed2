"""The semantic audit: does the Lean statement say what the document states? Its check
re-derives the verdict and freezes the certified statements."""

from __future__ import annotations

from fyan.stages import StageSpec

SPEC = StageSpec(
    name="audit",
    order=30,
    summary="semantic audit of the Lean statement against the document",
    outputs=("audit/record.json",),
    agent="fyan.agents.stages:audit",
    check="fyan.gates.stages:check_audit",
    inputs="fyan.audit.decide:earlier_verdicts",
)

