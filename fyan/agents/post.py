"""Post-completion agents: the Curator and the Auditor.

They run only for a unit the completion gate passed, write into their attempt folder, and the
gateway's check (``fyan.gates.post``) decides what is published. Nothing here can change whether
a unit is complete: their runs live in ``post_runs``, which the lifecycle rules never read.

* **Curator** (``curate``) — asks for reusable proof patterns in the finished unit; writes the
  proposal to ``skills/proposed.json``; the check admits only skills whose lemmas exist. The
  prompt holds only the unit's own artifacts (not the skills other units added, whose order
  varies with scheduling), so a recorded run replays; a name taken by another unit's skill
  gets the unit id appended.
* **Auditor** (``review``) — computes the deterministic counts, asks a model for a review for
  humans (with the counts it believes), and writes ``review.json`` and ``review.md`` rendered by
  code: counts first, discrepancies with the model's claims, then the model's notes.
"""

from __future__ import annotations

import json

from fyan.models.replies import CurateReply, ReviewReply
from fyan.agents.session import StageSession
from fyan.agents.stages import NONE, UnitContext  # noqa: F401
from fyan.gates.post import render_review, unit_counts
from fyan.lakepackage.package import model_part


def curate(s: StageSession, u: UnitContext) -> None:
    reply = s.ask_json("curate", {
        "unit": u.unit.id, "kind": u.unit.kind, "namespace": u.namespace, "problem": u.statement_tex,
        "proof": (u.read("proof.md") or "").replace(u.provenance, "").strip(),
        "lean": model_part(u.read("Basic.lean") or "")
    }, CurateReply)
    u.write("skills/proposed.json", reply.model_dump_json(indent=2) + "\n")


def review(s: StageSession, u: UnitContext) -> None:
    counts = unit_counts(u.project, u.unit)
    reply = s.ask_json("review", {
        "unit": u.unit.id, "kind": u.unit.kind, "problem": u.statement_tex,
        "lean": model_part(u.read("Basic.lean") or ""),
        "gate": (u.read("gate/report.json") and _gate_summary(u)) or NONE,
    }, ReviewReply)
    u.write("review.json", json.dumps({"counts": counts.model_dump(), "reviewer": reply.model_dump()}, indent=2) + "\n")
    u.write("review.md", render_review(u.unit, counts, reply))


def _gate_summary(u: UnitContext) -> str:
    data = json.loads(u.read("gate/report.json") or "{}")
    return "\n".join(f"- {c['name']}: {c['status']} — {c['reason']}" for c in data.get("checks", []))

