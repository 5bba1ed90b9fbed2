"""The semantic audit: does the Lean statement say what the document states? Its check
re-derives the verdict and freezes the certified statements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fyan.stages import StageSpec

SPEC = StageSpec(
    name="audit",
    order=30,
    summary="semantic audit of the Lean statement against the document",
    outputs=("audit/record.json",),
    agent="fyan.agents.stages:audit",
    check="fyan.gates.stages:check_audit",
    inputs="fyan.stages.audit:earlier_verdicts",
)


def earlier_verdicts(rows: dict[str, Any], run: Any, root: Path) -> dict[str, bytes]:
    """The files of the unit's earlier audit attempts (the judge reuses a valid earlier verdict
    on the same inputs): path relative to the project -> bytes. These are agent-written files,
    read without following a link."""
    from fyan.audit.decide import FILES, RESULT
    from fyan.lean import safefile

    extra: dict[str, bytes] = {}
    for r in rows["stage_runs"]:
        if r["stage"] == SPEC.name and r["id"] != run.id:
            for name in (*FILES, RESULT):
                p = root / r["attempt_dir"] / name
                if safefile.is_regular(p):
                    extra[f"{r['attempt_dir']}/{name}"] = safefile.read_bytes(p)
    return extra
