"""The agents' side of a re-plan: the verdict a prove attempt ends with, and what the Planner
and the next Formalizer attempt are given after a checked one.

Kept apart from ``fyan.agents.stages`` so the Formalizer's loop only calls in here: the verdict
is written into the attempt folder (``verdict.json``) as the model gave it — a structured reply
field, or the file a command agent left in the unit workspace — and decided afterwards by
``fyan.replan.check``; nothing here decides anything.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fyan.sandbox import safefile
from fyan.replan.verdict import ACCEPTED, HELPERS, VERDICT_FILE, Verdict
from fyan.state.models import FailureKind, Stage

if TYPE_CHECKING:
    from fyan.agents.stages import UnitContext

NONE = "(none)"


def record_reply_verdict(u: UnitContext, verdict: Verdict | None) -> None:
    """Write the verdict of a structured prove reply into the attempt folder (None: nothing)."""
    if verdict is not None:
        u.write(VERDICT_FILE, verdict.model_dump_json(indent=2) + "\n")


def record_workspace_verdict(u: UnitContext, files: dict[str, str | None]) -> None:
    """Copy the ``verdict.json`` a command agent left in the workspace root (``files``: what it
    changed) into the attempt folder as written; the check validates it."""
    text = files.get(VERDICT_FILE)
    if text is not None:
        u.write(VERDICT_FILE, text)


def attempt_verdict(u: UnitContext) -> str | None:
    """A one-line description of the verdict this attempt holds (None: none), for the
    iteration log; the Formalizer's loop stops at it."""
    path = u.attempt_dir / VERDICT_FILE
    if not path.exists():
        return None
    try:
        v = Verdict.model_validate_json(safefile.read_text(path, limit=1 << 20))
    except (ValueError, OSError) as e:
        return f"malformed verdict ({str(e).splitlines()[0]})"
    return f"{v.kind} {v.lemma}"


def _last_replan(u: UnitContext) -> dict | None:
    """The checked verdict of the re-plan now under way, or None (the last prove failure is not
    a re-plan, or its record is missing)."""
    last = u.last_failure(Stage.PROVE)
    if last is None or last.failure_kind is not FailureKind.REPLAN or last.rewind_to is None:
        return None
    text = u.read(ACCEPTED)
    try:
        record = json.loads(text) if text else None
    except ValueError:
        return None
    return record if isinstance(record, dict) and record.get("run") == last.id else None


def replan_request(u: UnitContext) -> str:
    """The Planner's "Re-plan requested by the Formalizer" section: the checked verdict, how Fyan
    checked it, and the helper lemmas kept; ``(none)`` outside a re-plan. A later plan attempt
    of the same re-plan (the first was refused) gets the same section."""
    plans_since = None
    record = _last_replan(u)
    if record is None:
        return NONE
    for r in u.store.runs(u.unit.id):
        if r.id > record["run"] and r.stage is Stage.PLAN and r.status.value == "succeeded":
            plans_since = r
    if plans_since is not None:
        return NONE
    v = record.get("verdict") or {}
    lines = [f"- verdict: `{v.get('kind')}` on the planned lemma `{v.get('lemma')}`",
             f"- checked by Fyan: {record.get('how')}", f"- re-plan {record.get('replan')} of at most {record.get('bound')}"]
    if v.get("explanation"):
        lines.append(f"- the Formalizer's explanation (model-written): {v['explanation']}")
    if v.get("tried"):
        lines.append(f"- what it tried (model-written): {v['tried']}")
    helpers = (u.read(HELPERS) or "").strip()
    lines.append("- helper lemmas kept for the next proof attempt:" + (f"\n```lean\n{helpers}\n```" if helpers else " none"))
    return "\n".join(lines)


def carried_helpers(u: UnitContext) -> str:
    """The helper lemmas a checked re-plan kept (``replan/helpers.lean``) while the re-plan is the
    unit's latest prove failure; "" otherwise."""
    record = _last_replan(u)
    return (u.read(HELPERS) or "") if record is not None else ""
