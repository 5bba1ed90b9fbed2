"""Accepting a change of the source: ``fyan accept-source`` (``--dry-run`` only explains).

After an edit under ``source/``, the units whose statement or source proof changed, and the
units that depend on them, are *stale* (``fyan.orchestrator.staleness``): reported and held,
never re-run on their own. Accepting the change is the user's explicit decision that the new
text is the one to formalize. It:

* writes each changed unit's new intake files (``problem.tex``, ``source_proof.tex``) as read
  by intake from the current source (the same code as ``fyan init``);
* makes every stale unit start over from its first stage (``Gateway.accept_source``: a restart
  marker in its history, its frozen statements withdrawn) — a complete unit among them is no
  longer complete until the completion gate passes again on the new statement;
* records the new source digest and catalogue, so nothing is reported stale any more.

Units the change does not touch keep everything (their files are not rewritten: a complete
unit's frozen statement stays bound to the very ``problem.tex`` it was certified against).

Accepted in place: changed statements and proofs, text moved within the source. Refused, with
what changed named: a change that adds or removes units or changes the dependencies between
them (the DAG and its layers are the project's frame; such a document is a new project, made
with ``fyan init``), and a source that does not read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from fyan.errors import InputError
from fyan.project import Project
from fyan.state.store import Store
from fyan.terminal import quoted

#: the intake files of a unit a source change rewrites
INTAKE_FILES = ("problem.tex", "source_proof.tex")


@dataclass
class AcceptPlan:
    """What accepting the current source does: ``changed`` (unit → why, its files are
    rewritten), ``restart`` (every unit that starts over, document order), ``complete_now``
    (those of them complete now), ``refused`` (why it cannot be accepted in place; empty when
    it can), ``unchanged`` (the source digest equals the recorded one)."""

    project: str
    root: str
    unchanged: bool = False
    changed: dict[str, str] = field(default_factory=dict)
    restart: list[str] = field(default_factory=list)
    complete_now: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    files: dict[str, dict[str, bytes]] = field(default_factory=dict, repr=False)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    meta: dict[str, str] = field(default_factory=dict, repr=False)

    def as_payload(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("files", "rows", "meta"):
            d.pop(k)
        return d


def _names(ids: list[str], limit: int = 8) -> str:
    return ", ".join(ids[:limit]) + (f", ... (+{len(ids) - limit} more)" if len(ids) > limit else "")


def plan(project: Project, store: Store) -> AcceptPlan:
    """What accepting the current source would do (module docstring); writes nothing."""
    from fyan.errors import FyanError
    from fyan.orchestrator import staleness
    from fyan.specifier.ingest import plan_ingest

    out = AcceptPlan(project=project.name, root=str(project.paths.root))
    found = staleness.check(project, store)
    if not found.changed:
        out.unchanged = True
        return out
    if found.error:
        out.refused.append(f"the source no longer reads: {found.error}")
        return out
    try:
        dag, files, meta, _ = plan_ingest(project)
    except FyanError as e:  # changed between the two reads
        out.refused.append(f"the source no longer reads: {e.message}")
        return out
    units = {u.id: u for u in store.units()}
    fresh = {u.id: u for u in dag.units}
    added, removed = sorted(set(fresh) - set(units)), sorted(set(units) - set(fresh))
    if added:
        out.refused.append(f"{len(added)} new unit(s) in the source: {_names(added)}")
    if removed:
        out.refused.append(f"{len(removed)} unit(s) no longer in the source: {_names(removed)}")
    old_edges = {(d.unit, d.depends_on) for d in store.deps()}
    new_edges = {(e.unit, e.depends_on) for e in dag.edges}
    gained = sorted(f"{u} → now uses {d}" for u, d in new_edges - old_edges if u in units and d in units)
    lost = sorted(f"{u} → no longer uses {d}" for u, d in old_edges - new_edges if u in fresh and d in fresh)
    if gained or lost:
        out.refused.append(f"{len(gained) + len(lost)} dependency change(s): {_names(gained + lost, 6)}")
    if out.refused:
        return out
    views = store.views(project.config.scheduler.attempts_per_stage)
    order = {uid: u.order for uid, u in fresh.items()}
    out.restart = sorted(found.stale, key=lambda u: order[u])
    out.changed = {u: found.stale[u] for u in out.restart if not found.stale[u].startswith("it depends on ")}
    out.complete_now = [u for u in out.restart if views[u].status.value == "complete"]
    out.files = {u: {k: v for k, v in files.get(u, {}).items() if k in INTAKE_FILES} for u in out.changed}
    out.rows = {uid: {"order": u.order, "kind": u.kind, "label": u.label, "title": u.title,
                      "statements": list(u.statements), "provenance": u.provenance} for uid, u in fresh.items()}
    out.meta = {"source_sha256": meta["source_sha256"], "catalogue": meta["catalogue"]}
    return out


def apply(project: Project, p: AcceptPlan) -> list[int]:
    """Record ``p`` through the gateway (the caller holds the project's run lock). Raises
    ``InputError`` when ``p`` was refused. Returns the restart markers' run ids."""
    from fyan.state.gateway import Gateway

    if p.refused:
        raise InputError(refusal(p), hint=refusal_hint(p))
    if p.unchanged or not p.restart and not p.meta:
        return []
    reason = ("the source change was accepted (`fyan accept-source`): the unit starts over from its first stage "
              + ("(its statement or proof changed)" if p.changed else "(a unit it depends on changed)"))
    gateway = Gateway(project)
    try:
        return gateway.accept_source(p.rows, p.files, p.restart, p.meta, reason)
    finally:
        gateway.close()


def refusal(p: AcceptPlan) -> str:
    return f"{p.project}: this source change cannot be accepted in place: " + "; ".join(p.refused)


def refusal_hint(p: AcceptPlan) -> str:
    if any(r.startswith("the source no longer reads") for r in p.refused):
        return "fix the source (or restore it) and run the same command again"
    return ("a change that adds or removes units or changes their dependencies is a new document: make a project from "
            "it with `fyan init NEW --source <main file>`, or undo that part of the change")


def text(p: AcceptPlan, dry_run: bool) -> str:
    """The plan, or what was done, in words."""
    folder = quoted(p.root)
    if p.unchanged:
        return f"{p.project}: the source has not changed since intake; nothing to accept."
    if not p.restart:
        return (f"{p.project}: the source changed but no unit's statement or proof did (text moved); "
                + ("accepting records the new source." if dry_run else "the new source is recorded."))
    lines = [f"{p.project}: accepting the source change " + ("would re-run" if dry_run else "re-runs")
             + f" {len(p.restart)} unit(s) from their first stage:"]
    lines += [f"  {u}: {why}" for u, why in list(p.changed.items())[:20]]
    if len(p.changed) > 20:
        lines.append(f"  ... (+{len(p.changed) - 20} more changed)")
    through = [u for u in p.restart if u not in p.changed]
    if through:
        lines.append(f"  and {len(through)} unit(s) that depend on them: {_names(through, 12)}")
    if p.complete_now:
        lines.append(f"  {len(p.complete_now)} of them are complete now; their completion is withdrawn until the "
                     f"gate passes again: {_names(p.complete_now, 12)}")
    lines.append("Every other unit keeps its work.")
    if dry_run:
        lines.append(f"Accept it with: fyan accept-source {folder}")
    else:
        lines.append(f"Next: fyan run {folder}")
    return "\n".join(lines)


def command_line(folder: str) -> str:
    """The line ``fyan status`` and ``fyan resume --dry-run`` print under stale units."""
    return (f"To accept the change and re-run what it touches: fyan accept-source {quoted(folder)} "
            "(`--dry-run` first shows what it would re-run)")


def run(folder: str, dry_run: bool) -> tuple[dict[str, Any], str]:
    """``fyan accept-source``: the plan (``--dry-run``), or the plan applied under the project's
    run lock. Returns the JSON payload and the text. Raises ``InputError`` when refused,
    ``LockedError`` while a run holds the lock."""
    from fyan.orchestrator.lock import ProjectLock

    project = Project.open(folder)
    if not project.paths.db.exists():
        raise InputError(f"{folder}: not ingested yet; there is nothing to accept",
                         hint=f"run `fyan run {quoted(folder)}` first")

    def planned() -> AcceptPlan:
        store = Store(project.paths.db)
        try:
            return plan(project, store)
        finally:
            store.close()

    if dry_run:
        p = planned()
        if p.refused:
            raise InputError(refusal(p), hint=refusal_hint(p))
        return {**p.as_payload(), "dry_run": True}, text(p, True)
    with ProjectLock(project.paths.lock):
        p = planned()
        runs = apply(project, p)
    return {**p.as_payload(), "dry_run": False, "restart_runs": runs}, text(p, False)
