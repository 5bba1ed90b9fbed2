"""The local dashboard: loopback only, token-guarded writes that touch only ``guidance/``, and
the page in a real headless Chromium (Debian's ``chromium`` driven by Playwright; skipped with
the reason when either is missing).

The example project's state comes from a run without a Lean toolchain (``no_lake``): every
unit stops blocked at the gate, which gives each page stage history, an audit record and a
gate report to show.
"""

from __future__ import annotations

import hashlib
import http.client
import shutil
import urllib.parse
from pathlib import Path

import pytest

from fyan.cli import main
from fyan.dashboard.server import start_in_thread
from fyan.project import Project

CHROMIUM = "/usr/bin/chromium"


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
    status, text = request(url, "POST", "/guidance", {"unit": "theorem-8", "text": "try harder"})
    assert status == 403 and "token is required" in text
    status, _ = request(url, "POST", "/guidance", {"unit": "theorem-8", "text": "x", "token": "wrong"})
    assert status == 403
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


def _browser():
    playwright = pytest.importorskip("playwright.sync_api", reason="Python package playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)")
    return playwright


def test_dashboard_in_a_real_browser(dashboard):
    example, server, url, token = dashboard
    sync_api = _browser()
    with sync_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        except Exception as e:  # pragma: no cover - depends on the machine
            pytest.skip(f"chromium did not start under Playwright: {e}")
        page = browser.new_page()
        page.goto(url)
        assert page.title() == "Fyan — taste-number-theory"
        rows = page.locator("#units tr.unit-row")
        assert rows.count() == 11
        ids = {rows.nth(i).get_attribute("data-unit") for i in range(11)}
        assert {"definition-1", "def-divides", "theorem-8"} <= ids
        assert page.locator("#dag g.node").count() == 11
        assert page.locator("#dag g.node[data-status=blocked]").count() == 11
        assert "0/2" in page.locator("#layers").inner_text()
        # blockers first: the root causes (blocked at the gate) are listed with their reason
        assert "Lean toolchain not found" in rows.first.inner_text()
        before = snapshot(example)
        page.click("#units a[href='/unit/def-divides']")
        assert page.locator("h1").inner_text().startswith("def-divides")
        history = page.locator("#history").inner_text()
        for stage in ("reason", "plan", "audit", "prove", "gate"):
            assert stage in history
        assert "axiom_audit" in page.content()  # the gate report
        # a write without the token is refused
        page.fill("#guidance-text", "Unfold the definition first.")
        page.click("#guidance-submit")
        assert "refused" in page.content()
        assert snapshot(example) == before
        page.go_back()
        page.fill("#guidance-text", "Unfold the definition first.")
        page.fill("#token", token)
        page.click("#guidance-submit")
        page.wait_for_selector("#saved")
        browser.close()
    after = snapshot(example)
    assert {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)} == {"guidance/def-divides.md"}
    assert (example / "guidance" / "def-divides.md").read_text() == "Unfold the definition first.\n"
    shutil.rmtree(example / "guidance")
