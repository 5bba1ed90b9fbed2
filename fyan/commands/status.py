"""``fyan status``: where every unit stands, blocked units grouped by cause, and optionally the
model usage and cost."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fyan.agents.pricing import is_priced
from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.orchestrator.status import project_status
from fyan.orchestrator.status_text import StatusFilter, filter_units, status_text
from fyan.project import Project
from fyan.state.store import Store
from fyan.terminal import quoted


DESCRIPTION = """Show where the project stands, summary first: units by state (complete, running, ready,
failed, waiting) and by chapter, the failed units grouped by cause with the remedy, provider
outages, stale units and the command that accepts a source change, whether a run is alive.
Filters (--failed, --waiting, --section, --unit, --layer, --all) list units one row each;
--summary prints the summary lines only; --cost adds the model usage and cost per stage and unit."""


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
    their status, stage and reason, counts, blocked groups, outages, the run; ``cost`` with --cost."""

    model_config = ConfigDict(extra="allow")
    project: str
    units: list[UnitRow] | None = None
    counts: dict[str, int] | None = None
    cost: dict[str, Any] | None = None


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
    finally:
        store.close()
    if chosen.active:
        payload["units"], payload["filter"] = filter_units(status, chosen), chosen.as_dict()
    return CommandResult(ExitCode.OK, payload, status_text(status, args.dir, chosen, payload.get("cost")))


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
