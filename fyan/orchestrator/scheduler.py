"""Which ready unit goes next: highest remaining critical path first.

The priority of a unit is the length of the longest chain of unfinished work that waits on
it — its own remaining stages plus, recursively, the longest chain among its unfinished
dependents — measured in seconds from recorded stage durations when known (median per stage),
else in stages. Ties go to document order. Dispatching the head of the longest chain first is
what keeps the makespan near the critical path.
"""

from __future__ import annotations

import statistics

import networkx as nx

from fyan.state.models import Stage, StageRun, UnitStatus, UnitView

DEFAULT_STAGE_SECONDS = 1.0


def stage_costs(runs: list[StageRun]) -> dict[Stage, float]:
    """Median recorded duration (s) of each stage; 1 s for stages never run."""
    durations: dict[Stage, list[float]] = {s: [] for s in Stage}
    for r in runs:
        if r.duration is not None and r.status.value in ("succeeded", "failed"):
            durations[r.stage].append(r.duration)
    return {s: statistics.median(d) if d else DEFAULT_STAGE_SECONDS for s, d in durations.items()}


def remaining_cost(view: UnitView, costs: dict[Stage, float]) -> float:
    if view.status is UnitStatus.COMPLETE:
        return 0.0
    stages = list(Stage)
    start = stages.index(view.next_stage) if view.next_stage else 0
    return sum(costs[s] for s in stages[start:])


def priorities(views: dict[str, UnitView], costs: dict[Stage, float]) -> dict[str, float]:
    """Remaining critical path (seconds) through each unit, following its dependents."""
    g = nx.DiGraph()
    g.add_nodes_from(views)
    for uid, v in views.items():
        for d in v.depends_on:
            g.add_edge(d, uid)  # d -> dependent
    prio: dict[str, float] = {}
    for uid in reversed(list(nx.topological_sort(g))):
        own = remaining_cost(views[uid], costs)
        prio[uid] = own + max((prio[c] for c in g.successors(uid)), default=0.0)
    return prio


def order_ready(views: dict[str, UnitView], ready: list[str], costs: dict[Stage, float]) -> list[str]:
    prio = priorities(views, costs)
    return sorted(ready, key=lambda u: (-prio[u], views[u].unit.order))
