"""What ``fyan status``, ``fyan daemon status`` and the dashboard show about a project.

Unit statuses are computed from the store (``fyan.state.lifecycle``), never stored twice. Two
things the store alone cannot tell are added here, so that status tells the truth:

* **is a run alive?** Only the run lock says (``lock.lock_holder``). A unit the store records
  as running while no process holds the lock is shown as ``interrupted`` with "resumes on the
  next run" — never as running (after ``kill -9`` the next start records it so).
* **which units failed, and which only wait on them.** The store says ``blocked`` for both a
  unit whose own attempts ran out (or whose environment failed it) and a unit that depends on
  one. Status tells them apart: the first is ``failed`` (with its ``cause``), the second is
  ``waiting`` with ``waiting_on`` naming every failed unit among its dependencies, direct or
  transitive (a unit waiting only on units still in progress has ``waiting_on == []``).
  Failed units are grouped by their *cause*: the units that failed of it (the "roots") and
  the units waiting on them. Each group states the cause and its remedy once (``classify``).

The unit states of the JSON form are versioned by ``STATUS_VERSION`` (the payload's
``status_version``); ``docs/status-json.md`` documents them.

Provider outages come from the running process when it hands its ``LiveState`` over (the
daemon's dashboard), else from the last ``provider_unavailable``/``provider_available`` events
of a live run; when no run is alive an outage is reported as "when the last run stopped".
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from fyan.agents.providers.breaker import Outage
from fyan.orchestrator.live import LiveState
from fyan.orchestrator.lock import lock_holder, read_run_state
from fyan.project import Project
from fyan.state.models import UnitStatus
from fyan.state.store import Store

#: the version of the unit states in ``ProjectStatus.as_payload``: 1 said ``blocked`` for a failed
#: unit and for a unit waiting on one alike; 2 says ``failed`` and ``waiting`` (+ ``waiting_on``)
STATUS_VERSION = 2
#: the unit states, most urgent first (the order of tables and counts)
STATUS_ORDER = {"failed": 0, "interrupted": 1, "running": 2, "ready": 3, "waiting": 4, "complete": 5}
INTERRUPTED_REASON = "interrupted (resumes on the next run)"
_DEPENDENCY = re.compile(r"^dependency (?P<root>\S+) is blocked: ")
_REFUTED = re.compile(r"^frozen statement refuted on small instance: (?P<detail>.*) → (?P<remedy>.*)$", re.S)
_BUDGET = re.compile(r"^(?P<stage>\w+) failed (?P<n>\d+) time\(s\) \(budget (?P<budget>\d+)\); last: (?P<last>.*)$", re.S)


@dataclass(frozen=True)
class Cause:
    """A root cause in words: ``summary`` (shared by every unit it blocks), ``remedy`` (what
    to do, or None when Fyan does not know), ``detail`` (what is particular to one unit)."""

    summary: str
    remedy: str | None = None
    detail: str = ""


#: (pattern, summary, remedy) of the causes Fyan knows; the first match wins. A pattern's
#: named group ``remedy`` takes the remedy from the reason itself.
_KNOWN: list[tuple[re.Pattern[str], str, str | None]] = [
    (re.compile(r"^Lean toolchain not found: (?P<remedy>.*)$", re.S), "Lean toolchain not found", None),
    (re.compile(r"^the replay cassette (?P<path>.+) does not exist$"), "the replay cassette does not exist",
     'configure a model in fyan.toml [agents.default] (see `fyan init --help` and docs/providers.md, '
     '"Models and providers"), or record a cassette with provider = "record"'),
    (re.compile(r"^the replay cassette .+ has no response for .+$"), "",
     'the prompt or its inputs changed since recording: re-record with provider = "record" in fyan.toml '
     "[agents.default], or configure a live model there"),
    (re.compile(r"^(?P<var>[A-Z_]+_API_KEY) is not set"), "",
     "export the key in the daemon's environment (never in fyan.toml), then `fyan run` again"),
    (re.compile(r"^command agent '(?P<prog>[^']+)' not found on PATH"), "",
     "install the program or give its full path in [agents.*] command, then `fyan run` again"),
    (re.compile(r"^bubblewrap"), "", "install bubblewrap (apt-get install bubblewrap), or set [lean] sandbox"),
    # fyan.replan.check: a checked verdict beyond [scheduler] max_replans
    (re.compile(r"^the Formalizer asks for a re-plan: .*the bound \(\[scheduler\] max_replans\)", re.S),
     "re-plan bound reached: the Formalizer keeps finding the plan wrong",
     "read units/<unit>/replan/ (the verdicts and how Fyan checked them); revise the document or give advice in "
     "guidance/<unit>.md (or the dashboard's form), which lets the unit run again"),
]


def classify(reason: str) -> Cause:
    """The root cause of a blocked unit's ``reason`` (``lifecycle``'s text)."""
    reason = reason.strip()
    m = _REFUTED.match(reason)
    if m:
        return Cause("frozen statement refuted on small instance", m["remedy"], detail=m["detail"])
    m = _BUDGET.match(reason)
    if m:
        return Cause(f"out of attempts at the {m['stage']} stage ({m['n']} failed, budget {m['budget']})",
                     "read the failures (`fyan status --json`, the dashboard), then write advice in "
                     "guidance/<unit>.md (or the dashboard's form): it reaches the next attempt and gives a fresh budget",
                     detail=f"last: {m['last']}")
    for pattern, summary, remedy in _KNOWN:
        m = pattern.match(reason)
        if m:
            groups = m.groupdict()
            return Cause(summary or reason.splitlines()[0], groups.get("remedy") or remedy)
    return Cause(reason.splitlines()[0] if reason else "blocked", None)


@dataclass
class BlockedGroup:
    """The units one cause stopped: ``roots`` failed of it (state ``failed``), ``waiting`` only
    depend (transitively) on a root (state ``waiting``, the root in their ``waiting_on``)."""

    cause: str
    remedy: str | None
    roots: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)  # where the roots stopped

    @property
    def total(self) -> int:
        return len(self.roots) + len(self.waiting)


@dataclass
class ProjectStatus:
    """Everything the three views show (module docstring); ``as_payload`` is the JSON."""

    project: str
    ingested: bool
    run: dict[str, Any]
    #: ``ingest_state``: whether the source was split into units, and what to do when not
    ingest: dict[str, Any] = field(default_factory=lambda: {"state": "not_ingested"})
    root: str = ""  # the project folder
    units: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    blocked: list[BlockedGroup] = field(default_factory=list)
    outages: list[dict[str, Any]] = field(default_factory=list)
    stale: dict[str, str] = field(default_factory=dict)
    sandbox: str = ""  # how model-written code is confined (``fyan.gates.completion.sandbox_statement``)

    @property
    def waiting_on_failed(self) -> int:
        """How many waiting units wait (directly or not) on a failed unit: they cannot move until
        it is fixed."""
        return sum(bool(u.get("waiting_on")) for u in self.units)

    def as_payload(self) -> dict[str, Any]:
        return {"status_version": STATUS_VERSION, "project": self.project, "root": self.root,
                "ingested": self.ingested, "ingest": self.ingest,
                "run": self.run,
                "counts": self.counts, "waiting_on_failed": self.waiting_on_failed,
                "units": self.units, "blocked_groups": [{**asdict(g), "total": g.total} for g in self.blocked],
                "providers": self.outages, "stale": self.stale, "sandbox": self.sandbox,
                "replans": self.replans, "refuted_lemmas": self.refuted_lemmas}

    @property
    def replans(self) -> int:
        """Re-plans the Formalizer's checked verdicts caused, over every unit (``fyan.replan``)."""
        return sum(int(u.get("replans") or 0) for u in self.units)

    @property
    def refuted_lemmas(self) -> int:
        """Planned lemmas refuted (checked ``lemma_false`` verdicts), over every unit."""
        return sum(int(u.get("refuted_lemmas") or 0) for u in self.units)


def _background(state: dict[str, Any] | None) -> bool:
    """Is the run that wrote ``daemon.json`` the background daemon (not a foreground ``fyan run``,
    which writes the same file)? A file without the field predates it: a daemon's."""
    return state is not None and state.get("background", True) is not False


def ingest_state(project: Project, store: Store, run: dict[str, Any]) -> dict[str, Any]:
    """Has the project's source been split into units, and if not, why: ``{"state": ...}`` with
    ``ingested`` (units are recorded), ``not_ingested`` (no ingest began: a project made with
    ``--no-ingest``), ``ingesting`` (an ingest began and a run holds the lock now) or
    ``interrupted`` (an ingest began and no process holds the lock: it was killed, ``kill -9``
    or Ctrl-C, and recorded nothing). The last two carry ``started`` (POSIX seconds), ``pid``
    and ``source`` from ``Gateway.begin_ingest``; every state but ``ingested`` carries ``text``
    (what happened) and ``next`` (the command that ingests)."""
    from fyan.terminal import quoted

    root = project.paths.root
    nxt = f"fyan run {quoted(root)}"
    if not store.exists:
        return {"state": "not_ingested", "text": "not ingested yet: the first run reads the source", "next": nxt}
    if store.units():
        return {"state": "ingested"}
    import json

    try:
        began = json.loads(store.meta("ingest_started") or "null")
    except ValueError:
        began = None
    if not isinstance(began, dict):
        return {"state": "not_ingested", "text": "not ingested yet: the first run reads the source", "next": nxt}
    at = float(began.get("at") or 0)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
    info = {"started": at, "pid": began.get("pid"), "source": began.get("source"), "next": nxt}
    if run.get("alive"):
        return {"state": "ingesting", **info,
                "text": f"reading {began.get('source')} into theorem units now (since {when}, pid {began.get('pid')})"}
    return {"state": "interrupted", **info,
            "text": f"the first ingest of {began.get('source')} was interrupted (pid {began.get('pid')} stopped "
                    f"without finishing it, started {when}); no unit was recorded. The next run reads the source "
                    "again"}


def run_state(project: Project, live: LiveState | None = None) -> dict[str, Any]:
    """Is a run alive (the lock), who is it (pid, since, dashboard; a daemon or a foreground
    run), and what is it doing (``live``)?"""
    if live is not None:
        daemon = read_run_state(project.paths.state)
        return {"alive": True, "holder": f"pid {live.pid}", "pid": live.pid, "started": live.started,
                "daemon": _background(daemon), "dashboard": daemon.get("dashboard") if daemon else None,
                "phase": live.phase, "stopping": live.stopping, "lean_memory": live.lean}
    holder = lock_holder(project.paths.state)
    if holder is None:
        return {"alive": False, "holder": None}
    daemon = read_run_state(project.paths.state)
    m = re.match(r"pid (\d+)", holder)
    return {"alive": True, "holder": holder, "pid": int(m.group(1)) if m else None,
            "started": daemon.get("started") if daemon else None, "daemon": _background(daemon),
            "dashboard": daemon.get("dashboard") if daemon else None}


def outages_from_events(store: Store) -> list[Outage]:
    """Providers whose last recorded event says unavailable (``provider_unavailable`` after
    the last ``provider_available`` and the last session start)."""
    last: dict[str, Outage | None] = {}
    events = store.events(kind="provider_unavailable", limit=10_000_000) + \
        store.events(kind="provider_available", limit=10_000_000)
    sessions = store.events(kind="session_started", limit=10_000_000)
    start = max((e.id for e in sessions), default=0)
    for e in sorted(events, key=lambda e: e.id):
        if e.id < start:
            continue
        name = str(e.data.get("provider", "?"))
        if e.kind == "provider_available":
            last[name] = None
        else:
            d = e.data
            last[name] = Outage(name, float(d.get("since", e.ts)), float(d.get("next_try", e.ts)),
                                int(d.get("failures", 1)), str(d.get("error", "")))
    return [o for o in last.values() if o is not None]


def project_status(project: Project, store: Store, live: LiveState | None = None, *, with_stale: bool = True,
                   now: float | None = None) -> ProjectStatus:
    """The project's status (module docstring). ``live``: the running process's own view,
    when the caller is that process (the daemon's dashboard)."""
    now = time.time() if now is None else now
    run = run_state(project, live)
    from fyan.gates.completion import sandbox_statement

    ingest = ingest_state(project, store, run)
    status = ProjectStatus(project=project.name, ingested=ingest["state"] == "ingested", ingest=ingest, run=run,
                           root=str(project.paths.root), sandbox=sandbox_statement(project))
    if not status.ingested:
        return status
    views = store.views(project.config.scheduler.attempts_per_stage)
    post: dict[str, dict[str, str]] = {}
    for p in store.post_runs():  # latest run of each post-completion task (never affects status)
        post.setdefault(p.unit, {})[p.task] = p.status.value
    if with_stale:
        from fyan.orchestrator import staleness

        status.stale = staleness.check(project, store).stale
    causes: dict[str, Cause] = {}
    groups: dict[str, BlockedGroup] = {}
    for uid, v in views.items():
        if v.status is UnitStatus.BLOCKED and not _DEPENDENCY.match(v.reason or ""):
            causes[uid] = cause = classify(v.reason or "")
            g = groups.setdefault(cause.summary, BlockedGroup(cause.summary, cause.remedy))
            g.roots.append(uid)
            if v.next_stage is not None and v.next_stage.value not in g.stages:
                g.stages.append(v.next_stage.value)
    adoptions = store.adoptions()
    refuted = store.refuted_lemmas_by_unit()
    searches = refutation_counts(store)
    sections = unit_sections(store)
    waiting_on = failed_ancestors(views, set(causes))
    for uid, v in views.items():
        unit_cause = None
        st, reason, short = v.status.value, v.reason, v.reason or ""
        adoption = adoptions.get(uid)
        if v.adopted and adoption is not None:
            decls = ", ".join(x.get("name", "?") for x in adoption.evidence.get("decls", []))
            reason = short = f"adopted: {decls} (complete by adoption, not closed by Fyan's gate)"
        elif adoption is not None and adoption.outcome == "candidate" and v.status is not UnitStatus.COMPLETE:
            short = (short + "; " if short else "") + "existing statement to prove: " + adoption.reason
        if v.status is UnitStatus.RUNNING and not run["alive"]:
            st, reason, short = "interrupted", INTERRUPTED_REASON, INTERRUPTED_REASON
        elif v.status is UnitStatus.BLOCKED:
            m = _DEPENDENCY.match(v.reason or "")
            if m:
                st = "waiting"
                root = m["root"]
                short = "waits on failed " + names(waiting_on.get(uid) or [root], 3)
                cause = causes.get(root) or classify((v.reason or "")[m.end():])
                groups.setdefault(cause.summary, BlockedGroup(cause.summary, cause.remedy)).waiting.append(uid)
            else:
                st = "failed"
                cause = causes[uid]
                unit_cause = cause.summary
                short = cause.summary + (f"; {cause.detail}" if cause.detail else "")
        status.units.append({
            "id": uid, "order": v.unit.order, "kind": v.unit.kind, "label": v.unit.label, "layer": v.unit.layer,
            "provenance": v.unit.provenance, "status": st, "stage": v.next_stage.value if v.next_stage else None,
            "reason": reason, "short_reason": short, "depends_on": v.depends_on, "attempts": v.attempts,
            "after_completion": post.get(uid, {}), "stale": status.stale.get(uid),
            "adopted": v.adopted, "adoption": adoption.outcome if adoption is not None else None,
            "section": sections.get(uid, []), "cause": unit_cause,
            "waiting_on": waiting_on.get(uid, []) if st == "waiting" else [],
            "replans": v.replans, "refuted_lemmas": refuted.get(uid, 0),
            "refutations": searches.get(uid, {"executed": 0, "refuting": 0, "worthless": 0}),
        })
        status.counts[st] = status.counts.get(st, 0) + 1
    status.blocked = sorted(groups.values(), key=lambda g: (-len(g.roots), -g.total))
    if live is not None:
        outages = live.outages
    else:
        outages = outages_from_events(store)
    status.outages = [{**o.as_dict(), "text": o.describe(now) if run["alive"] else
                       f"{o.provider} was unavailable when the last run stopped (since "
                       f"{time.strftime('%H:%M', time.localtime(o.since))}); the next run tries again"}
                      for o in outages]
    return status


def refutation_counts(store: Store) -> dict[str, dict[str, int]]:
    """Per unit, the counterexample searches its attempts ran (``fyan.refute``), summed from the
    gateway's ``stage_finished`` events (``refutations``: ``executed`` ran to a verdict,
    ``refuting`` of them confirmed a refutation, ``worthless`` gave no evidence)."""
    out: dict[str, dict[str, int]] = {}
    for e in store.events(kind="stage_finished", limit=10_000_000):
        counts = e.data.get("refutations")
        if not isinstance(counts, dict) or not e.unit:
            continue
        row = out.setdefault(e.unit, {"executed": 0, "refuting": 0, "worthless": 0})
        for key in row:
            value = counts.get(key)
            row[key] += value if isinstance(value, int) and value >= 0 else 0
    return out


def failed_ancestors(views: dict[str, Any], failed: set[str]) -> dict[str, list[str]]:
    """Unit id -> the ``failed`` units among its dependencies, direct or transitive, sorted; only
    units with at least one are keys. ``views``: ``Store.views`` (each with ``depends_on`` and
    ``unit.layer``; a dependency sits in a lower layer, so one pass in layer order suffices)."""
    out: dict[str, set[str]] = {}
    for uid in sorted(views, key=lambda u: views[u].unit.layer):
        found: set[str] = set()
        for d in views[uid].depends_on:
            if d in failed:
                found.add(d)
            found |= out.get(d, set())
        if found:
            out[uid] = found
    return {u: sorted(f, key=lambda x: (views[x].unit.order, x)) for u, f in out.items()}


def display_counts(views: dict[str, Any]) -> dict[str, int]:
    """Units per state as the progress display shows them: the store's ``blocked`` split into
    ``failed`` (a cause of its own) and ``waiting`` (a failed dependency), like ``project_status``."""
    counts: dict[str, int] = {}
    for v in views.values():
        st = v.status.value
        if v.status is UnitStatus.BLOCKED:
            st = "waiting" if _DEPENDENCY.match(v.reason or "") else "failed"
        counts[st] = counts.get(st, 0) + 1
    return counts


_SECTIONS: dict[str, tuple[int, dict[str, list[str]]]] = {}


def unit_sections(store: Store) -> dict[str, list[str]]:
    """Unit id -> the document's headings its first statement stands under, outermost first
    (``Statement.section`` of the recorded catalogue; ``[]`` for a catalogue recorded before
    intake kept headings). Decoded once per recorded catalogue (cached by its hash)."""
    import json

    raw = store.meta("catalogue") or ""
    key = str(store.db)
    cached = _SECTIONS.get(key)
    if cached is not None and cached[0] == hash(raw):
        return cached[1]
    try:
        statements = json.loads(raw).get("statements", []) if raw else []
    except ValueError:
        statements = []
    out: dict[str, list[str]] = {}
    for u in store.units():
        first = u.statements[0] if u.statements else None
        if first is not None and 0 <= first < len(statements) and isinstance(statements[first], dict):
            section = statements[first].get("section") or []
            out[u.id] = [str(t) for t in section] if isinstance(section, list) else []
    _SECTIONS[key] = (hash(raw), out)
    return out


def names(units: list[str], limit: int = 8) -> str:
    """``a, b, c, ... (+N more)`` for a list of unit ids."""
    shown = ", ".join(units[:limit])
    return shown + (f", ... (+{len(units) - limit} more)" if len(units) > limit else "")


def blocked_lines(groups: list[BlockedGroup], limit: int = 8) -> list[str]:
    """The failure groups as text: the cause and remedy once, then the units that failed of it
    and how many wait on them."""
    lines = []
    for g in groups:
        if not g.roots:
            continue
        head = f"{len(g.roots)} failed: {g.cause}" + (f" → {g.remedy}" if g.remedy else "")
        where = f" ({', '.join(g.stages)})" if g.stages else ""
        body = f"    {names(g.roots, limit)}{where}"
        if g.waiting:
            them = "it" if len(g.roots) == 1 else "them"
            body += f"; {len(g.waiting)} unit(s) wait on {them}"
        lines += [head, body]
    return lines


def run_line(run: dict[str, Any], name: str, units: list[dict[str, Any]]) -> str:
    """One line on whether a run is alive."""
    if run.get("alive"):
        since = f" since {time.strftime('%H:%M:%S', time.localtime(run['started']))}" if run.get("started") else ""
        who = "daemon" if run.get("daemon") else "run"
        text = f"A Fyan {who} is working on {name} ({run.get('holder')}{since})"
        if run.get("dashboard"):
            text += f"; dashboard {run['dashboard']}"
        if (run.get("lean_memory") or {}).get("waiting"):
            from fyan.orchestrator.live import lean_waiting_text

            text += "; " + lean_waiting_text(run["lean_memory"])
        return text
    interrupted = sum(u["status"] == "interrupted" for u in units)
    if interrupted:
        return (f"No Fyan run is working on {name}: {interrupted} attempt(s) were cut off when the last run "
                "stopped and resume on the next run")
    return f"No Fyan run is working on {name}."
