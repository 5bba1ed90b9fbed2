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

Screenshots go to ``$FYAN_SCREENSHOTS`` when set (else the test's temporary folder).
"""

from __future__ import annotations

import hashlib
import http.client
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
from fyan.state.gateway import STAGE_OUTPUTS, CheckOutcome, Gateway
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
    assert status == 200 and state["run"]["alive"] is False and state["counts"] == {"blocked": 11}
    [group] = state["blocked_groups"]
    assert group["cause"] == "Lean toolchain not found" and group["remedy"].startswith("install elan")
    assert sorted(group["roots"]) == ["def-divides", "definition-1"] and len(group["waiting"]) == 9
    by_id = {u["id"]: u for u in state["units"]}
    assert by_id["theorem-8"]["short_reason"] in ("waits on blocked definition-1", "waits on blocked def-divides")
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
        assert page.evaluate("window.fyanGraph.nodes().length") == 11
        assert page.evaluate("window.fyanGraph.nodes('.status-blocked').length") == 11
        assert "0/2" in page.locator("#layers").inner_text()
        # the cause once, with its remedy; each row says only what is particular to it
        assert page.locator("#blocked .cause").count() == 1
        assert "11 blocked: Lean toolchain not found → install elan" in page.locator("#blocked").inner_text()
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
    for rel in STAGE_OUTPUTS[ctx.run.stage]:
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
            counts = json.loads(request(url, path="/api/state")[1])["counts"]
            assert counts["interrupted"] == 1 and counts["complete"] >= 50 and counts["blocked"] >= 2
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
    """Issue 26: the page lists what no \\uses ties to the rest, as networkx finds it in /api/state."""
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
