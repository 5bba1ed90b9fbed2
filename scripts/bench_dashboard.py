"""The dashboard's dependency graph at scale, in a real browser: load and layout times at 218
units (PFR, ``tests/fixtures/corpus/blueprints/pfr.content.flat.tex``) and at 2,000 units (a
generated document: 2,000 lemmas in 10 chapters of 5 sections, each citing up to four earlier ones).

    python scripts/bench_dashboard.py [--units 2000] [--repeat 3] [--shots DIR]

For each project: ``fyan init`` (deterministic intake, no model), the dashboard in a thread, then
Debian's Chromium under Playwright (``/usr/bin/chromium``; never ``playwright install``) loads
the page ``--repeat`` times. Printed per project: units, edges, layers, the width of the widest
layer; the median first paint (the browser's first-contentful-paint, seconds from navigation),
the median time from navigation to the drawn graph as the page measures it (``graph s``:
``performance.now()`` when the chapters-and-sections view is drawn) and as Playwright sees it
(``ready s``: from ``goto`` to ``#graph[data-ready]``, polling included), the groups drawn (the
document's chapters, closed above 150 units), the layout of that view and of "layers (compact)"
with its edge routing (milliseconds, measured in the page), in the latter a click-highlight of the
last unit's ancestors and descendants and a status filter (milliseconds), and the zoom at which
the fitted chapters view is shown.
Nothing is asserted: the figures are read.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fyan.cli import main as fyan  # noqa: E402
from fyan.dashboard.server import start_in_thread  # noqa: E402
from fyan.project import Project  # noqa: E402
from fyan.state.store import Store  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
PFR = ROOT / "tests" / "fixtures" / "corpus" / "blueprints" / "pfr.content.flat.tex"


def generated(path: Path, n: int, seed: int = 13, per_section: int = 40, per_chapter: int = 200) -> Path:
    """A TeX document of ``n`` lemmas in chapters of ``per_chapter`` and sections of
    ``per_section``; lemma i cites up to four of the 40 before it."""
    rnd = random.Random(seed)
    parts = []
    for i in range(n):
        if i % per_chapter == 0:
            parts.append(f"\\chapter{{Chapter {i // per_chapter + 1}}}\n")
        if i % per_section == 0:
            parts.append(f"\\section{{Section {i // per_chapter + 1}.{(i % per_chapter) // per_section + 1}}}\n")
        refs = sorted({rnd.randrange(max(0, i - 40), i) for _ in range(rnd.randint(0, 4))}) if i else []
        cites = "".join(f" By Lemma~\\ref{{l{j}}}." for j in refs)
        parts.append(f"\\begin{{lemma}}\\label{{l{i}}} Statement number {i}.{cites}\\end{{lemma}}\n")
    path.write_text("".join(parts), encoding="utf-8")
    return path


def measure(project_dir: Path, repeat: int, shots: Path | None, name: str) -> dict:
    from playwright.sync_api import sync_playwright

    project = Project.open(project_dir)
    store = Store(project.paths.db)
    units = store.units()
    edges = {(d.depends_on, d.unit) for d in store.deps()}
    widest = max(Counter(u.layer for u in units).values())
    last = max(units, key=lambda u: (u.layer, u.order)).id
    store.close()
    server, url, _ = start_in_thread(project, 0)
    load, layout, pick, filt, paint, groups, ready, layers_ms = [], [], [], [], [], [], [], []
    zoom = 0.0
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for i in range(repeat):
                page = browser.new_page(viewport={"width": 1500, "height": 1000})
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_selector("#graph[data-ready='1']", timeout=300_000)
                load.append(time.perf_counter() - t0)
                paint.append(page.evaluate(
                    "(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: NaN}).startTime") / 1000)
                groups.append(page.evaluate("window.fyanGraph.nodes('.group').length"))
                layout.append(page.evaluate("window.fyanGraphLayoutMs"))  # the chapters-and-sections view
                zoom = page.evaluate("window.fyanGraph.zoom()")
                ready.append(page.evaluate("window.fyanTimings.graph") / 1000)
                if shots is not None and i == 0:
                    page.locator("#graph").screenshot(path=str(shots / f"bench-{name}-groups.png"))
                page.select_option("#graph-layout", "layers")  # every unit, one row per layer, edges routed
                page.wait_for_selector("#graph[data-mode='layers']")
                layers_ms.append(page.evaluate("window.fyanGraphLayoutMs"))
                pick.append(page.evaluate(
                    "(() => { const t = performance.now(); window.fyanGraph.getElementById(%r).emit('tap');"
                    " window.fyanGraph.nodes().forEach(n => n.style('opacity')); return performance.now() - t; })()" % last))
                filt.append(page.evaluate(
                    "(() => { const t = performance.now(); const c = document.querySelector('.status-filter[value=ready]');"
                    " c.checked = false; c.dispatchEvent(new Event('change'));"
                    " window.fyanGraph.nodes().forEach(n => n.style('display')); return performance.now() - t; })()"))
                if shots is not None and i == 0:
                    page.locator("#graph").screenshot(path=str(shots / f"bench-{name}-layers.png"))
                page.close()
            browser.close()
    finally:
        server.should_exit = True
    return {"units": len(units), "edges": len(edges), "layers": 1 + max(u.layer for u in units), "widest_layer": widest,
            "paint_s": statistics.median(paint), "groups": groups[-1], "load_s": statistics.median(load),
            "ready_s": statistics.median(ready), "layers_ms": statistics.median(layers_ms),
            "layout_ms": statistics.median(layout),
            "highlight_ms": statistics.median(pick), "filter_ms": statistics.median(filt), "fit_zoom": zoom}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=2000, help="units of the generated document (default 2000)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shots", help="save a screenshot of each graph in this folder")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)")
        return 1
    shots = Path(args.shots) if args.shots else None
    if shots:
        shots.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for name, source in (("pfr", PFR), (f"generated-{args.units}", generated(Path(tmp) / "gen.tex", args.units))):
            target = Path(tmp) / name
            t0 = time.perf_counter()
            assert fyan(["init", str(target), "--source", str(source), "--json"]) == 0
            init_s = time.perf_counter() - t0
            rows.append((name, init_s, measure(target, args.repeat, shots, name)))
    print()
    print(f"{'project':<16} {'units':>6} {'edges':>6} {'layers':>6} {'widest':>6} {'init s':>7} {'paint s':>7} "
          f"{'graph s':>7} {'ready s':>7} {'groups':>6} {'groups ms':>9} {'layers ms':>9} {'highlight ms':>12} "
          f"{'filter ms':>9} {'fit zoom':>8}")
    for name, init_s, m in rows:
        print(f"{name:<16} {m['units']:>6} {m['edges']:>6} {m['layers']:>6} {m['widest_layer']:>6} {init_s:>7.2f} "
              f"{m['paint_s']:>7.2f} {m['ready_s']:>7.2f} {m['load_s']:>7.2f} {m['groups']:>6} {m['layout_ms']:>9.0f} "
              f"{m['layers_ms']:>9.0f} {m['highlight_ms']:>12.0f} {m['filter_ms']:>9.0f} {m['fit_zoom']:>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
