"""``fyan status`` as text, and its filters: summary first, sized for a screen at book scale.

The default view is a summary that fits one screen whatever the number of units: the counts
per state, whether a run is alive, the units per chapter (the document's top headings, or per
layer when it has none) by state, then the failed units grouped by cause with the remedy once
(at most ``FAILED_ROWS`` rows; ``--failed`` lists them all), stale units and what to do. A
project of at most ``SMALL`` units gets one row per unit instead of the per-chapter table. The
filters (``StatusFilter``: failed, waiting, section, unit, layer) list the units they select,
one row each; ``--all`` lists every unit; ``--summary`` prints the summary lines only. The
JSON form carries the same selection (``filter_units``). Document text is printed literally.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fyan.errors import UsageError
from fyan.orchestrator.accept import command_line
from fyan.orchestrator.status import STATUS_ORDER, ProjectStatus, blocked_lines, run_line
from fyan.terminal import quoted, render, table

#: failed units shown in the default view before "(+N more: fyan status --failed)"
FAILED_ROWS = 15
#: up to this many units the default view lists every unit (they fit a screen anyway)
SMALL = 30
#: the states in the order of the summary's columns
COLUMNS = ("complete", "running", "interrupted", "ready", "waiting", "failed")


@dataclass
class StatusFilter:
    """Which units ``fyan status`` lists. Empty: the summary view. ``failed``/``waiting``
    select by state (both: either); ``section``: a case-insensitive piece of the unit's
    headings (``Chapter 2`` or ``Chapter 2 › Sums``); ``units``: ids (unknown ones are a usage
    error); ``layers``: layer numbers. Criteria of different kinds must all hold."""

    failed: bool = False
    waiting: bool = False
    section: str | None = None
    units: list[str] = field(default_factory=list)
    layers: list[int] = field(default_factory=list)
    every: bool = False  # --all: every unit, one row each
    summary_only: bool = False

    @property
    def active(self) -> bool:
        return bool(self.failed or self.waiting or self.section or self.units or self.layers or self.every)

    def as_dict(self) -> dict[str, Any]:
        return {"failed": self.failed, "waiting": self.waiting, "section": self.section, "units": self.units,
                "layers": self.layers, "all": self.every, "summary": self.summary_only}


def filter_units(status: ProjectStatus, f: StatusFilter) -> list[dict[str, Any]]:
    """The units ``f`` selects, in ``status.units``' order. Raises ``UsageError`` (exit 2) for
    an id in ``f.units`` that is not a unit of the project, or a section no unit stands under."""
    known = {u["id"] for u in status.units}
    unknown = [u for u in f.units if u not in known]
    if unknown:
        raise UsageError(f"{status.project}: no unit {', '.join(repr(u) for u in unknown)}",
                         hint=f"list units with `fyan status {quoted(status.root)} --all`")
    states = {s for s, on in (("failed", f.failed), ("waiting", f.waiting)) if on}
    needle = (f.section or "").strip().casefold()
    out = []
    for u in status.units:
        if states and u["status"] not in states:
            continue
        if needle and needle not in " › ".join(u.get("section") or []).casefold():
            continue
        if f.units and u["id"] not in f.units:
            continue
        if f.layers and u["layer"] not in f.layers:
            continue
        out.append(u)
    if needle and not out and not states and not f.units and not f.layers:
        raise UsageError(f"{status.project}: no unit stands under a heading matching {f.section!r}",
                         hint="the headings are in the section column of `fyan status --all`")
    return out


def summary_line(status: ProjectStatus) -> str:
    """``book: 120/2000 complete; 1 failed, 1879 waiting (74 of them on failed units)``."""
    c, n = status.counts, len(status.units)
    adopted = sum(bool(u.get("adopted")) for u in status.units)
    parts = [f"{c[k]} {k}" for k in sorted(c, key=lambda k: STATUS_ORDER.get(k, 9)) if k != "complete"]
    text = f"{status.project}: {c.get('complete', 0)}/{n} complete" + (f" ({adopted} by adoption)" if adopted else "")
    if parts:
        text += "; " + ", ".join(parts)
    if status.waiting_on_failed:
        text += f" ({status.waiting_on_failed} of them on failed units)"
    if status.replans or status.refuted_lemmas:
        text += f"; {status.replans} re-plan(s), {status.refuted_lemmas} planned lemma(s) refuted"
    return text


def _groups(units: list[dict[str, Any]]) -> tuple[str, list[tuple[str, dict[str, int]]]]:
    """Units per chapter (first heading) by state, in document order; per layer without headings."""
    by: dict[str, dict[str, int]] = {}
    if any(u.get("section") for u in units):
        what = "chapter"
        for u in sorted(units, key=lambda u: u.get("order", 0)):
            key = (u.get("section") or ["(before the first heading)"])[0]
            row = by.setdefault(key, {})
            row[u["status"]] = row.get(u["status"], 0) + 1
    else:
        what = "layer"
        for u in sorted(units, key=lambda u: u["layer"]):
            row = by.setdefault(str(u["layer"]), {})
            row[u["status"]] = row.get(u["status"], 0) + 1
    return what, list(by.items())


def refutations_executed(u: dict[str, Any]) -> int:
    """The slot for the counterexample searches run for a unit (``fyan.refute``): its row's
    ``refutations`` — a count, or a mapping with ``executed`` — else 0 (a Fyan without them)."""
    slot = u.get("refutations")
    if isinstance(slot, dict):
        slot = slot.get("executed")
    return slot if isinstance(slot, int) else 0


def replan_note(u: dict[str, Any]) -> str:
    """`` [2 re-plans, 1 lemma refuted, 3 refutations executed]`` after a unit's reason: its
    re-plans and refuted planned lemmas (``fyan.replan``) and the refutations slot
    (``refutations_executed``); "" when all are 0."""
    r, f, e = int(u.get("replans") or 0), int(u.get("refuted_lemmas") or 0), refutations_executed(u)
    parts = [f"{r} re-plan{'s' if r != 1 else ''}"] if r or f else []
    if f:
        parts.append(f"{f} lemma{'s' if f != 1 else ''} refuted")
    if e:
        parts.append(f"{e} refutation{'s' if e != 1 else ''} executed")
    return f" [{', '.join(parts)}]" if parts else ""


def _unit_rows(units: list[dict[str, Any]]) -> list[list[str]]:
    return [[u["id"], str(u["layer"]), u["kind"], "adopted" if u.get("adopted") else u["status"], u["stage"] or "-",
             (u["short_reason"] or "") + replan_note(u)]
            for u in sorted(units, key=lambda u: (STATUS_ORDER.get(u["status"], 9), bool(u.get("waiting_on")),
                                                  u["layer"], u.get("order", 0)))]


def refutation_lines(units: list[dict[str, Any]], limit: int = 20) -> list[str]:
    """One line counting the counterexample searches of the units that ran any (executed /
    of them refuting / worthless), at most ``limit`` units by name."""
    ran = [u for u in units if any((u.get("refutations") or {}).values())]
    if not ran:
        return []
    parts = [f"{u['id']} {r['executed']}/{r['refuting']}/{r['worthless']}" for u in ran[:limit]
             for r in [u["refutations"]]]
    more = f", ... (+{len(ran) - limit} more)" if len(ran) > limit else ""
    return ["counterexample searches per unit (executed/refuting/worthless): " + ", ".join(parts) + more]


def stale_lines(status: ProjectStatus, folder: str, limit: int = 20) -> list[str]:
    """The stale units, at most ``limit`` by name, and the command that accepts the change
    (``fyan.orchestrator.accept``)."""
    if not status.stale:
        return []
    lines = [f"The source changed since intake: {len(status.stale)} unit(s) are stale and held (not re-run until "
             "the change is accepted):"]
    lines += [f"  {u}: {why}" for u, why in list(status.stale.items())[:limit]]
    if len(status.stale) > limit:
        lines.append(f"  ... (+{len(status.stale) - limit} more)")
    lines.append(command_line(folder))
    return lines


def status_text(status: ProjectStatus, folder: str, f: StatusFilter | None = None, cost: dict | None = None) -> str:
    """``fyan status`` as text (module docstring)."""
    f = f or StatusFilter()
    units = status.units
    head = [summary_line(status), run_line(status.run, status.project, units)]
    if f.summary_only:
        head += blocked_lines(status.blocked)
        if status.stale:
            head += stale_lines(status, folder, limit=0)
        return "\n".join(head)
    parts: list[Any] = ["\n".join(head)]
    if f.active:
        chosen = filter_units(status, f)
        title = f"{len(chosen)} of {len(units)} unit(s)"
        parts.append(table(title, ("unit", "layer", "kind", "status", "stage", "reason"), _unit_rows(chosen)))
    elif len(units) <= SMALL:  # a small project fits a screen unit by unit
        parts.append(table(f"{len(units)} unit(s)", ("unit", "layer", "kind", "status", "stage", "reason"),
                           _unit_rows(units)))
    else:
        what, groups = _groups(units)
        present = [c for c in COLUMNS if any(row.get(c) for _, row in groups)]
        rows = [[name, str(sum(row.values()))] + [str(row.get(c, 0) or "") for c in present] for name, row in groups]
        parts.append(table(f"units by {what}", (what, "units", *present), rows))
        failed = [u for u in units if u["status"] == "failed"]
        if failed:
            shown = _unit_rows(failed)[:FAILED_ROWS]
            title = f"failed units ({len(failed)})" + (
                f", first {FAILED_ROWS}: all with `fyan status {quoted(folder)} --failed`" if len(failed) > FAILED_ROWS
                else "")
            parts.append(table(title, ("unit", "layer", "kind", "status", "stage", "reason"), shown))
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
    lines += refutation_lines(filter_units(status, f) if f.active else units)
    lines += [o["text"] for o in status.outages]
    lines += stale_lines(status, folder)
    if "UNCONFINED" in status.sandbox or "refused" in status.sandbox:
        lines.append(f"sandbox: {status.sandbox}")
    if not status.run.get("alive") and any(u["status"] in ("ready", "interrupted") for u in units):
        lines.append(f"Next: fyan run {quoted(folder)}")
    if not f.active and len(units) > SMALL:
        lines.append(f"Each unit: `fyan status {quoted(folder)} --all`; filters: --failed, --waiting, --section TEXT, "
                     "--unit ID, --layer N")
    return render(*parts) + ("\n" + "\n".join(lines) if lines else "")
