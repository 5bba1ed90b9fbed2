"""What resuming a project will do, computed read-only from the store and the folder.

``fyan resume <project> --dry-run`` prints this plan and changes nothing; ``fyan resume``
prints it and then runs (as ``fyan run``). The plan follows exactly the rules the daemon
applies at start (``Gateway.recover``, ``fyan.state.lifecycle``, ``scheduler.py``):

* attempts recorded as running (the last process was killed) become *interrupted* — not
  failures — and run again;
* staged files of committed transitions are put in place (rolled forward), other staged files
  are discarded;
* complete units are not run again; units blocked by an environment problem in an earlier
  session (no Lean toolchain) are tried again; units over their attempt budget stay blocked
  until a person adds guidance;
* guidance files not yet recorded are recorded; hand-edited proofs go through the prove check;
  a changed source makes units stale (reported and held, never re-run);
* agents a killed run left running (``.fyan/agents.json``, ``fyan.agents.process_groups``) are
  ended before anything starts;
* the first attempts to start, highest remaining critical path first.
"""

from __future__ import annotations

import time
from typing import Any

from fyan.agents import guidance
from fyan.orchestrator import handedits, staleness
from fyan.orchestrator.lock import lock_holder
from fyan.orchestrator.ledger import Ledger
from fyan.orchestrator.scheduler import Scheduler
from fyan.project import Project
from fyan.state.gateway import Gateway, sha256_file
from fyan.state.models import FailureKind, RunStatus, UnitStatus
from fyan.state.store import Store
from fyan.terminal import quoted


def plan(project: Project, parallelism: int | None = None) -> dict[str, Any]:
    """The resume plan as data (module docstring); writes nothing."""
    from fyan.orchestrator.status import ingest_state

    store = Store(project.paths.db)
    holder = lock_holder(project.paths.state)
    ingest = ingest_state(project, store, {"alive": holder is not None})
    out: dict[str, Any] = {"project": project.name, "root": str(project.paths.root),
                           "ingested": ingest["state"] == "ingested", "ingest": ingest}
    out["locked_by"] = holder
    if not out["ingested"]:
        if ingest["state"] == "interrupted":
            out["actions"] = [ingest["text"] + ":", "resuming reads the source again and splits it into theorem "
                              f"units (`fyan resume {quoted(project.paths.root)}` or `{ingest['next']}`)"]
        else:
            out["actions"] = ["first run: the source will be read and split into theorem units"]
        store.close()
        return out
    attempts = project.config.scheduler.attempts_per_stage
    runs = store.runs()
    running = [r for r in runs if r.status is RunStatus.RUNNING]
    now = time.time()
    fixed = [r.model_copy(update={"status": RunStatus.INTERRUPTED, "finished_at": now}) if r.status is RunStatus.RUNNING
             else r for r in runs]
    before = Ledger(store.units(), [(d.unit, d.depends_on) for d in store.deps()], runs, attempts,
                    store.session_start(), store.budget_resets(), store.session_scoped())
    ledger = Ledger(store.units(), [(d.unit, d.depends_on) for d in store.deps()], fixed, attempts, now,
                    store.budget_resets())
    current = {(a.unit, a.kind): a.sha256 for a in store.artifacts()}
    roll, drop = [], []
    if project.paths.units.is_dir():
        for staging in project.paths.units.glob("*/.staging"):
            for f in staging.iterdir():
                parsed = Gateway._parse_staged(f.name) if f.is_file() else None
                if parsed and current.get((staging.parent.name, parsed[1])) == sha256_file(f):
                    roll.append(f"{staging.parent.name}/{parsed[1]}")
                elif f.is_file():
                    drop.append(f"{staging.parent.name}/{f.name}")
    retried = [u for u, v in before.views.items() if v.status is UnitStatus.BLOCKED
               and before.progress[u].blocked_reason is not None and before.progress[u].last_failure is not None
               and before.progress[u].last_failure.failure_kind is FailureKind.ENVIRONMENT
               and ledger.views[u].status is not UnitStatus.BLOCKED]
    over_budget = [(u, v.reason) for u, v in ledger.views.items()
                   if v.status is UnitStatus.BLOCKED and ledger.progress[u].blocked_reason is not None]
    stale = staleness.check(project, store)
    unrecorded = []
    if project.paths.guidance.is_dir():
        for path in sorted(project.paths.guidance.glob("*.md")):
            last = guidance.latest_human(store, path.stem) if path.stem in ledger.units else None
            if path.stem in ledger.units and (last is None or last.get("sha256") != sha256_file(path)):
                unrecorded.append(path.stem)
    hashes = handedits.recorded_hashes(store)
    edits = [u for u in hashes if handedits.edited(project, store, u, hashes[u]) is not None]
    slots = parallelism or project.config.scheduler.parallelism
    ready = [u for u in ledger.ready if u not in stale.stale]
    first = [(u, ledger.views[u].next_stage.value) for u in Scheduler(ledger).order(ready)[:slots]]
    counts = ledger.counts()
    out.update({
        "leftover_agents": leftover_agents(project),
        "interrupted": [{"unit": r.unit, "stage": r.stage.value, "run": r.id} for r in running],
        "roll_forward": roll, "discard_staged": drop, "retry_environment": retried,
        "blocked": [{"unit": u, "reason": r} for u, r in over_budget],
        "stale": stale.stale, "source_error": stale.error, "guidance_to_record": unrecorded, "hand_edits": edits,
        "first_attempts": [{"unit": u, "stage": s} for u, s in first], "counts": dict(counts),
    })
    store.close()
    return out


def leftover_agents(project: Project) -> list[str]:
    """Labels of the agent process groups a killed run left running (read-only)."""
    import json

    from fyan.agents import process_groups

    try:
        groups = [process_groups.Group(**g) for g in
                  json.loads((project.paths.state / process_groups.STATE_FILE).read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        return []
    return [g.label for g in groups if process_groups.members(g)]


def explain(p: dict[str, Any]) -> str:
    """Human text of ``plan``."""
    lines = [f"Resuming {p['project']}:"]
    if p.get("locked_by"):
        lines.append(f"  A Fyan daemon or run is working on this project now ({p['locked_by']}); nothing to resume.")
        lines.append("  See `fyan daemon status`, or stop it with `fyan daemon stop`.")
        return "\n".join(lines)
    if not p["ingested"]:
        return "\n".join(lines + ["  " + a for a in p["actions"]])
    c = p["counts"]
    lines.append("  units: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items())))
    if p.get("leftover_agents"):
        lines.append(f"  {len(p['leftover_agents'])} agent process group(s) the killed run left running are ended "
                     "first: " + ", ".join(p["leftover_agents"][:8]))
    if p["interrupted"]:
        lines.append(f"  {len(p['interrupted'])} attempt(s) were running when the last process stopped; they are "
                     "recorded as interrupted (not failures) and run again:")
        lines += [f"    {i['unit']} ({i['stage']}, run {i['run']})" for i in p["interrupted"][:20]]
    else:
        lines.append("  no attempt was left running")
    if p["roll_forward"]:
        lines.append(f"  {len(p['roll_forward'])} committed file(s) not yet in place are put in place: "
                     + ", ".join(p["roll_forward"][:8]))
    if p["discard_staged"]:
        lines.append(f"  {len(p['discard_staged'])} staged file(s) of uncommitted attempts are discarded")
    lines.append(f"  {c.get('complete', 0)} complete unit(s) are not run again")
    if p["retry_environment"]:
        lines.append("  tried again (an environment problem blocked them in an earlier session): "
                     + ", ".join(p["retry_environment"][:10]))
    if p["blocked"]:
        lines.append(f"  {len(p['blocked'])} unit(s) stay blocked (add guidance/<unit>.md to give one another try):")
        lines += [f"    {b['unit']}: {b['reason']}" for b in p["blocked"][:10]]
    if p["guidance_to_record"]:
        lines.append("  new guidance is recorded for: " + ", ".join(p["guidance_to_record"]))
    if p["hand_edits"]:
        lines.append("  hand-edited proofs go through the prove check, then the gate: " + ", ".join(p["hand_edits"]))
    if p["stale"]:
        lines.append(f"  the source changed: {len(p['stale'])} unit(s) are stale and held (not re-run until the "
                     "change is accepted):")
        lines += [f"    {u}: {why}" for u, why in list(p["stale"].items())[:10]]
        from fyan.orchestrator.accept import command_line

        lines.append("  " + command_line(p["root"]))
    if p["first_attempts"]:
        lines.append("  first attempts (highest remaining critical path first): "
                     + ", ".join(f"{a['unit']} ({a['stage']})" for a in p["first_attempts"]))
    elif not p["interrupted"]:
        lines.append("  nothing is ready to run")
    return "\n".join(lines)
