"""``fyan status``: where every unit stands, blocked units grouped by cause, and optionally the
model usage and cost."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel, ConfigDict

from fyan.agents.pricing import is_priced
from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.orchestrator.status import STATUS_ORDER, blocked_lines, project_status, run_line
from fyan.project import Project
from fyan.state.store import Store
from fyan.terminal import quoted, render, table


DESCRIPTION = """Show where every unit stands: one line per unit (stage, status, reason), the blocked units
grouped by root cause with the remedy once, provider outages, whether a run is alive; --cost
adds the model usage and cost per stage and unit."""


EXIT_CODES = {
    3: "the first ingest was interrupted (the next run reads the source again)",
    4: "bad input: configuration, project folder",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--cost", action="store_true", help="also sum model usage and cost per stage and unit")
    p.add_argument("--json", action="store_true", help="print JSON")


class Payload(BaseModel):
    """``fyan status --json``: the project's status (``fyan.orchestrator.status``): units with
    their status, stage and reason, counts, blocked groups, outages, the run; ``cost`` with --cost."""

    model_config = ConfigDict(extra="allow")
    project: str
    units: list[dict[str, Any]] | None = None
    counts: dict[str, int] | None = None
    cost: dict[str, Any] | None = None


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    store = Store(project.paths.db)
    try:
        status = project_status(project, store)
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
    return CommandResult(ExitCode.OK, payload, _status_text(status, payload.get("cost"), args.dir))


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


def _status_text(status, cost: dict | None, folder: str) -> str:
    """``fyan status`` as text: one row per unit (blocked first) with a short reason, then the
    blocked units grouped by root cause with the remedy once, outages, and whether a run is
    alive (``fyan.orchestrator.status``). Document text is printed literally."""
    units = status.units
    rows = [[u["id"], str(u["layer"]), u["kind"], "adopted" if u.get("adopted") else u["status"], u["stage"] or "-",
             u["short_reason"]]
            for u in sorted(units, key=lambda u: (STATUS_ORDER.get(u["status"], 9),
                                                  u["short_reason"].startswith("waits on "), u["layer"]))]
    adopted = sum(bool(u.get("adopted")) for u in units)
    title = f"{status.project}: " + ", ".join(f"{n} {k}" + (f" ({adopted} by adoption)" if k == "complete" and adopted
                                                             else "") for k, n in sorted(status.counts.items()))
    parts: list[Any] = [table(title, ("unit", "layer", "kind", "status", "stage", "reason"), rows)]
    if cost:
        for key, name in (("by_stage", "stage"), ("by_unit", "unit")):
            crow = [[k, str(row["calls"]), str(row["tokens_in"]), str(row["tokens_out"]), f"{row['cost_usd']:.4f}",
                     str(row["replayed"]), str(row["cache_hits"])]
                    for k, row in list(cost[key].items()) + [("total", cost["total"])]]
            parts.append(table(f"model usage by {name}", (name, "calls", "tokens in", "tokens out", "cost (USD)",
                                                          "replayed", "cache hits"), crow))
        if cost["unpriced_models"]:
            parts.append("not in config/pricing.toml (counted as 0 USD): " + ", ".join(cost["unpriced_models"]))
    lines = blocked_lines(status.blocked)
    lines += [o["text"] for o in status.outages]
    if status.stale:
        lines.append(f"The source changed since intake: {len(status.stale)} unit(s) are stale (reported, never re-run):")
        lines += [f"  {u}: {why}" for u, why in list(status.stale.items())[:20]]
    if "UNCONFINED" in status.sandbox or "refused" in status.sandbox:
        lines.append(f"sandbox: {status.sandbox}")
    lines.append(run_line(status.run, status.project, units))
    if not status.run.get("alive") and any(u["status"] in ("ready", "interrupted") for u in units):
        lines.append(f"Next: fyan run {quoted(folder)}")
    return render(*parts) + "\n" + "\n".join(lines)  # the lines as they are: long ones are not wrapped

