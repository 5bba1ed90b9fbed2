"""At book scale a user sees what is stuck, why and what to do: a unit that failed (its own
attempts ran out) is told apart from a unit that only waits on it, in ``fyan status`` (text and
``--json``), the progress display and the dashboard.

The 218-unit PFR blueprint (``tests/fixtures/corpus/blueprints/pfr.content.flat.tex``) is run
with an agent that does nothing: the agent double writes no file and the stage check double
refuses the empty workspace, as the reason stage's output check does when the agent left no
proof sketch (it stands in for a model, which cannot run here). The units without dependencies
run out of attempts at the reason stage; every other unit never gets an attempt and only waits.
A generated document of 2,000 units checks that ``fyan status`` fits a screen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fyan.cli import main
from fyan.dashboard.server import start_in_thread
from fyan.orchestrator.engine import Engine
from fyan.orchestrator.status import display_counts, project_status
from fyan.project import Project
from fyan.state.gateway import CheckOutcome, Gateway
from fyan.state.models import Stage
from fyan.state.store import Store
from tests.conftest import corpus
from tests.test_dashboard import PFR, _browser, _launch, _shots

NOTHING = "the agent left nothing in the workspace (test double)"


def _nothing(session, ctx) -> None:
    """An agent that does nothing."""


def _refuse(ctx) -> CheckOutcome:
    return CheckOutcome(False, NOTHING)


@pytest.fixture(scope="module")
def idle(tmp_path_factory):
    """PFR ingested by ``fyan init``, then run to quiescence with an agent that does nothing."""
    root = tmp_path_factory.mktemp("idle") / "pfr"
    assert main(["init", str(root), "--source", str(corpus(PFR)), "--json"]) == 0
    project = Project.open(root)
    gateway = Gateway(project, {s: _refuse for s in Stage})
    engine = Engine(project, gateway, agents={s: _nothing for s in Stage}, providers=lambda s: None, parallelism=4)
    engine.run()
    views = gateway.store.views(project.config.scheduler.attempts_per_stage)
    live = engine.live().counts  # what the progress display shows
    gateway.close()
    return root, views, live


def _status(root: Path):
    project = Project.open(root)
    store = Store(project.paths.db)
    try:
        return project_status(project, store, with_stale=False)
    finally:
        store.close()


def test_failed_units_are_told_apart_from_units_that_only_wait(idle):
    root, views, live = idle
    status = _status(root)
    payload = json.loads(json.dumps(status.as_payload()))
    assert payload["status_version"] == 2
    units = {u["id"]: u for u in payload["units"]}
    roots = {u for u, v in views.items() if not v.depends_on}
    failed = {u for u, x in units.items() if x["status"] == "failed"}
    waiting = {u for u, x in units.items() if x["status"] == "waiting"}
    assert failed == roots and len(failed) >= 10 and failed | waiting == set(units) and len(units) == 218
    assert payload["counts"] == {"failed": len(failed), "waiting": len(waiting)}
    for u in failed:  # its own attempts ran out, with the cause
        assert units[u]["attempts"] == {"reason": 3}
        assert units[u]["cause"] == "out of attempts at the reason stage (3 failed, budget 3)"
        assert units[u]["waiting_on"] == []
    for u in waiting:  # never attempted; names the failed units it waits on, and has no cause
        x = units[u]
        assert x["attempts"] == {} and x["cause"] is None
        assert x["waiting_on"] and set(x["waiting_on"]) <= failed
        assert x["short_reason"].startswith("waits on failed ")
    assert payload["waiting_on_failed"] == len(waiting)
    # waiting_on names every failed unit among the ancestors, not only the first
    deps = {u: set(v.depends_on) for u, v in views.items()}

    def ancestors(u, seen=None):
        seen = set() if seen is None else seen
        for d in deps[u]:
            if d not in seen:
                seen.add(d)
                ancestors(d, seen)
        return seen

    for u in list(waiting)[:40]:
        assert set(units[u]["waiting_on"]) == ancestors(u) & failed
    # the failure groups list only failed units as roots, and count the others as waiting
    assert sum(len(g["roots"]) for g in payload["blocked_groups"]) == len(failed)
    assert {w for g in payload["blocked_groups"] for w in g["waiting"]} == waiting
    # the progress display splits the store's "blocked" the same way
    assert display_counts(views) == payload["counts"] == live


def test_status_text_names_failed_and_waiting_apart(idle, capsys):
    root, _, _ = idle
    status = _status(root)
    n_failed, n_waiting = status.counts["failed"], status.counts["waiting"]
    assert main(["status", str(root)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # the summary first, then one row per chapter, the failed units, and the causes
    assert lines[0] == (f"pfr: 0/218 complete; {n_failed} failed, {n_waiting} waiting "
                        f"({n_waiting} of them on failed units)")
    assert f"{n_failed} failed: out of attempts at the reason stage (3 failed, budget 3)" in out
    assert f"{n_waiting} unit(s) wait on them" in out
    assert " blocked" not in out
    assert len(lines) < 60


def test_status_filters_list_what_they_select(idle, capsys):
    root, views, live = idle
    status = _status(root)
    failed = sorted(u["id"] for u in status.units if u["status"] == "failed")
    assert main(["status", str(root), "--failed", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert sorted(u["id"] for u in got["units"]) == failed and got["filter"]["failed"] is True
    assert got["counts"]["failed"] == len(failed)  # the counts stay the project's
    assert main(["status", str(root), "--failed"]) == 0
    out = capsys.readouterr().out
    assert all(u in out for u in failed) and f"{len(failed)} of 218 unit(s)" in out
    # --section: a piece of the headings, case-insensitive
    chapter = status.units[0]["section"][0]
    under = sorted(u["id"] for u in status.units if u["section"] and u["section"][0] == chapter)
    assert main(["status", str(root), "--section", chapter.upper(), "--json"]) == 0
    assert sorted(u["id"] for u in json.loads(capsys.readouterr().out)["units"]) == under
    # --layer and --unit, combined with a state: all must hold
    layer1 = {u["id"] for u in status.units if u["layer"] == 1}
    assert main(["status", str(root), "--layer", "1", "--waiting", "--json"]) == 0
    assert {u["id"] for u in json.loads(capsys.readouterr().out)["units"]} == layer1
    assert main(["status", str(root), "--unit", failed[0], "--unit", "entropy-pfr", "--json"]) == 0
    assert {u["id"] for u in json.loads(capsys.readouterr().out)["units"]} == {failed[0], "entropy-pfr"}
    # an unknown unit is a usage error
    assert main(["status", str(root), "--unit", "nosuch"]) == 2
    assert "no unit 'nosuch'" in capsys.readouterr().err
    # --summary: the summary lines only
    assert main(["status", str(root), "--summary"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("pfr: 0/218 complete") and len(out.splitlines()) <= 6
    assert "┃" not in out and "│" not in out  # no table


def test_two_thousand_units_fit_one_screen(tmp_path, capsys):
    """2,000 generated units, a few driven: the default view is the summary, units per chapter
    and the failed units — not one line per unit."""
    from tests.test_dashboard import _bench, _drive

    source = _bench().generated(tmp_path / "book.tex", 2000)
    root = tmp_path / "book"
    assert main(["init", str(root), "--source", str(source), "--json"]) == 0
    store = Store(Project.open(root).paths.db)
    units = [u.id for u in store.units()]
    store.close()
    _drive(root, set(units[:30]), units[5])
    capsys.readouterr()
    assert main(["status", str(root)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("book: ") and "/2000 complete; 1 failed, " in lines[0]
    assert len(lines) <= 50, len(lines)
    for chapter in range(1, 11):
        assert f"Chapter {chapter} " in out
    assert units[5] in out
    assert main(["status", str(root), "--all"]) == 0
    assert len(capsys.readouterr().out.splitlines()) > 2000


def test_the_dashboard_shows_what_is_stuck_and_why(idle, tmp_path):
    """In a browser: chapter tiles show failed and waiting apart and coloured apart; a chapter's
    "by cause" lists only its failed units, linked; the stuck list (every failed unit, by cause,
    with the remedy) is one click away from the top of the page."""
    root, _, _ = idle
    sync_api = _browser()
    shots = _shots(tmp_path)
    status = _status(root)
    failed = {u["id"]: u for u in status.units if u["status"] == "failed"}
    chapters_failed = {u["section"][0] for u in failed.values()}
    chapters = list(dict.fromkeys(u["section"][0] for u in sorted(status.units, key=lambda u: u["order"])))
    only_waiting = [c for c in chapters if c not in chapters_failed]
    assert only_waiting, "the fixture has a chapter whose units only wait"
    server, url, _ = start_in_thread(Project.open(root), 0)
    errors: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_selector("#graph[data-ready='1']", timeout=60_000)
            tiles = page.evaluate("""window.fyanGraph.nodes('.group').map(n => ({key: n.data('key'),
                label: n.data('label'), failed: n.hasClass('has-failed'), waits: n.hasClass('waits-on-failed'),
                border: n.style('border-color'), dashed: n.style('border-style')}))""")
            by_key = {t["key"]: t for t in tiles}
            for c in chapters_failed:
                t = by_key[c]
                n = sum(u["section"][0] == c for u in failed.values())
                assert t["failed"] and not t["waits"] and f" {n} failed" in t["label"], t
                assert t["border"] == "rgb(198,40,40)" and t["dashed"] == "solid"
            for c in only_waiting:
                t = by_key[c]
                assert t["waits"] and not t["failed"] and " failed" not in t["label"] and " waiting" in t["label"], t
                assert t["dashed"] == "dashed" and t["border"] != "rgb(198,40,40)"
            page.locator("#graph").screenshot(path=str(shots / "pfr-idle-graph.png"))
            # a chapter that only waits: no "by cause", the failed units it waits on, linked
            t = by_key[only_waiting[0]]
            node = page.evaluate(f"window.fyanGraph.nodes('.group').filter(n => n.data('key') === "
                                 f"{json.dumps(t['key'])})[0].renderedPosition()")
            gbox = page.locator("#graph").bounding_box()
            page.mouse.click(gbox["x"] + node["x"], gbox["y"] + node["y"])
            page.wait_for_selector("#group-waits")
            assert page.locator("#group-causes").count() == 0
            links = page.locator("#group-waits a").evaluate_all("as => as.map(a => a.textContent)")
            assert links and set(links) <= set(failed)
            # a chapter with failed units: "by cause" lists exactly its failed units, each linked
            c = sorted(chapters_failed)[0]
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_selector("#graph[data-ready='1']", timeout=60_000)
            node = page.evaluate(f"window.fyanGraph.nodes('.group').filter(n => n.data('key') === "
                                 f"{json.dumps(c)})[0].renderedPosition()")
            gbox = page.locator("#graph").bounding_box()
            page.mouse.click(gbox["x"] + node["x"], gbox["y"] + node["y"])
            page.wait_for_selector("#picked-group")
            assert page.locator("#picked-group").inner_text() == c, page.locator("#graph-info").inner_text()
            page.wait_for_selector("#group-causes")
            hrefs = page.locator("#group-causes a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
            assert sorted(hrefs) == sorted(f"/unit/{u}" for u, x in failed.items() if x["section"][0] == c)
            # the stuck list: one click from the top; every failed unit, linked, by cause, the remedy
            page.click("#stuck-link a")
            page.wait_for_function("location.hash === '#stuck-title'")
            box = page.locator("#blocked")
            assert "out of attempts at the reason stage" in box.inner_text() and "→ read the failures" in box.inner_text()
            hrefs = box.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
            assert sorted(hrefs) == sorted(f"/unit/{u}" for u in failed)
            page.screenshot(path=str(shots / "pfr-idle-stuck.png"))
            browser.close()
    finally:
        server.should_exit = True
    assert errors == []
