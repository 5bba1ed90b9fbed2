"""The local dashboard: loopback only, token-guarded writes that touch only ``guidance/``, what
it shows (run liveness, blocked causes grouped with their remedy, outages, the audit as a
table), live updates, and the dependency graph — in a real headless Chromium (Debian's
``chromium`` driven by Playwright; skipped with the reason when either is missing) on the
example (11 units) and on PFR (218 units, ``tests/fixtures/corpus/blueprints/pfr.content.flat.tex``).

State: the example project after a run without a Lean toolchain (``no_lake``: every unit stops
blocked at the gate, with stage history, an audit record and a gate report); PFR ingested for
real, then driven by the engine with agent and check doubles (they stand in for the models and
Lean) so that every status appears: complete, ready, waiting, blocked (a failing plan check, and
the units that depend on it) and one attempt cut off by a killed process.

At book scale: PFR and a generated document of 2,000 units (``scripts/bench_dashboard.py``'s
generator: 10 chapters of 5 sections) open as closed chapters whose labels are readable at the
fitted zoom (font size times zoom, read from cytoscape) with a stuck chapter marked; a click on it
says why and lists its units; the table filters, sorts and is linked both ways with the graph;
in the "layers (compact)" layout no edge passes through a box it does not join (node boxes and
drawn segments read from the page).

Screenshots go to ``$FYAN_SCREENSHOTS`` when set (else the test's temporary folder); the ones
in ``docs/dashboard/`` come from there.
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import json
import os
import shutil
import time
import urllib.parse
from pathlib import Path

import networkx as nx
import pytest

from fyan.agents.providers.breaker import Outage
from fyan.cli import main
from fyan.dashboard.server import start_in_thread
from fyan.orchestrator.engine import Engine
from fyan.orchestrator.live import LiveState
from fyan.project import Project
from fyan.stages import stage_spec
from fyan.state.gateway import CheckOutcome, Gateway
from fyan.state.models import Stage
from fyan.state.store import Store
from tests.conftest import corpus

CHROMIUM = "/usr/bin/chromium"
PFR = "blueprints/pfr.content.flat.tex"


def snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def dashboard(example, no_lake, capsys):
    assert main(["run", str(example), "--json"]) == 3
    capsys.readouterr()
    server, url, token = start_in_thread(Project.open(example), 0)
    assert server.started, "the dashboard did not start"
    yield example, server, url, token
    server.should_exit = True


def request(url: str, method: str = "GET", path: str = "/", body: dict | None = None, headers: dict | None = None):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    data = urllib.parse.urlencode(body).encode() if body is not None else None
    hdrs = {"Content-Type": "application/x-www-form-urlencoded"} if data else {}
    conn.request(method, path, body=data, headers={**hdrs, **(headers or {})})
    resp = conn.getresponse()
    return resp.status, resp.read().decode()


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a TCP socket listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.split(":")
            if int(p, 16) == port and state == "0A":  # LISTEN
                found.add(addr)
    return found


def test_dashboard_listens_on_loopback_only_and_refuses_writes_without_the_token(dashboard):
    example, server, url, token = dashboard
    port = urllib.parse.urlsplit(url).port
    assert url.startswith("http://127.0.0.1:")
    assert {s.getsockname()[0] for srv in server.servers for s in srv.sockets} == {"127.0.0.1"}
    assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1, nothing on 0.0.0.0 or another interface
    status, page = request(url)
    assert status == 200 and "definition-1" in page and "Progress by layer" in page
    before = snapshot(example)
    # a refused save answers with the unit's page: the typed text kept, and what to do
    status, text = request(url, "POST", "/guidance", {"unit": "theorem-8", "text": "try <b>harder</b> [lean]"})
    assert status == 403 and "Not saved: the write token is missing or wrong" in text
    assert "try &lt;b&gt;harder&lt;/b&gt; [lean]</textarea>" in text  # kept, escaped
    status, text = request(url, "POST", "/guidance", {"unit": "theorem-8", "text": "x", "token": "wrong"})
    assert status == 403 and "id=token-error" in text
    status, text = request(url, "POST", "/guidance", {"unit": "../../fyan.toml", "text": "x", "token": "wrong"})
    assert status == 403 and "token is required" in text  # no page for what is not a unit
    status, _ = request(url, "POST", "/guidance", {"unit": "../../fyan.toml", "text": "x", "token": token})
    assert status == 404  # only existing units; never a path
    status, _ = request(url, headers={"Host": "evil.example:80"})
    assert status == 400  # DNS-rebinding guard
    assert snapshot(example) == before  # nothing was written
    status, _ = request(url, "POST", "/guidance", {"unit": "theorem-8", "text": "Use induction.", "token": token})
    assert status == 303
    after = snapshot(example)
    assert {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)} == {"guidance/theorem-8.md"}
    assert (example / "guidance" / "theorem-8.md").read_text() == "Use induction.\n"


def test_dashboard_state_groups_causes_tells_liveness_and_versions(dashboard):
    example, server, url, token = dashboard
    status, body = request(url, path="/api/state")
    state = json.loads(body)
    assert status == 200 and state["run"]["alive"] is False and state["counts"] == {"failed": 2, "waiting": 9}
    [group] = state["blocked_groups"]
    assert group["cause"] == "Lean toolchain not found" and group["remedy"].startswith("install elan")
    assert sorted(group["roots"]) == ["def-divides", "definition-1"] and len(group["waiting"]) == 9
    by_id = {u["id"]: u for u in state["units"]}
    assert by_id["theorem-8"]["short_reason"] == "waits on failed definition-1, def-divides"
    assert by_id["theorem-8"]["waiting_on"] == ["definition-1", "def-divides"] and by_id["theorem-8"]["cause"] is None
    # the version moves with every recorded change (the pages poll it to update by themselves)
    _, v1 = request(url, path="/api/version")
    gw = Gateway(Project.open(example))
    gw.event("guidance", "theorem-8", {"source": "human", "after_run": 0})
    gw.close()
    _, v2 = request(url, path="/api/version")
    assert json.loads(v1)["version"] != json.loads(v2)["version"]
    # the audit record as a table: each graded row with the slots' text, relation, grade
    status, page = request(url, path="/unit/def-divides")
    assert status == 200 and "<table id=audit-rows>" in page and "<td>same</td>" in page
    assert "Semantic audit: grade 2 (threshold 2), routing freeze" in page


def test_the_serving_run_hands_the_dashboard_its_outages(example, no_lake, capsys):
    assert main(["run", str(example), "--json"]) == 3
    capsys.readouterr()
    now = time.time()
    outage = Outage("anthropic", since=now - 120, next_try=now + 40, failures=3, error="APIConnectionError")
    server, url, _ = start_in_thread(Project.open(example), 0, live=lambda: LiveState(outages=[outage], pid=os.getpid(),
                                                                                        started=now - 600))
    try:
        _, body = request(url, path="/api/state")
        state = json.loads(body)
        assert state["run"]["alive"] and [o["provider"] for o in state["providers"]] == ["anthropic"]
        assert "anthropic unavailable since " in state["providers"][0]["text"]
        assert state["providers"][0]["text"].endswith(("next try in 40 s", "next try in 39 s"))
        _, page = request(url)
        assert "class=outage" in page and "anthropic unavailable since" in page
    finally:
        server.should_exit = True


# -- in a real browser -----------------------------------------------------------------------------

def _browser():
    playwright = pytest.importorskip("playwright.sync_api", reason="Python package playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)")
    return playwright


def _launch(p):
    try:
        return p.chromium.launch(executable_path=CHROMIUM,
                                 args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
    except Exception as e:  # pragma: no cover - depends on the machine
        pytest.skip(f"chromium did not start under Playwright: {e}")


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("FYAN_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_dashboard_in_a_real_browser(dashboard, tmp_path):
    example, server, url, token = dashboard
    sync_api = _browser()
    shots = _shots(tmp_path)
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = _launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        assert page.title() == "Fyan — taste-number-theory"
        page.wait_for_selector("#graph[data-ready='1']")
        rows = page.locator("#units tr.unit-row")
        assert rows.count() == 11
        ids = {rows.nth(i).get_attribute("data-unit") for i in range(11)}
        assert {"definition-1", "def-divides", "theorem-8"} <= ids
        assert page.evaluate("window.fyanGraph.nodes('.unit').length") == 11  # 11 units: their section shown open
        opened = page.evaluate("window.fyanGraph.nodes('.group.open').map(n => n.data('key'))")
        assert opened == ["A Taste of Number Theory"]
        assert page.evaluate("window.fyanGraph.nodes('.status-failed').length") == 2
        assert page.evaluate("window.fyanGraph.nodes('.status-waiting').length") == 9
        page.locator("#graph").screenshot(path=str(shots / "example-graph.png"))
        assert "0/2" in page.locator("#layers").inner_text()
        # the cause once, with its remedy; each row says only what is particular to it
        assert page.locator("#blocked .cause").count() == 1
        assert "2 failed: Lean toolchain not found (at the gate stage) → install elan" in page.locator("#blocked").inner_text()
        assert "9 unit(s) wait on them" in page.locator("#blocked").inner_text()
        assert "Lean toolchain not found" in rows.first.inner_text()
        page.screenshot(path=str(shots / "example-overview.png"), full_page=True)
        before = snapshot(example)
        page.click("#units a[href='/unit/def-divides']")
        assert page.locator("h1").inner_text().startswith("def-divides")
        history = page.locator("#history").inner_text()
        for stage in ("reason", "plan", "audit", "prove", "gate"):
            assert stage in history
        assert "axiom_audit" in page.content()  # the gate report
        audit = page.locator("#audit-rows")
        assert audit.locator("tbody tr").count() >= 3 and "same" in audit.inner_text()
        # a write with a wrong token is refused; the typed text stays, and the page says what to do
        page.fill("#guidance-text", "Unfold the definition first.")
        page.fill("#token", "not-the-token")
        page.click("#guidance-submit")
        page.wait_for_selector("#token-error")
        assert "Paste the token printed when the dashboard started" in page.locator("#token-error").inner_text()
        assert page.input_value("#guidance-text") == "Unfold the definition first."
        page.screenshot(path=str(shots / "example-wrong-token.png"), full_page=True)
        assert snapshot(example) == before
        page.fill("#token", token)
        page.click("#guidance-submit")
        page.wait_for_selector("#saved")
        browser.close()
    assert errors == []
    after = snapshot(example)
    assert {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)} == {"guidance/def-divides.md"}
    assert (example / "guidance" / "def-divides.md").read_text() == "Unfold the definition first.\n"
    shutil.rmtree(example / "guidance")


# -- PFR: 218 units ----------------------------------------------------------------------------------

FAIL_PLAN = "ruzsa-triangle"


def _write_outputs(session, ctx) -> None:
    for rel in stage_spec(ctx.run.stage).outputs:
        ctx.write(rel, f"{rel} of {ctx.unit.id}\n")


def _check(ctx) -> CheckOutcome:
    if ctx.unit.id == FAIL_PLAN and ctx.run.stage is Stage.PLAN:
        return CheckOutcome(False, "the plan cites Finset.sum_le_sum_of_subset_of_nonneg, which does not exist (test double)")
    return CheckOutcome(True, "ok (test double)")


@pytest.fixture(scope="module")
def pfr(tmp_path_factory):
    """PFR ingested by ``fyan init``, then 60 units driven by the engine (doubles for the
    models and Lean), and one attempt left running by a process that no longer exists."""
    root = tmp_path_factory.mktemp("pfr") / "pfr"
    assert main(["init", str(root), "--source", str(corpus(PFR)), "--json"]) == 0
    project = Project.open(root)
    gateway = Gateway(project, {s: _check for s in Stage})
    units = [u.id for u in gateway.store.units()]
    assert len(units) == 218
    Engine(project, gateway, agents={s: _write_outputs for s in Stage}, providers=lambda s: None,
           only=set(units[:60]), parallelism=4).run()
    views = gateway.store.views(3)
    ready = sorted(u for u, v in views.items() if v.status.value == "ready")
    gateway.begin(ready[0], views[ready[0]].next_stage, 3)  # its process was killed: no lock holder
    gateway.close()
    return root, ready[0]


def test_pfr_dependency_graph_in_a_real_browser(pfr, tmp_path):
    root, cut_off = pfr
    sync_api = _browser()
    shots = _shots(tmp_path)
    project = Project.open(root)
    store = Store(project.paths.db)
    graph = nx.DiGraph((d.depends_on, d.unit) for d in store.deps())
    graph.add_nodes_from(u.id for u in store.units())
    layer = {u.id: u.layer for u in store.units()}
    server, url, token = start_in_thread(project, 0)
    errors: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_selector("#graph[data-ready='1']", timeout=30_000)
            page.select_option("#graph-layout", "layers")
            page.wait_for_selector("#graph[data-mode='layers']")
            counts = json.loads(request(url, path="/api/state")[1])["counts"]
            assert counts["interrupted"] == 1 and counts["complete"] >= 50 and counts["failed"] == 1
            assert {"ready", "waiting"} <= set(counts)
            assert "1 attempt(s) were cut off when the last run stopped" in page.locator("#run").inner_text()
            js = "window.fyanGraph"
            assert page.evaluate(f"{js}.nodes().length") == 218
            assert page.evaluate(f"{js}.edges().length") == graph.number_of_edges()
            # arrows, and a layered layout: every dependency sits in a row above its dependent,
            # rows follow Fyan's layers, and the whole graph fits the view (not a 5,000-px strip)
            assert page.evaluate(f"{js}.edges()[0].style('target-arrow-shape')") == "triangle"
            rows = page.evaluate(f"Object.fromEntries({js}.nodes().map(n => [n.id(), n.position('y')]))")
            assert all(rows[a] < rows[b] for a, b in graph.edges)
            bands = sorted(set(layer.values()))  # a layer's rows (a wide one wraps) lie between its neighbours'
            for lower, upper in zip(bands, bands[1:]):
                assert max(rows[u] for u in rows if layer[u] == lower) < min(rows[u] for u in rows if layer[u] == upper)
            box = page.evaluate(f"{js}.elements().renderedBoundingBox()")
            assert box["w"] <= page.locator("#graph").bounding_box()["width"] + 1
            page.screenshot(path=str(shots / "pfr-overview.png"))
            page.locator("#graph").screenshot(path=str(shots / "pfr-graph.png"))
            # a real click on the final theorem: its ancestors and descendants are highlighted
            target = max(layer, key=lambda u: (layer[u], u))
            zoom = page.evaluate(f"{js}.zoom()")
            pos = page.evaluate(f"{js}.getElementById({json.dumps(target)}).renderedPosition()")
            gbox = page.locator("#graph").bounding_box()
            page.mouse.click(gbox["x"] + pos["x"], gbox["y"] + pos["y"])
            page.wait_for_selector("#picked-unit")
            assert page.locator("#picked-unit").inner_text() == target
            up, down = len(nx.ancestors(graph, target)), len(nx.descendants(graph, target))
            assert page.locator("#picked-lineage").inner_text() == (
                f"needs {up} unit(s) (orange), needed by {down} unit(s) (blue)")
            assert page.evaluate(f"{js}.nodes('.ancestor').length") == up
            assert page.evaluate(f"{js}.nodes('.faded').length") == 218 - up - down - 1
            page.locator("#graph").screenshot(path=str(shots / "pfr-lineage.png"))
            # pan by dragging the background (a corner: the padding around the fitted graph),
            # zoom with the wheel
            pan = page.evaluate(f"{js}.pan()")
            page.mouse.move(gbox["x"] + 6, gbox["y"] + 6)
            page.mouse.down()
            page.mouse.move(gbox["x"] + 156, gbox["y"] + 86, steps=8)
            page.mouse.up()
            moved = page.evaluate(f"{js}.pan()")
            assert (round(moved["x"] - pan["x"]), round(moved["y"] - pan["y"])) == (150, 80)
            page.mouse.move(gbox["x"] + gbox["width"] / 2, gbox["y"] + gbox["height"] / 2)
            for _ in range(20):
                page.mouse.wheel(0, -300)
                page.wait_for_timeout(40)
            assert page.evaluate(f"{js}.zoom()") > 1.5 * zoom
            page.locator("#graph").screenshot(path=str(shots / "pfr-zoomed.png"))
            # filter by status and by layer
            page.click("#graph-clear")
            visible = f"{js}.nodes().filter(n => n.style('display') !== 'none')"  # the computed style
            page.uncheck(".status-filter[value=waiting]")
            assert page.evaluate(f"{visible}.length") == 218 - counts["waiting"]
            page.locator("#graph").screenshot(path=str(shots / "pfr-filtered.png"))
            page.check(".status-filter[value=waiting]")
            page.select_option("#layer-from", "3")
            page.select_option("#layer-to", "5")
            shown = page.evaluate(f"{visible}.map(n => n.id())")
            assert sorted(shown) == sorted(u for u, lv in layer.items() if 3 <= lv <= 5)
            page.select_option("#layer-from", "0")
            page.select_option("#layer-to", str(max(layer.values())))
            # live: a unit finishes while the page is open; the page follows without a reload
            page.evaluate("window.notReloaded = true")
            gw = Gateway(project, {s: _check for s in Stage})
            Engine(project, gw, agents={s: _write_outputs for s in Stage}, providers=lambda s: None,
                   only={cut_off}, parallelism=1).run()
            gw.close()
            page.wait_for_function(f"{js}.getElementById({json.dumps(cut_off)}).data('status') === 'complete'",
                                   timeout=15_000)
            assert page.evaluate("window.notReloaded") is True
            row = page.locator(f"#units tr.unit-row[data-unit={json.dumps(cut_off)}]")
            assert "complete" in row.inner_text()
            assert "cut off" not in page.locator("#run").inner_text()
            page.screenshot(path=str(shots / "pfr-after-update.png"))
            browser.close()
    finally:
        server.should_exit = True
        store.close()
    assert errors == []


def test_the_overview_names_isolated_statements_and_components(dashboard):
    """The page lists what no \\uses ties to the rest, as networkx finds it in /api/state."""
    example, server, url, token = dashboard
    _, body = request(url, path="/api/state")
    units = json.loads(body)["units"]
    g = nx.Graph()
    g.add_nodes_from(u["id"] for u in units)
    g.add_edges_from((u["id"], d) for u in units for d in u["depends_on"])
    isolated = [n for n in g if g.degree(n) == 0]
    components = [c for c in nx.connected_components(g) if len(c) > 1]
    status, page = request(url)
    assert status == 200 and "Isolated statements and components" in page
    if isolated:
        assert f"{len(isolated)} isolated" in page
    if len(components) > 1:
        assert f"{len(components)} disconnected components" in page
    if not isolated and len(components) <= 1:
        assert "connected to the others" in page
# -- what the page says about the run, and the unit page -----------------------------

@pytest.mark.parametrize("background", [False, True])
def test_the_page_says_which_kind_of_run_is_working_and_how_it_stops(example, no_lake, capsys, background):
    """During a real run (``Daemon.serve``, as ``fyan run`` and ``fyan daemon serve`` call it), a
    dashboard of its own (``fyan dashboard``: the lock and daemon.json) says what is true."""
    from fyan.commands.daemon import daemon_status
    from fyan.daemon import Daemon, DaemonOptions

    seen: dict[str, str] = {}

    def during(dm) -> None:
        server, url, _ = start_in_thread(Project.open(example), 0)
        try:
            seen["api"] = json.loads(request(url, path="/api/state")[1])["run_text"]
            seen["page"] = request(url)[1]
            seen["daemon status"] = daemon_status(Project.open(example)).text  # `fyan daemon status`
        finally:
            server.should_exit = True

    Daemon(example, DaemonOptions(until_idle=True, background=background), on_ready=during).serve()
    capsys.readouterr()
    if background:
        assert seen["api"].startswith("The Fyan daemon is working on this project (pid ")
        assert "`fyan daemon stop " in seen["api"] and "Ctrl-C" not in seen["api"]
        assert seen["daemon status"].startswith("Fyan daemon running on taste-number-theory: pid ")
    else:
        assert seen["api"].startswith("A foreground `fyan run` is working on this project (pid ")
        assert "Ctrl-C in its terminal stops it; running the same command again resumes" in seen["api"]
        assert "daemon" not in seen["api"]
        assert seen["daemon status"].startswith("taste-number-theory is locked by a foreground `fyan run` (pid ")
    assert escape_html(seen["api"]) in seen["page"]  # the served page and the live update agree
    # afterwards: nothing runs, and the page says how to start
    server, url, _ = start_in_thread(Project.open(example), 0)
    try:
        after = json.loads(request(url, path="/api/state")[1])["run_text"]
    finally:
        server.should_exit = True
    assert after.startswith("No Fyan run is working on this project") and "`fyan run " in after


def escape_html(text: str) -> str:
    from html import escape

    return escape(text)


def test_the_unit_page_shows_the_statement_and_no_header_only_tables(pfr):
    root, _ = pfr
    project = Project.open(root)
    server, url, _ = start_in_thread(project, 0)
    try:
        status, page = request(url, path="/unit/entropy-pfr")  # never attempted (waits on its dependencies)
        done, page_done = request(url, path="/unit/" + Store(project.paths.db).units()[0].id)
    finally:
        server.should_exit = True
    assert status == 200 and done == 200
    assert "<pre id=statement>\\begin{theorem}[Entropy version of PFR]\\label{entropy-pfr}" in page  # the TeX, in a fold
    math = page.split("<div id=statement-math class=math>")[1].split("</div>")[0]  # typeset by the page's KaTeX
    assert "\\label" not in math and "\\begin{theorem}" not in math and "d[X^0_1;U_H]" in math
    assert "d[X^0_1;U_H] + d[X^0_2;U_H] \\le 11 d[X^0_1;X^0_2]" in page
    assert "fyan provenance" not in page.split("<pre id=statement>")[1].split("</pre>")[0]
    assert "<p id=section>In Entropy version of PFR › Conclusion</p>" in page
    assert "<p class=note id=history>No attempt yet.</p>" in page and "<table id=history>" not in page
    assert "<table id=history>" in page_done  # a unit with attempts keeps its table
    for html in (page, page_done):  # no table is only its header row
        for table in html.split("<table")[1:]:
            assert table.split("</table>")[0].count("<tr") >= 2, table[:200]


# -- book scale: the document's structure, the table, edges around boxes ------------

READABLE_PX = 11  # a group's label at the fitted zoom, in rendered pixels

GROUPS_JS = """(() => { const cy = window.fyanGraph, z = cy.zoom();
  const view = {x1: 0, y1: 0, x2: cy.width(), y2: cy.height()};
  return cy.nodes('.group').map(n => { const b = n.renderedBoundingBox();
    return {key: n.data('key'), label: n.data('label'), open: n.hasClass('open'), blocked: n.hasClass('has-failed'),
            waits: n.hasClass('waits-on-failed'),
            px: parseFloat(n.style('font-size')) * z,
            inView: b.x1 >= view.x1 - 1 && b.y1 >= view.y1 - 1 && b.x2 <= view.x2 + 1 && b.y2 <= view.y2 + 1,
            x: (b.x1 + b.x2) / 2, y: (b.y1 + b.y2) / 2}; }); })()"""

# every edge as its drawn polyline (source centre, cytoscape's segment points, target centre),
# and each that passes through the box of a node it does not join
CROSSINGS_JS = """(() => { const cy = window.fyanGraph, bad = [];
  const boxes = cy.nodes(':visible').map(n => { const b = n.boundingBox({includeLabels: false});
    return {id: n.id(), x1: b.x1 + 1, y1: b.y1 + 1, x2: b.x2 - 1, y2: b.y2 - 1}; });
  const hits = (p, q, b) => {  // Liang-Barsky: does segment p-q meet box b?
    let t0 = 0, t1 = 1; const dx = q.x - p.x, dy = q.y - p.y;
    for (const [pp, qq] of [[-dx, p.x - b.x1], [dx, b.x2 - p.x], [-dy, p.y - b.y1], [dy, b.y2 - p.y]]) {
      if (pp === 0) { if (qq < 0) return false; continue; }
      const r = qq / pp;
      if (pp < 0) { if (r > t1) return false; if (r > t0) t0 = r; }
      else { if (r < t0) return false; if (r < t1) t1 = r; }
    }
    return true; };
  let segments = 0;
  cy.edges(':visible').forEach(e => {
    const pts = [e.source().position()].concat(e.segmentPoints() || []).concat([e.target().position()]);
    for (let i = 0; i + 1 < pts.length; i++) {
      segments++;
      for (const b of boxes) {
        if (b.id === e.source().id() || b.id === e.target().id()) continue;
        if (hits(pts[i], pts[i + 1], b)) { bad.push([e.id(), b.id]); break; }
      }
    }
  });
  return {bad: bad, segments: segments, edges: cy.edges(':visible').length}; })()"""


def test_no_edge_passes_through_a_box_in_the_layers_layout(pfr, tmp_path):
    """PFR's widest layers wrap into sub-rows, and long edges cross several rows: every edge is
    routed through the gaps (read back from the page: node boxes and the drawn segments)."""
    root, _ = pfr
    sync_api = _browser()
    shots = _shots(tmp_path)
    server, url, _ = start_in_thread(Project.open(root), 0)
    try:
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(url)
            page.wait_for_selector("#graph[data-ready='1']", timeout=30_000)
            page.select_option("#graph-layout", "layers")
            page.wait_for_selector("#graph[data-mode='layers']")
            rows = page.evaluate("new Set(window.fyanGraph.nodes().map(n => n.position('y'))).size")
            layers = page.evaluate("new Set(window.fyanGraph.nodes().map(n => n.data('layer'))).size")
            assert rows > layers  # some layer wrapped: the case the issue is about
            found = page.evaluate(CROSSINGS_JS)
            assert found["edges"] > 400 and found["segments"] > found["edges"]
            assert found["bad"] == []
            page.locator("#graph").screenshot(path=str(shots / "pfr-layers-routed.png"))
            browser.close()
    finally:
        server.should_exit = True


def _bench():
    path = Path(__file__).parents[1] / "scripts" / "bench_dashboard.py"
    spec = importlib.util.spec_from_file_location("bench_dashboard", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _drive(root: Path, only: set[str], fail: str) -> None:
    """The engine over ``only`` with doubles for the models and Lean (``_write_outputs``); the
    plan check of ``fail`` fails, so it and what waits on it are blocked."""
    project = Project.open(root)

    def check(ctx) -> CheckOutcome:
        if ctx.unit.id == fail and ctx.run.stage is Stage.PLAN:
            return CheckOutcome(False, "the plan cites Finset.sum_le_sum_of_subset_of_nonneg, which does not exist "
                                       "(test double)")
        return CheckOutcome(True, "ok (test double)")

    gateway = Gateway(project, {s: check for s in Stage})
    Engine(project, gateway, agents={s: _write_outputs for s in Stage}, providers=lambda s: None,
           only=only, parallelism=4).run()
    gateway.close()


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """2,000 lemmas in 10 chapters of 5 sections (as ``scripts/bench_dashboard.py`` generates
    them), ingested; the first 120 driven by the engine, one failing its plan check."""
    tmp = tmp_path_factory.mktemp("book")
    source = _bench().generated(tmp / "book.tex", 2000)
    root = tmp / "book"
    assert main(["init", str(root), "--source", str(source), "--json"]) == 0
    store = Store(Project.open(root).paths.db)
    units = [u.id for u in store.units()]
    store.close()
    _drive(root, set(units[:120]), units[45])
    return root, units[45]


def _overview(url: str, page, shots: Path, name: str) -> list[dict]:
    page.goto(url)
    page.wait_for_selector("#graph[data-ready='1']", timeout=60_000)
    groups = page.evaluate(GROUPS_JS)
    page.locator("#graph").screenshot(path=str(shots / f"{name}-graph.png"))
    return groups


def _check_structure(url: str, page, groups: list[dict], chapters: list[str], blocked_chapter: str, cause: str,
                     blocked_unit: str, shots: Path, name: str) -> None:
    """What a user must see at book scale, and the way from "which chapter is stuck" to "why"."""
    # closed chapters, each labelled readably with its progress, all in view
    assert [g["key"] for g in groups] == chapters and not any(g["open"] for g in groups)
    for g in groups:
        assert g["px"] >= READABLE_PX, g
        assert g["inView"] and "complete" in g["label"]
    # the chapter whose own unit failed stands out (solid red border, "1 failed"); chapters whose
    # units only wait on it are marked apart (dashed border, "waiting", never "failed")
    stuck = [g for g in groups if g["blocked"]]
    assert [g["key"] for g in stuck] == [blocked_chapter] and " 1 failed" in stuck[0]["label"]
    assert all(" failed" not in g["label"] for g in groups if not g["blocked"])
    assert all(" waiting" in g["label"] and not g["blocked"] for g in groups if g["waits"])
    [stuck] = stuck
    # a click on the stuck chapter opens it, says why, and lists its units in the table
    gbox = page.locator("#graph").bounding_box()
    page.mouse.click(gbox["x"] + stuck["x"], gbox["y"] + stuck["y"])
    page.wait_for_selector("#group-causes")
    # "by cause" lists only the unit that failed, linked to its page
    assert page.locator("#group-causes").inner_text().startswith(f"1 × {cause}: {blocked_unit}")
    assert page.locator("#group-causes a").evaluate_all("as => as.map(a => a.getAttribute('href'))") == [
        f"/unit/{blocked_unit}"]
    assert page.evaluate("window.fyanGraph.nodes('.group.open').map(n => n.data('key'))") == [blocked_chapter]
    sections = page.evaluate(GROUPS_JS)
    inner = [g for g in sections if g["key"].startswith(blocked_chapter + " › ")]
    if inner:  # its sections, the stuck one marked
        assert any(g["blocked"] for g in inner)
    else:  # a chapter without sections: its units
        assert page.evaluate(f"window.fyanGraph.getElementById({json.dumps(blocked_unit)}).visible()")
    shown = page.locator("#units tr.unit-row:not([hidden])")
    assert shown.count() > 0
    assert all(s.startswith(blocked_chapter) for s in shown.locator("td.section").all_inner_texts())
    page.locator("#graph").screenshot(path=str(shots / f"{name}-opened.png"))
    # the table: filter by cause, sort by status; a row shows its unit in the graph (groups opened)
    page.select_option("#table-section", "")
    page.select_option("#table-cause", cause)
    rows = page.locator("#units tr.unit-row:not([hidden])")
    assert rows.count() >= 1 and set(rows.locator("td.cause").all_inner_texts()) == {cause}
    page.click("#units th[data-sort=layer]")
    layers = [int(t) for t in page.locator("#units tr.unit-row:not([hidden]) td:nth-child(3)").all_inner_texts()]
    assert layers == sorted(layers)
    page.locator(f"#units tr.unit-row[data-unit={json.dumps(blocked_unit)}] td.section").click()
    page.wait_for_selector("#picked-unit")
    assert page.locator("#picked-unit").inner_text() == blocked_unit
    assert page.evaluate(f"window.fyanGraph.getElementById({json.dumps(blocked_unit)}).hasClass('picked')")
    # and a unit clicked in the graph selects its row
    other = page.evaluate(f"window.fyanGraph.getElementById({json.dumps(blocked_unit)}).successors('node.unit')"
                          ".filter(n => n.visible()).map(n => n.id())")
    if other:
        page.select_option("#table-cause", "")
        pos = page.evaluate(f"window.fyanGraph.getElementById({json.dumps(other[0])}).renderedPosition()")
        page.mouse.click(gbox["x"] + pos["x"], gbox["y"] + pos["y"])
        page.wait_for_selector(f"#units tr.picked-row[data-unit={json.dumps(other[0])}]")


def test_pfr_by_chapter_in_a_real_browser(pfr, tmp_path):
    """218 units: closed chapters with readable labels and progress; the stuck one found and
    explained without typing a unit id; screenshots at the fitted zoom."""
    root, _ = pfr
    sync_api = _browser()
    shots = _shots(tmp_path)
    project = Project.open(root)
    store = Store(project.paths.db)
    units = sorted(json.loads(request_state(project))["units"], key=lambda u: u["order"])
    chapters = list(dict.fromkeys(u["section"][0] for u in units))
    store.close()
    server, url, _ = start_in_thread(project, 0)
    errors: list[str] = []
    try:
        state = json.loads(request(url, path="/api/state")[1])
        [unit] = [u for u in state["units"] if u["id"] == FAIL_PLAN]
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            groups = _overview(url, page, shots, "pfr-218")
            page.screenshot(path=str(shots / "pfr-218-page.png"))
            _check_structure(url, page, groups, chapters, unit["section"][0], unit["cause"], FAIL_PLAN, shots,
                             "pfr-218")
            browser.close()
    finally:
        server.should_exit = True
    assert errors == []


def request_state(project: Project) -> str:
    from fyan.orchestrator.status import project_status

    store = Store(project.paths.db)
    try:
        return json.dumps(project_status(project, store, with_stale=False).as_payload())
    finally:
        store.close()


def test_two_thousand_units_by_chapter_in_a_real_browser(book, tmp_path):
    root, failing = book
    sync_api = _browser()
    shots = _shots(tmp_path)
    project = Project.open(root)
    server, url, _ = start_in_thread(project, 0)
    errors: list[str] = []
    try:
        state = json.loads(request(url, path="/api/state")[1])
        assert len(state["units"]) == 2000 and state["counts"]["complete"] >= 40 and state["counts"]["failed"] == 1
        [unit] = [u for u in state["units"] if u["id"] == failing]
        chapters = [f"Chapter {i}" for i in range(1, 11)]
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            groups = _overview(url, page, shots, "book-2000")
            assert unit["section"] == ["Chapter 1", "Section 1.2"]
            _check_structure(url, page, groups, chapters, "Chapter 1", unit["cause"], failing, shots, "book-2000")
            # semantic zoom: zoomed out, the units' labels are left out (the groups' stay); zoomed
            # in on the stuck unit, they are drawn
            shown = ("(() => { const cy = window.fyanGraph; return cy.nodes('%s').filter(n => n.visible())"
                     ".map(n => parseFloat(n.style('font-size')) * cy.zoom()"
                     " >= parseFloat(n.style('min-zoomed-font-size'))); })()")
            # zoom and read in one script: the page may still fit the view after a late layout
            # (a loaded machine), which must not land between the zoom and the reading
            units, groups_shown = page.evaluate(
                f"(() => {{ window.fyanGraph.zoom(0.4); return [{shown % '.unit'}, {shown % '.group'}]; }})()")
            assert set(units) == {False} and set(groups_shown) == {True}
            assert True in page.evaluate(
                f"(() => {{ window.fyanGraph.zoom({{level: 1.2, position: "
                f"window.fyanGraph.getElementById({json.dumps(failing)}).position()}}); return {shown % '.unit'}; }})()")
            page.locator("#graph").screenshot(path=str(shots / "book-2000-zoomed.png"))
            browser.close()
    finally:
        server.should_exit = True
    assert errors == []


# -- the unit page: the statement typeset, the Lean statement and proof with diagnostics ------------

def test_the_unit_page_shows_the_frozen_lean_statement_the_proof_and_its_diagnostics(dashboard):
    example, server, url, token = dashboard
    folder = example / "units" / "def-divides"
    store = Store(Project.open(example).paths.db)
    freezes = store.freezes("def-divides")
    store.close()
    assert freezes, "the example's plan froze its statement"
    status, page = request(url, path="/unit/def-divides")
    assert status == 200
    frozen = page.split("<table id=frozen>")[1].split("</table>")[0]
    for f in freezes:
        assert f"<code>{escape_html(f.decl)}</code>" in frozen and escape_html(f.normalized_signature) in frozen
    assert f"<pre id=lean-statement>{escape_html((folder / 'Statement.lean').read_text())}</pre>" in page
    assert f"<pre id=lean-proof>{escape_html((folder / 'Basic.lean').read_text())}</pre>" in page
    last = json.loads((folder / "iterations.json").read_text())[-1]
    assert "<h3>Diagnostics</h3>" in page and f"Formalizer iteration {last['iteration']} of the last prove attempt" in page


def test_the_unit_page_typesets_the_statement_in_a_real_browser(pfr, tmp_path):
    """KaTeX (vendored, no network) turns the statement's TeX into math: no raw delimiter is left
    in the typeset text, and a unit without Lean yet says so."""
    root, _ = pfr
    sync_api = _browser()
    shots = _shots(tmp_path)
    server, url, _ = start_in_thread(Project.open(root), 0)
    errors: list[str] = []
    requests: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url + "unit/entropy-pfr")
            page.wait_for_selector("#statement-math[data-typeset='1']")
            assert page.locator("#statement-math .katex").count() >= 2
            text = page.locator("#statement-math").inner_text()
            assert "$" not in text and "\\le" not in text and "Entropy version of PFR" not in text
            assert page.evaluate("getComputedStyle(document.querySelector('#statement-math .katex')).fontFamily"
                                 ).startswith("KaTeX_Main")
            assert page.locator("#lean-statement").inner_text() == "No Lean statement yet (the plan stage writes it)."
            page.screenshot(path=str(shots / "unit-page-math.png"))
            browser.close()
    finally:
        server.should_exit = True
    assert errors == []
    assert all(r.startswith(url) for r in requests), [r for r in requests if not r.startswith(url)]  # nothing fetched elsewhere


# -- every layout routes its edges around the boxes they do not join -----------------------------

# as CROSSINGS_JS, with the drawn leaves as the boxes (units and closed groups); an open group is
# a frame whose own units' edges must cross it
LEAF_CROSSINGS_JS = CROSSINGS_JS.replace("cy.nodes(':visible').map(", "cy.nodes(':visible').filter(n => !n.isParent()).map(")


def test_no_edge_passes_behind_a_box_in_the_default_and_dagre_layouts(pfr, tmp_path):
    """The default view (the document's chapters and sections) and dagre draw every edge around
    the boxes it does not join — read back from the page: leaf boxes and the drawn segments —
    at book scale (closed chapters), with a chapter opened, and in the dagre layout."""
    root, _ = pfr
    sync_api = _browser()
    shots = _shots(tmp_path)
    server, url, _ = start_in_thread(Project.open(root), 0)
    errors: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_selector("#graph[data-mode='groups']", timeout=60_000)
            found = page.evaluate(LEAF_CROSSINGS_JS)
            assert found["edges"] >= 5 and found["bad"] == [], found
            # open the chapter with the most units: its units and the other chapters' tiles
            key = page.evaluate("window.fyanGraph.nodes('.group').sort((a, b) => b.data('label').length - "
                                "a.data('label').length)[0].data('key')")
            page.evaluate(f"window.fyanGraph.nodes('.group').filter(n => n.data('key') === {json.dumps(key)})"
                          "[0].emit('tap')")
            page.wait_for_function("window.fyanGraph.nodes('.group.open').length > 0")
            found = page.evaluate(LEAF_CROSSINGS_JS)
            assert found["edges"] >= 10 and found["segments"] > found["edges"] and found["bad"] == [], found
            page.locator("#graph").screenshot(path=str(shots / "pfr-groups-routed.png"))
            page.select_option("#graph-layout", "dagre")
            page.wait_for_selector("#graph[data-mode='dagre']")
            found = page.evaluate(LEAF_CROSSINGS_JS)
            assert found["edges"] > 400 and found["bad"] == [], (len(found["bad"]), found["bad"][:5])
            browser.close()
    finally:
        server.should_exit = True
    assert errors == []


def test_find_centres_the_unit_with_its_neighbourhood_and_cut_ids_have_a_tooltip(pfr, tmp_path):
    root, _ = pfr
    sync_api = _browser()
    server, url, _ = start_in_thread(Project.open(root), 0)
    try:
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(url)
            page.wait_for_selector("#graph[data-ready='1']", timeout=60_000)
            target = "construct-good-prelim-improv"  # 28 characters: its label is cut
            page.fill("#graph-search", target)
            page.dispatch_event("#graph-search", "change")
            page.wait_for_selector(f"#graph[data-found={json.dumps(target)}]")
            geo = page.evaluate(f"""(() => {{ const cy = window.fyanGraph, n = cy.getElementById({json.dumps(target)});
                const p = n.renderedPosition(), view = {{w: cy.width(), h: cy.height()}};
                const near = n.closedNeighborhood().nodes().filter(m => m.visible()).map(m => {{
                  const b = m.renderedBoundingBox({{includeLabels: false}});
                  return b.x1 >= -1 && b.y1 >= -1 && b.x2 <= view.w + 1 && b.y2 <= view.h + 1; }});
                return {{x: p.x, y: p.y, w: view.w, h: view.h, near: near, label: n.data('label'),
                         zoom: cy.zoom()}}; }})()""")
            assert abs(geo["x"] - geo["w"] / 2) < 2 and abs(geo["y"] - geo["h"] / 2) < 2  # centred
            assert len(geo["near"]) >= 2 and all(geo["near"]), geo  # its neighbourhood in view
            # its label is wider than the box: cytoscape cuts it with an ellipsis (text-max-width)
            width = page.evaluate(f"""(() => {{ const n = window.fyanGraph.getElementById({json.dumps(target)});
                const c = document.createElement('canvas').getContext('2d');
                c.font = n.style('font-size') + ' ' + n.style('font-family');
                return [c.measureText(n.data('label')).width, parseFloat(n.style('text-max-width'))]; }})()""")
            assert width[0] > width[1], width
            gbox = page.locator("#graph").bounding_box()
            page.mouse.move(gbox["x"] + geo["x"], gbox["y"] + geo["y"])
            page.wait_for_selector("#graph-tip", state="visible")
            assert page.locator("#graph-tip").inner_text().startswith(target + " (")
            browser.close()
    finally:
        server.should_exit = True


def test_the_unit_page_typesets_the_documents_own_macros(tmp_path, capsys):
    """Macros the document defines (\\newcommand with and without arguments, \\DeclareMathOperator)
    reach the page's KaTeX: its notation is typeset, not shown as an error in red."""
    doc = tmp_path / "doc.tex"
    doc.write_text("\\documentclass{article}\n\\newcommand{\\F}{\\mathbb{F}}\n\\newcommand{\\dist}[2]{d[#1;#2]}\n"
                   "\\DeclareMathOperator{\\rk}{rk}\n\\newcommand{\\bad}{</script><script>window.owned=1</script>}\n"
                   "\\begin{document}\n\\section{Ranks}\n"
                   "\\begin{lemma}\\label{lem:rk} For a matrix $A$ over $\\F_2$, $\\rk A \\le n$ and "
                   "$\\dist{X}{Y} \\ge 0$.\\end{lemma}\n\\end{document}\n")
    assert main(["init", str(tmp_path / "p"), "--source", str(doc), "--json"]) == 0
    capsys.readouterr()
    sync_api = _browser()
    server, url, _ = start_in_thread(Project.open(tmp_path / "p"), 0)
    try:
        _, html = request(url, path="/unit/lem-rk")
        macros = json.loads(html.split("<script type=application/json id=tex-macros>")[1].split("</script>")[0])
        # a definition holding "</script>" stays data: the JSON decodes whole, nothing runs
        assert macros == {"\\F": "\\mathbb{F}", "\\dist": "d[#1;#2]", "\\rk": "\\operatorname{rk}",
                          "\\bad": "</script><script>window.owned=1</script>"}
        with sync_api.sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page()
            page.goto(url + "unit/lem-rk")
            page.wait_for_selector("#statement-math[data-typeset='1']")
            assert page.locator("#statement-math .katex").count() == 4
            assert page.locator("#statement-math .katex-error").count() == 0
            assert "d[X;Y]" in page.locator("#statement-math").inner_text().replace("\n", "")
            assert page.evaluate("window.owned") is None
            browser.close()
    finally:
        server.should_exit = True
