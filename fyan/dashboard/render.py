"""HTML and SVG of the dashboard, generated on the server (no front-end build, no script).

Everything shown is read from the store (read-only) and the unit folders; every value that
comes from a file or a model is escaped.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from fyan.state.models import UnitView

STATUS_ORDER = {"blocked": 0, "running": 1, "ready": 2, "waiting": 3, "complete": 4}
COLOURS = {"complete": "#2e7d32", "running": "#1565c0", "ready": "#6a1b9a", "waiting": "#9e9e9e",
           "blocked": "#c62828"}

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222;max-width:1200px}
h1{font-size:1.4rem} h2{font-size:1.1rem;margin-top:1.6rem}
table{border-collapse:collapse;margin:.4rem 0} td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;
vertical-align:top;font-size:.9rem} th{background:#f4f4f4}
.badge{display:inline-block;padding:0 .4rem;border-radius:.3rem;color:#fff;font-size:.8rem}
.bar{background:#eee;width:220px;height:.8rem;display:inline-block;vertical-align:middle}
.bar span{background:#2e7d32;height:100%;display:block}
pre{background:#f7f7f7;padding:.6rem;overflow:auto;max-height:24rem;font-size:.8rem}
.stale{color:#e65100;font-weight:bold} textarea{width:100%;max-width:48rem}
.note{color:#555;font-size:.85rem}
"""


def badge(status: str) -> str:
    return f'<span class="badge status-{escape(status)}" style="background:{COLOURS.get(status, "#555")}">{escape(status)}</span>'


def page(title: str, body: str, refresh: int | None = None) -> str:
    meta = f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else ""
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>{meta}<title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")


def dag_svg(views: dict[str, UnitView], stale: dict[str, str]) -> str:
    """The dependency DAG: one column per layer, units in document order, edges dependency →
    dependent, each node coloured by status and linking to the unit's page."""
    layers: dict[int, list[UnitView]] = {}
    for v in views.values():
        layers.setdefault(v.unit.layer, []).append(v)
    pos: dict[str, tuple[float, float]] = {}
    col_w, row_h, node_w, node_h, pad = 230, 34, 200, 24, 12
    for layer, vs in sorted(layers.items()):
        for i, v in enumerate(sorted(vs, key=lambda v: v.unit.order)):
            pos[v.unit.id] = (pad + layer * col_w, pad + i * row_h)
    width = pad * 2 + max(layers, default=0) * col_w + node_w
    height = pad * 2 + max((len(vs) for vs in layers.values()), default=1) * row_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="dag" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="dependency DAG">']
    for v in views.values():
        x2, y2 = pos[v.unit.id]
        for d in v.depends_on:
            if d in pos:
                x1, y1 = pos[d]
                out.append(f'<line x1="{x1 + node_w}" y1="{y1 + node_h / 2}" x2="{x2}" y2="{y2 + node_h / 2}" '
                           'stroke="#bbb" stroke-width="1"/>')
    for uid, v in views.items():
        x, y = pos[uid]
        colour = COLOURS.get(v.status.value, "#555")
        ring = ' stroke="#e65100" stroke-width="3"' if uid in stale else ""
        label = uid if len(uid) <= 26 else uid[:25] + "…"
        out.append(
            f'<a href="/unit/{escape(uid)}"><g class="node" data-unit="{escape(uid)}" data-status="{v.status.value}">'
            f'<title>{escape(uid)}: {escape(v.status.value)}{(" — " + escape(v.reason)) if v.reason else ""}</title>'
            f'<rect x="{x}" y="{y}" width="{node_w}" height="{node_h}" rx="4" fill="{colour}"{ring}/>'
            f'<text x="{x + 6}" y="{y + 16}" fill="#fff" font-size="12">{escape(label)}</text></g></a>')
    out.append("</svg>")
    return "".join(out)


def overview(name: str, views: dict[str, UnitView], stale: dict[str, str], costs: dict[str, float],
             daemon: dict[str, Any] | None, refresh: int | None) -> str:
    counts: dict[str, int] = {}
    layers: dict[int, dict[str, int]] = {}
    for v in views.values():
        counts[v.status.value] = counts.get(v.status.value, 0) + 1
        row = layers.setdefault(v.unit.layer, {})
        row[v.status.value] = row.get(v.status.value, 0) + 1
    total = len(views)
    done = counts.get("complete", 0)
    head = (f"<h1>{escape(name)}: {done}/{total} units complete</h1>"
            f"<p>{' '.join(f'{badge(k)} {n}' for k, n in sorted(counts.items(), key=lambda kv: STATUS_ORDER.get(kv[0], 9)))}"
            f" — total model cost ${sum(costs.values()):.4f}</p>")
    head += (f'<p class="note">daemon: pid {daemon.get("pid")}</p>' if daemon else
             '<p class="note">no daemon is running on this project (showing the recorded state)</p>')
    rows = []
    for layer, c in sorted(layers.items()):
        n = sum(c.values())
        pct = 100 * c.get("complete", 0) / n if n else 0
        rows.append(f"<tr><td>{layer}</td><td><span class=bar><span style='width:{pct:.0f}%'></span></span> "
                    f"{c.get('complete', 0)}/{n}</td><td>{' '.join(f'{badge(k)} {v}' for k, v in sorted(c.items()))}</td></tr>")
    progress = "<h2>Progress by layer</h2><table id=layers><tr><th>layer</th><th>complete</th><th>statuses</th></tr>" + "".join(rows) + "</table>"
    units = sorted(views.values(), key=lambda v: (STATUS_ORDER.get(v.status.value, 9), v.unit.layer, v.unit.order))
    urows = []
    for v in units:
        st = f' <span class=stale title="{escape(stale[v.unit.id])}">stale</span>' if v.unit.id in stale else ""
        urows.append(
            f'<tr class="unit-row" data-unit="{escape(v.unit.id)}"><td><a href="/unit/{escape(v.unit.id)}">{escape(v.unit.id)}</a>{st}</td>'
            f"<td>{v.unit.layer}</td><td>{escape(v.unit.kind)}</td><td>{badge(v.status.value)}</td>"
            f"<td>{escape(v.next_stage.value if v.next_stage else '-')}</td><td>${costs.get(v.unit.id, 0.0):.4f}</td>"
            f"<td>{escape((v.reason or '')[:300])}</td></tr>")
    table = ("<h2>Units (blockers first)</h2><table id=units><tr><th>unit</th><th>layer</th><th>kind</th><th>status</th>"
             "<th>stage</th><th>cost</th><th>reason</th></tr>" + "".join(urows) + "</table>")
    svg = "<h2>Dependency DAG</h2>" + dag_svg(views, stale)
    return page(f"Fyan — {name}", head + progress + table + svg, refresh)


def _json_block(title: str, data: Any) -> str:
    if data is None:
        return f"<h2>{escape(title)}</h2><p class=note>none recorded</p>"
    return f"<h2>{escape(title)}</h2><pre>{escape(json.dumps(data, indent=2, ensure_ascii=False))}</pre>"


def _gate_block(gate: Any) -> str:
    if not isinstance(gate, dict) or not isinstance(gate.get("checks"), list):
        return _json_block("Gate report", gate)
    mark = {"pass": "#2e7d32", "fail": "#c62828", "unavailable": "#757575"}
    rows = "".join(
        f"<tr><td>{escape(str(c.get('name')))}</td><td><span class=badge style='background:{mark.get(c.get('status'), '#555')}'>"
        f"{escape(str(c.get('status')))}</span></td><td>{'required' if c.get('required', True) else 'informational'}</td>"
        f"<td>{escape(str(c.get('reason', '')))}</td></tr>" for c in gate["checks"])
    verdict = "PASSED" if gate.get("passed") else "NOT PASSED"
    return (f"<h2>Gate report: {verdict}</h2><table id=gate><tr><th>check</th><th>status</th><th></th><th>reason</th></tr>"
            f"{rows}</table><details><summary>evidence (JSON)</summary><pre>"
            f"{escape(json.dumps(gate, indent=2, ensure_ascii=False))}</pre></details>")


def unit_page(name: str, view: UnitView, runs: list, gate: Any, audit_record: Any, audit_result: Any,
              calls: list, events: list, guidance_text: str, stale: str | None, saved: bool) -> str:
    uid = view.unit.id
    body = [f'<p><a href="/">← {escape(name)}</a></p><h1>{escape(uid)} {badge(view.status.value)}</h1>',
            f"<p>{escape(view.unit.kind)}, layer {view.unit.layer}, {escape(view.unit.provenance)}; next stage "
            f"{escape(view.next_stage.value if view.next_stage else '-')}</p>"]
    if view.reason:
        body.append(f"<p><b>Why:</b> {escape(view.reason)}</p>")
    if stale:
        body.append(f"<p class=stale>Stale: {escape(stale)} (held: not re-run)</p>")
    if saved:
        body.append("<p id=saved><b>Guidance saved</b> to guidance/{}.md; the unit's next attempt gets it as context."
                    "</p>".format(escape(uid)))
    rows = "".join(
        f"<tr><td>{r.id}</td><td>{escape(r.stage.value)}</td><td>{r.attempt}</td><td>{badge(r.status.value) if r.status.value in COLOURS else escape(r.status.value)}</td>"
        f"<td>{'' if r.duration is None else f'{r.duration:.1f}s'}</td><td>{escape((r.reason or '')[:400])}</td></tr>"
        for r in runs)
    body.append("<h2>Stage history</h2><table id=history><tr><th>run</th><th>stage</th><th>attempt</th><th>status</th>"
                f"<th>took</th><th>reason</th></tr>{rows}</table>")
    body.append(_gate_block(gate))
    body.append(_json_block("Audit result", audit_result))
    body.append(_json_block("Audit record", audit_record))
    cost = sum(c.cost for c in calls)
    body.append(f"<h2>Cost</h2><p>{len(calls)} model call(s), {sum(c.tokens_in for c in calls)} tokens in, "
                f"{sum(c.tokens_out for c in calls)} out, ${cost:.4f}"
                f" ({sum(c.replay for c in calls)} replayed)</p>")
    ev = "".join(f"<tr><td>{e.id}</td><td>{escape(e.kind)}</td><td>{escape(json.dumps(e.data, ensure_ascii=False)[:300])}</td></tr>"
                 for e in events if e.kind not in ("stage_started",))
    body.append(f"<h2>Events</h2><table><tr><th>id</th><th>kind</th><th>data</th></tr>{ev}</table>")
    body.append(
        "<h2>Guidance</h2><p class=note>Advice for the unit's next attempt. It reaches the model as quoted context "
        "only; it never edits Lean files or frozen statements. Saved to guidance/&lt;unit&gt;.md.</p>"
        '<form id=guidance-form method=post action="/guidance">'
        f'<input type=hidden name=unit value="{escape(uid)}">'
        f'<textarea name=text rows=8 id=guidance-text>{escape(guidance_text)}</textarea><br>'
        '<label>Token (printed when the dashboard started): <input name=token id=token type=password></label> '
        "<button type=submit id=guidance-submit>Save guidance</button></form>")
    return page(f"Fyan — {uid}", "".join(body))
