"""A candidate unit's frozen statement must be the existing declaration's.

When adoption found a unit's ``\\lean`` declaration declared but not proved (outcome
``candidate``), the existing statement is the candidate statement: the Planner is asked to state
it exactly (``fyan.agents.stages.plan``), the semantic audit compares it with the blueprint text,
and at freeze time (``fyan.gates.stages.check_audit``) ``candidate_mismatch`` requires every
existing declaration's elaborated type (``type_hash`` from the trusted inspector at adoption) to
equal the elaborated type of a frozen root (``type_hash`` from the inspector at freeze time) —
so the Formalizer proves *that* statement, under the unit's own name. Types are compared, not
names (the copy lives in the unit's namespace); both hashes come from the compiled
environment, never from text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fyan.state.store import Store


def candidate_mismatch(store: Store, unit_id: str, freezes: Iterable[Any]) -> str | None:
    """Why ``freezes`` (``FreezeSpec``s about to be recorded) do not state the candidate
    statement of ``unit_id``, or None when they do or the unit is no candidate. A freeze
    without an elaborated type (no toolchain at freeze time) cannot be compared: that is a
    mismatch too (the message says to install Lean)."""
    record = store.adoptions().get(unit_id)
    if record is None or record.outcome != "candidate":
        return None
    roots = {f.type_hash for f in freezes if f.role == "root" and f.type_hash}
    existing = [d for d in record.evidence.get("decls", []) if d.get("found")]
    if not roots:
        return ("the statement was frozen without its elaborated type, so it cannot be compared with the existing "
                f"declaration(s) {', '.join(d['name'] for d in existing)} it must restate: install Lean and retry")
    differ = [d for d in existing if d.get("type_hash") not in roots]
    if differ:
        return ("the frozen statement is not the existing declaration's (elaborated types differ): "
                + "; ".join(f"{d['name']} : {d.get('type_pp') or '?'}" for d in differ)
                + " — state it exactly as the adopted package does")
    return None
