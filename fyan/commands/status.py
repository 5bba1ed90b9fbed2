"""``fyan status``: where every unit stands, blocked units grouped by cause, and optionally the
model usage and cost."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fyan.agents.pricing import is_priced
from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.sandbox import safefile
from fyan.orchestrator.status import project_status
from fyan.orchestrator.status_text import StatusFilter, filter_units, status_text
from fyan.project import Project
from fyan.state.store import Store
from fyan.terminal import quoted, render, table


DESCRIPTION = """Show where the project stands, summary first: units by state (complete, running, ready,
failed, waiting) and by chapter, the failed units grouped by cause with the remedy, provider
outages, stale units and the command that accepts a source change, whether a run is alive,
and the re-plans the Formalizer's checked verdicts caused (with the planned lemmas refuted).
Filters (--failed, --waiting, --section, --unit, --layer, --all) list units one row each;
--summary prints the summary lines only; --cost adds the model usage and cost per stage and unit, and
the Formalizer's tool-loop budgets used; --unit ID also shows that unit's tool-loop budgets per attempt."""


EXIT_CODES = {
    3: "the first ingest was interrupted (the next run reads the source again)",
    4: "bad input: configuration, project folder",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--cost", action="store_true", help="also sum model usage and cost per stage and unit")
    p.add_argument("--failed", action="store_true", help="list the failed units")
    p.add_argument("--waiting", action="store_true", help="list the waiting units")
    p.add_argument("--section", metavar="TEXT", help="list the units under headings containing TEXT")
    p.add_argument("--unit", action="append", metavar="ID", help="list this unit (repeatable)")
    p.add_argument("--layer", action="append", type=int, metavar="N", help="list the units of layer N (repeatable)")
    p.add_argument("--all", action="store_true", help="list every unit, one row each")
    p.add_argument("--summary", action="store_true", help="print the summary lines only")
    p.add_argument("--json", action="store_true", help="print JSON")


class ToolLoopAttempt(BaseModel):
    """The budgets one Formalizer attempt's tool loop used (its ``tool_loop.json``): ``run`` id,
    ``attempt`` number and ``status`` of the stage run; ``tool_calls`` (charged: the
    environment's failures not counted), ``tokens`` (input + output of the loop's model calls),
    ``wall_s`` (seconds, the environment's lost time not counted), ``model_calls``,
    ``environment_failures`` (rounds the environment failed), ``stops`` (why each iteration's
    loop stopped: ``done``, ``budget_tool_calls``, ``budget_tokens``, ``budget_wall_time``,
    ``environment``) and ``budget`` (the limits: same keys, from ``[prover]``)."""

    run: int
    attempt: int
    status: str
    tool_calls: int = 0
    tokens: int = 0
    wall_s: float = 0.0
    model_calls: int = 0
    environment_failures: int = 0
    stops: list[str] = []
    budget: dict[str, float] = {}
class RefutationCounts(BaseModel):
    """The counterexample searches a unit's attempts ran (``fyan.refute``, docs/refutation.md)."""

    executed: int = Field(ge=0, description="searches that ran to a verdict in the sandbox")
    refuting: int = Field(ge=0, description="executed searches whose refutation was confirmed (re-checked witness, "
                          "or a clean Lean compile)")
    worthless: int = Field(ge=0, description="searches that gave no evidence (did not execute, hung, wrote outside "
                           "their folder, tried the network, raised, claimed without refuting, no sandbox)")


class UnitRow(BaseModel):
    """One unit of ``units`` (docs/status-json.md lists every field)."""

    model_config = ConfigDict(extra="allow")
    id: str
    status: str
    refutations: RefutationCounts | None = None


class Payload(BaseModel):
    """``fyan status --json``: the project's status (``fyan.orchestrator.status``): units with
    their status, stage and reason, counts, blocked groups, outages, the run; ``cost`` with --cost
    (its ``tool_loop``: the tool-loop budgets used, per unit and in total); ``tool_loop`` with
    --unit: per chosen unit, its Formalizer attempts' tool-loop budgets (``ToolLoopAttempt``)."""

    model_config = ConfigDict(extra="allow")
    project: str
    units: list[UnitRow] | None = None
    counts: dict[str, int] | None = None
    cost: dict[str, Any] | None = None
    replans: int | None = Field(default=None, description="re-plans the Formalizer's checked verdicts caused, all units")
    refuted_lemmas: int | None = Field(default=None, description="planned lemmas refuted (checked lemma_false verdicts), "
                                       "all units; each unit row has its own `replans` and `refuted_lemmas`")
    tool_loop: dict[str, list[ToolLoopAttempt]] | None = None


def run(args: argparse.Namespace) -> CommandResult:
    chosen = StatusFilter(failed=args.failed, waiting=args.waiting, section=args.section, units=args.unit or [],
                          layers=args.layer or [], every=args.all, summary_only=args.summary)
    project = Project.open(args.dir)
    store = Store(project.paths.db)
    try:
        status = project_status(project, store)
        if chosen.units:  # an unknown unit id exits 2 first, ingested or not
            filter_units(status, StatusFilter(units=chosen.units))
        if not status.ingested:  # never a title over an empty table
            ingest = status.ingest
            code = ExitCode.INCOMPLETE if ingest["state"] == "interrupted" else ExitCode.OK
            text = f"{project.name}: {ingest['text']}."
            if ingest["state"] != "ingesting":
                text += f"\nNext: fyan run {quoted(args.dir)}"
            return CommandResult(code, status.as_payload(), text)
        payload = status.as_payload()
        if args.cost:
            payload["cost"] = _cost(store)
            payload["cost"]["tool_loop"] = _tool_loop_totals(project, store)
        if chosen.units:
            payload["tool_loop"] = {u: [a.model_dump() for a in tool_loop_attempts(project, store, u)]
                                    for u in chosen.units}
    finally:
        store.close()
    if chosen.active:
        payload["units"], payload["filter"] = filter_units(status, chosen), chosen.as_dict()
    text = status_text(status, args.dir, chosen, payload.get("cost"))
    extra = tool_loop_text(payload.get("tool_loop") or {}, (payload.get("cost") or {}).get("tool_loop"))
    return CommandResult(ExitCode.OK, payload, text + ("\n" + extra if extra else ""))


def tool_loop_attempts(project: Project, store, unit: str) -> list[ToolLoopAttempt]:
    """``unit``'s Formalizer attempts that ran the tool loop, from each attempt's
    ``tool_loop.json`` (attempts without one did not run it; an unreadable one is skipped)."""
    out = []
    for r in store.runs(unit):
        if r.stage.value != "prove":
            continue
        path = project.paths.root / r.attempt_dir / "tool_loop.json"
        try:
            data = json.loads(safefile.read_text(path)) if path.is_file() else None
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict):
            continue
        used = data.get("used") or {}
        out.append(ToolLoopAttempt(
            run=r.id, attempt=r.attempt, status=r.status.value, tool_calls=int(used.get("tool_calls", 0)),
            tokens=int(used.get("tokens", 0)), wall_s=float(used.get("wall_s", 0.0)),
            model_calls=int(used.get("model_calls", 0)), environment_failures=int(used.get("environment_failures", 0)),
            stops=[str(i.get("stop")) for i in data.get("iterations") or [] if isinstance(i, dict)],
            budget={k: float(v) for k, v in (data.get("budget") or {}).items() if isinstance(v, (int, float))}))
    return out


def _tool_loop_totals(project: Project, store) -> dict[str, Any]:
    """The tool-loop budgets used, summed per unit and in total (``attempts``: the Formalizer
    attempts that ran the loop)."""
    def row() -> dict[str, Any]:
        return {"attempts": 0, "tool_calls": 0, "tokens": 0, "wall_s": 0.0, "model_calls": 0,
                "environment_failures": 0}

    by_unit: dict[str, dict[str, Any]] = {}
    total = row()
    units = sorted({r.unit for r in store.runs() if r.stage.value == "prove"})
    for unit in units:
        for a in tool_loop_attempts(project, store, unit):
            for r in (by_unit.setdefault(unit, row()), total):
                r["attempts"] += 1
                for k in ("tool_calls", "tokens", "model_calls", "environment_failures"):
                    r[k] += getattr(a, k)
                r["wall_s"] = round(r["wall_s"] + a.wall_s, 3)
    return {"by_unit": by_unit, "total": total}


def tool_loop_text(per_unit: dict[str, list[dict[str, Any]]], totals: dict[str, Any] | None) -> str:
    """The tool-loop tables of ``fyan status --unit`` (per attempt) and ``--cost`` (per unit)."""
    parts: list[Any] = []
    for unit, attempts in per_unit.items():
        if not attempts:
            continue
        rows = [[str(a["attempt"]), a["status"], _used(a, "tool_calls"), _used(a, "tokens"), _used(a, "wall_s"),
                 str(a["model_calls"]), str(a["environment_failures"]), ", ".join(a["stops"])] for a in attempts]
        parts.append(table(f"{unit}: Formalizer tool loop per attempt (used / budget)",
                           ("attempt", "status", "tool calls", "tokens", "wall s", "model calls",
                            "environment failures", "stops"), rows))
    if totals and totals.get("by_unit"):
        rows = [[k, str(r["attempts"]), str(r["tool_calls"]), str(r["tokens"]), f"{r['wall_s']:.1f}",
                 str(r["model_calls"]), str(r["environment_failures"])]
                for k, r in list(totals["by_unit"].items()) + [("total", totals["total"])]]
        parts.append(table("Formalizer tool loop by unit", ("unit", "attempts", "tool calls", "tokens", "wall s",
                                                            "model calls", "environment failures"), rows))
    return render(*parts) if parts else ""


def _used(a: dict[str, Any], key: str) -> str:
    value, limit = a[key], a["budget"].get(key)
    shown = f"{value:.1f}" if isinstance(value, float) else str(value)
    return shown + (f" / {limit:g}" if limit is not None else "")


def _cost(store) -> dict[str, Any]:
    """Model usage summed per stage, per unit and in total (tokens, USD, calls, replayed,
    cache hits), with the models the pricing table does not price."""
    def row() -> dict[str, Any]:
        return {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "replayed": 0, "cache_hits": 0, "latency_s": 0.0}

    by_stage: dict[str, dict[str, Any]] = {}
    by_unit: dict[str, dict[str, Any]] = {}
    total = row()
    unpriced: set[str] = set()
    for c in store.model_calls():
        if not c.replay and c.provider != "command" and not is_priced(c.model):
            unpriced.add(c.model)
        for r in (by_stage.setdefault(c.stage, row()), by_unit.setdefault(c.unit or "(project)", row()), total):
            r["calls"] += 1
            r["tokens_in"] += c.tokens_in
            r["tokens_out"] += c.tokens_out
            r["cost_usd"] = round(r["cost_usd"] + c.cost, 9)
            r["replayed"] += int(c.replay)
            r["cache_hits"] += int(c.cache_hit and not c.replay)
            r["latency_s"] = round(r["latency_s"] + c.latency_s, 3)
    return {"by_stage": by_stage, "by_unit": by_unit, "total": total, "unpriced_models": sorted(unpriced)}
