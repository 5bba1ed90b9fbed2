"""HTML of the dashboard, generated on the server; a small script (``static/dashboard.js``)
keeps it current and draws the dependency graph.

Every page is complete without the script (the state at the time it was served). With it, the
overview polls ``/api/version`` and re-reads ``/api/state`` when something changed, and the
graph is drawn by cytoscape with its dagre layout, and the unit page's statement math is typeset
by KaTeX (both vendored: ``static/vendor/README.md``; nothing is loaded from elsewhere). Every
value that comes from a document, a model or a tool is escaped here, and the script only ever
sets text (``textContent``), never markup.
"""

from __future__ import annotations

import json
import re
import time
from html import escape
from typing import Any

from fyan.orchestrator.status import STATUS_ORDER, ProjectStatus
from fyan.orchestrator.status_text import refutations_executed, replan_note
from fyan.state.models import UnitView
from fyan.terminal import quoted

COLOURS = {"complete": "#2e7d32", "running": "#1565c0", "ready": "#6a1b9a", "waiting": "#9e9e9e",
           "failed": "#c62828", "interrupted": "#ef6c00"}

CSS = """
body{font-family:system-ui,sans-serif;margin:1.2rem 1.5rem;color:#222}
main{max-width:1500px}
h1{font-size:1.4rem;margin:.2rem 0} h2{font-size:1.1rem;margin-top:1.4rem}
table{border-collapse:collapse;margin:.4rem 0} td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;
vertical-align:top;font-size:.88rem} th{background:#f4f4f4}
.badge{display:inline-block;padding:0 .4rem;border-radius:.3rem;color:#fff;font-size:.8rem}
.bar{background:#eee;width:200px;height:.8rem;display:inline-block;vertical-align:middle}
.bar span{background:#2e7d32;height:100%;display:block}
pre{background:#f7f7f7;padding:.6rem;overflow:auto;max-height:24rem;font-size:.8rem}
.math{max-width:60rem;line-height:1.6;white-space:pre-wrap;border-left:3px solid #ddd;padding:.2rem .8rem}
.stale{color:#e65100;font-weight:bold} textarea{width:100%;max-width:52rem;font-family:inherit}
.note{color:#555;font-size:.85rem} .error{background:#fdecea;border:1px solid #c62828;padding:.6rem .8rem;max-width:52rem}
.saved{background:#e8f5e9;border:1px solid #2e7d32;padding:.6rem .8rem;max-width:52rem}
.outage{background:#fff3e0;border:1px solid #ef6c00;padding:.4rem .7rem;margin:.3rem 0;max-width:60rem}
.cause{border-left:4px solid #c62828;padding:.2rem .7rem;margin:.5rem 0;max-width:80rem}
.cause .remedy{color:#333} .cause .who{color:#555;font-size:.88rem}
#graph-wrap{display:flex;gap:.8rem;align-items:stretch}
#graph{flex:1;height:72vh;min-height:420px;border:1px solid #ccc;border-radius:4px;background:#fcfcfc}
#graph-info{width:19rem;font-size:.88rem;border:1px solid #ddd;border-radius:4px;padding:.5rem .7rem;overflow:auto;max-height:72vh}
#graph-controls{display:flex;flex-wrap:wrap;gap:.4rem 1.2rem;align-items:center;margin:.4rem 0;font-size:.88rem}
#graph-controls label{white-space:nowrap} .swatch{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;vertical-align:middle}
.legend-key{display:inline-block;width:1.6rem;border-top:3px solid;vertical-align:middle;margin-right:.2rem}
.graph-message{padding:1rem;color:#555}
#units-wrap{position:relative;max-height:60vh;overflow:auto;border:1px solid #ddd} #units{margin:0}
#units th[data-sort]{cursor:pointer}
#units thead th{position:sticky;top:0} #units tr.unit-row{cursor:pointer} #units tr.picked-row td{background:#fff3c4}
#table-controls{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;font-size:.88rem}
"""


def badge(status: str) -> str:
    return (f'<span class="badge status-{escape(status)}" style="background:{COLOURS.get(status, "#555")}">'
            f"{escape(status)}</span>")


def page(title: str, body: str, scripts: tuple[str, ...] = (), styles: tuple[str, ...] = ()) -> str:
    tags = "".join(f'<script src="{escape(s)}"></script>' for s in scripts)
    links = "".join(f'<link rel=stylesheet href="{escape(s)}">' for s in styles)
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>{links}"
            f"<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<style>{CSS}</style></head><body><main>{body}</main>{tags}</body></html>")


def _clock(posix: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(posix))


def run_text(run: dict[str, Any], root: str, interrupted: int) -> str:
    """What is working on the project and how it stops, as it is (``status.run_state``): the
    background daemon (``fyan daemon stop`` stops it), a foreground ``fyan run`` (Ctrl-C in its
    terminal; the same command again resumes what it cut off), or nothing. Plain text: the page
    script shows the same sentence (``/api/state``'s ``run_text``)."""
    if run.get("alive"):
        since = f" since {_clock(run['started'])}" if run.get("started") else ""
        who = f"{run.get('holder')}{since}"
        if run.get("stopping"):
            return f"A Fyan run ({who}) is stopping: {run['stopping']}."
        if run.get("daemon"):
            return (f"The Fyan daemon is working on this project ({who}). `fyan daemon stop {quoted(root)}` stops it; "
                    "`fyan daemon start` resumes.")
        return (f"A foreground `fyan run` is working on this project ({who}). Ctrl-C in its terminal stops it; "
                "running the same command again resumes what it cut off.")
    tail = (f" {interrupted} attempt(s) were cut off when the last run stopped: they resume on the next run."
            if interrupted else "")
    return (f"No Fyan run is working on this project (showing the recorded state).{tail} "
            f"Start one with `fyan run {quoted(root)}` (foreground) or `fyan daemon start {quoted(root)}`.")


def stuck_link(failed: int, waiting: int) -> str:
    """The header's line to the stuck list (``#stuck-title``): how many failed and how many wait
    on them; plain text when nothing failed."""
    if not failed:
        return "<p id=stuck-link class=note>No unit failed.</p>"
    return (f"<p id=stuck-link><a href='#stuck-title'><b>{failed} failed</b>, {waiting} waiting on them: "
            "what is stuck and what to do</a></p>")


def run_html(run: dict[str, Any], root: str, interrupted: int) -> str:
    """``run_text`` as the page's ``#run`` paragraph."""
    return f"<p id=run class=note>{escape(run_text(run, root, interrupted))}</p>"


def outages_html(outages: list[dict[str, Any]]) -> str:
    return "".join(f'<p class=outage data-next-try="{o["next_try"]}" data-provider="{escape(o["provider"])}">'
                   f"{escape(o['text'])}</p>" for o in outages)


def _unit_link(uid: str) -> str:
    return f'<a href="/unit/{escape(uid)}">{escape(uid)}</a>'


def blocked_html(groups: list[dict[str, Any]], shown: int = 12) -> str:
    """What is stuck: the failed units grouped by cause, the remedy once, every failed unit
    linked (the first ``shown``, the rest one click away in a fold), then how many units wait
    on them (``status.BlockedGroup``; ``dashboard.js`` renders the same from ``/api/state``)."""
    groups = [g for g in groups if g.get("roots")]
    if not groups:
        return "<p class=note>No unit failed.</p>"
    out = []
    for g in groups:
        roots = g["roots"]
        remedy = f' <span class=remedy>→ {escape(g["remedy"])}</span>' if g.get("remedy") else ""
        stages = [st for st in g.get("stages") or [] if f"the {st} stage" not in g["cause"]]  # said once
        where = f" (at the {escape(', '.join(stages))} stage)" if stages else ""
        them = "it" if len(roots) == 1 else "them"
        waiting = f"<p class=who>{len(g['waiting'])} unit(s) wait on {them}.</p>" if g["waiting"] else ""
        links = ", ".join(_unit_link(u) for u in roots[:shown])
        if len(roots) > shown:
            links += (f" <details class=more><summary>{len(roots) - shown} more</summary>"
                      + ", ".join(_unit_link(u) for u in roots[shown:]) + "</details>")
        out.append(f'<div class=cause><p><b>{len(roots)} failed: {escape(g["cause"])}</b>{where}{remedy}</p>'
                   f'<p class="who failed-units">{links}</p>{waiting}</div>')
    return "".join(out)


def layers_html(units: list[dict[str, Any]]) -> str:
    layers: dict[int, dict[str, int]] = {}
    for u in units:
        row = layers.setdefault(u["layer"], {})
        row[u["status"]] = row.get(u["status"], 0) + 1
    rows = []
    for layer, c in sorted(layers.items()):
        n = sum(c.values())
        pct = 100 * c.get("complete", 0) / n if n else 0
        rows.append(f"<tr><td>{layer}</td><td><span class=bar><span style='width:{pct:.0f}%'></span></span> "
                    f"{c.get('complete', 0)}/{n}</td><td>{' '.join(f'{badge(k)} {v}' for k, v in sorted(c.items()))}</td></tr>")
    return ("<table id=layers><thead><tr><th>layer</th><th>complete</th><th>statuses</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def units_html(units: list[dict[str, Any]], costs: dict[str, float]) -> str:
    """Every unit, failed first, with its section (the document's headings), cost and failure
    cause; ``dashboard.js`` sorts (a click on a header) and filters it (the selects above)."""
    ordered = sorted(units, key=lambda u: (STATUS_ORDER.get(u["status"], 9), u["layer"], u.get("order", 0)))
    rows = []
    for u in ordered:
        st = f' <span class=stale title="{escape(u["stale"])}">stale</span>' if u.get("stale") else ""
        section = escape(" › ".join(u.get("section") or []))
        rows.append(
            f'<tr class="unit-row" data-unit="{escape(u["id"])}"><td><a href="/unit/{escape(u["id"])}">{escape(u["id"])}</a>{st}</td>'
            f"<td class=section>{section}</td><td>{u['layer']}</td><td>{escape(u['kind'])}</td>"
            f"<td>{badge(u['status'])}</td>"
            f"<td>{escape(u['stage'] or '-')}</td><td class=cost>${costs.get(u['id'], 0.0):.4f}</td>"
            f"<td class=cause>{escape(u.get('cause') or '')}</td><td>{escape((u['short_reason'] or '') + replan_note(u))}</td></tr>")
    heads = "".join(f"<th data-sort={key} title='sort'>{name}</th>" for key, name in (
        ("id", "unit"), ("section", "section"), ("layer", "layer"), ("kind", "kind"), ("status", "status"),
        ("stage", "stage"), ("cost", "cost"), ("cause", "failure cause"))) + "<th>reason</th>"
    filters = ("<p id=table-controls><select id=table-status></select> <select id=table-layer></select> "
               "<select id=table-section></select> <select id=table-cause></select> <span id=table-count class=note>"
               f"{len(units)} units</span> <span class=note>click a header to sort, a row to show the unit in the graph"
               "</span></p>")
    return (filters + "<div id=units-wrap><table id=units><thead><tr>" + heads + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>")


def connectivity_html(units: list[dict[str, Any]]) -> str:
    """Isolated statements (no dependency in or out) and disconnected components of the units'
    dependency graph (``fyan.specifier.connectivity``), by label, in document order."""
    from fyan.specifier.connectivity import connectivity

    name = {u["id"]: u.get("label") or u["id"] for u in units}
    c = connectivity([u["id"] for u in units], [(u["id"], d) for u in units for d in u.get("depends_on") or []])
    if not c.isolated and not c.disconnected:
        return "<p id=connectivity class=note>Every statement is connected to the others.</p>"
    parts = []
    if c.isolated:
        parts.append(f"<p><b>{len(c.isolated)} isolated</b> (no \\uses in or out): "
                     + ", ".join(f'<a href="/unit/{escape(n)}">{escape(name[n])}</a>' for n in c.isolated) + "</p>")
    if c.disconnected:
        items = "".join(f"<li>{len(comp)} unit(s): " + ", ".join(escape(name[n]) for n in comp[:12])
                        + (" ..." if len(comp) > 12 else "") + "</li>" for comp in c.components)
        parts.append(f"<p><b>{len(c.components)} disconnected components</b> (no \\uses between them):</p>"
                     f"<ul>{items}</ul>")
    return "<div id=connectivity>" + "".join(parts) + "</div>"


def replans_text(replans: int, refuted: int) -> str:
    """`` — 1 re-plan, 1 lemma refuted`` after the counts (nothing when both are 0): re-plans the
    Formalizer's checked verdicts caused and planned lemmas they refuted (``fyan.replan``);
    ``dashboard.js`` writes the same (``replansText``)."""
    if not (replans or refuted):
        return ""
    return (f" — {replans} re-plan{'' if replans == 1 else 's'}, "
            f"{refuted} lemma{'' if refuted == 1 else 's'} refuted")


def overview(status: ProjectStatus, costs: dict[str, float]) -> str:
    """The project page (server-rendered state; ``dashboard.js`` keeps it current)."""
    payload = status.as_payload()
    units = payload["units"]
    counts = payload["counts"]
    total, done = len(units), counts.get("complete", 0)
    head = (f"<h1 id=title>{escape(status.project)}: <span id=done>{done}</span>/<span id=total>{total}</span> units complete</h1>"
            f"<p id=counts><span id=count-badges>{' '.join(f'{badge(k)} {n}' for k, n in sorted(counts.items(), key=lambda kv: STATUS_ORDER.get(kv[0], 9)))}</span>"
            f" — total model cost <span id=cost>${sum(costs.values()):.4f}</span>"
            f"<span id=replans>{escape(replans_text(status.replans, status.refuted_lemmas))}</span></p>"
            + run_html(payload["run"], status.root, counts.get("interrupted", 0))
            + f"<div id=outages>{outages_html(payload['providers'])}</div>"
            + stuck_link(counts.get("failed", 0), payload.get("waiting_on_failed", 0))
            + "<p class=note id=live-note>This page updates by itself while Fyan works.</p>")
    if not status.ingested:
        ingest = status.ingest
        what = escape(ingest.get("text") or "not ingested yet")
        what = what[:1].upper() + what[1:]
        nxt = (f" Next: <code>{escape(ingest['next'])}</code>" if ingest.get("next") and ingest["state"] != "ingesting"
               else "")
        return page(f"Fyan — {status.project}",
                    head + f"<p id=ingest-state class={escape(ingest['state'])}>{what}.{nxt}</p>",
                    ("/static/dashboard.js",))
    blocked = (f"<h2 id=stuck-title>Stuck here: the failed units, by cause</h2>"
               f"<div id=blocked>{blocked_html(payload['blocked_groups'])}</div>")
    statuses = "".join(
        f'<label><input type=checkbox class=status-filter value="{s}" checked> '
        f'<span class=swatch style="background:{c}"></span> {s}</label>' for s, c in COLOURS.items())
    graph = (
        "<h2>Dependency graph</h2>"
        f"<div id=graph-controls>{statuses}"
        "<label>layers <select id=layer-from></select> to <select id=layer-to></select></label>"
        "<label>find <input id=graph-search list=unit-ids size=22 placeholder='unit id'></label>"
        "<datalist id=unit-ids></datalist>"
        "<label>layout <select id=graph-layout><option value=groups selected>chapters and sections</option>"
        "<option value=layers>layers (compact)</option><option value=dagre>dagre</option></select></label>"
        "<button id=graph-fit type=button>fit</button><button id=graph-clear type=button>clear highlight</button>"
        "<span class=note><span class=legend-key style='border-color:#888'></span>arrow: dependency → dependent; "
        "<span class=legend-key style='border-color:#ef6c00'></span>needs (ancestors) "
        "<span class=legend-key style='border-color:#1565c0'></span>needed by (descendants)</span></div>"
        "<div id=graph-wrap><div id=graph><p class=graph-message>Drawing the graph ... "
        "(needs JavaScript; the tables below hold the same information)</p></div>"
        "<aside id=graph-info><p class=note>Click a group to open it (again to close it) and list its units in the "
        "table; click a unit to highlight what it needs (ancestors) and what needs it (descendants); double-click "
        "opens it. Scroll to zoom (labels appear as you zoom in), drag to pan.</p></aside></div>")
    graph += "<h3>Isolated statements and components</h3>" + connectivity_html(units)
    body = (head + blocked + graph + "<h2>Progress by layer</h2><div id=layers-wrap>" + layers_html(units)
            + "</div><h2>Units</h2>" + units_html(units, costs))
    return page(f"Fyan — {status.project}", body,
                ("/static/vendor/cytoscape.min.js", "/static/vendor/cytoscape-dagre.min.js", "/static/dashboard.js"))


# -- unit page -------------------------------------------------------------------------------

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


def _slots_cell(ids: list[str], texts: dict[str, str]) -> str:
    if not ids:
        return "<i>(omitted)</i>"
    return "<br>".join(f"<code>{escape(i)}</code> {escape(texts.get(i, '?'))}" for i in ids)


def audit_block(record: Any, result: Any) -> str:
    """The semantic audit as tables: the grade and routing, each graded row (slots with their
    text, relation, polarity, grade, the judge's argument or difference), the slots code cut;
    the raw JSON stays available below."""
    if not isinstance(result, dict):
        return _json_block("Audit record", record)
    texts = {s.get("id"): s.get("text", "") for s in result.get("slots", []) if isinstance(s, dict)}
    rows_in = record.get("rows", []) if isinstance(record, dict) else []
    grade = "-" if result.get("grade") is None else str(result.get("grade"))
    out = [f"<h2>Semantic audit: grade {escape(grade)} (threshold {escape(str(result.get('threshold')))}), "
           f"routing {escape(str(result.get('routing')))}</h2>"]
    if result.get("root"):
        out.append(f"<p>Root declaration <code>{escape(str(result['root']))}</code>"
                   + (f"; {escape(str(record.get('summary')))}" if isinstance(record, dict) and record.get("summary") else "")
                   + "</p>")
    if not result.get("valid", True):
        out.append("<div class=error><b>The record was rejected by the validator:</b><ul>"
                   + "".join(f"<li>{escape(str(e))}</li>" for e in result.get("errors", [])) + "</ul></div>")
    items = [i for i in result.get("items", []) if isinstance(i, dict)]
    if items:
        trs = []
        for it in items:
            row = it.get("row")
            src = rows_in[row - 1] if isinstance(row, int) and 0 < row <= len(rows_in) and isinstance(rows_in[row - 1], dict) else {}
            # code's account of the row (it quotes the judge's conversions and argument); the
            # judge's own words only when code recorded none
            said = "; ".join(x for x in (it.get("evidence", ""), it.get("note", "")) if x) or "; ".join(
                x for x in (src.get("argument", ""), src.get("difference", "")) if x)
            relation = escape(str(it.get("relation", ""))) + ("" if it.get("admissible", True) else " <b>(inadmissible)</b>")
            trs.append(f"<tr><td>{escape(str(row if row is not None else 'transfer'))}</td>"
                       f"<td>{_slots_cell(it.get('source', []), texts)}</td><td>{_slots_cell(it.get('candidate', []), texts)}</td>"
                       f"<td>{escape(str(it.get('kind', '')))}</td><td>{relation}</td><td>{escape(str(it.get('polarity') or '-'))}</td>"
                       f"<td>{escape(str(it.get('grade', '')))}</td><td>{escape(said)}</td></tr>")
        out.append("<table id=audit-rows><thead><tr><th>row</th><th>document (source slots)</th><th>Lean (candidate slots)</th>"
                   "<th>kind</th><th>relation</th><th>polarity</th><th>grade</th><th>evidence</th></tr></thead><tbody>"
                   + "".join(trs) + "</tbody></table>")
    if result.get("repairs"):
        out.append("<p><b>Repairs asked of the Planner:</b></p><ul>"
                   + "".join(f"<li>{escape(str(r))}</li>" for r in result["repairs"]) + "</ul>")
    slots = [s for s in result.get("slots", []) if isinstance(s, dict)]
    if slots:
        out.append("<details><summary>slots cut by code (" + str(len(slots)) + ")</summary><table id=audit-slots>"
                   "<tr><th>slot</th><th>kind</th><th>polarity</th><th>text</th></tr>"
                   + "".join(f"<tr><td><code>{escape(str(s.get('id')))}</code></td><td>{escape(str(s.get('kind')))}</td>"
                             f"<td>{escape(str(s.get('polarity')))}</td><td>{escape(str(s.get('text')))}</td></tr>" for s in slots)
                   + "</table></details>")
    out.append("<details><summary>record and result (JSON)</summary><pre>"
               + escape(json.dumps({"record": record, "result": result}, indent=2, ensure_ascii=False)) + "</pre></details>")
    return "".join(out)


_STRIP = re.compile(r"\\(?:label|uses|lean|notready|discussion|proves|mathlibok|leanok)\b(?:\{[^{}]*\})?")
_ENV = re.compile(r"\\(?:begin|end)\{(?:theorem|lemma|proposition|corollary|claim|conjecture|definition|remark|"
                  r"example|proof)\*?\}(?:\[[^\]]*\])?")
_TEXT_MACRO = re.compile(r"\\(emph|textit|textbf)\{([^{}$]*)\}")
_TEXT_TAG = {"emph": "em", "textit": "em", "textbf": "strong"}


def statement_math(body: str) -> str:
    """The statement as HTML for the page's math renderer (KaTeX's auto-render, vendored): the
    text escaped, the theorem environment and blueprint markers (``\\label``, ``\\uses``,
    ``\\lean``, ``\\leanok``) left out, ``\\emph``/``\\textbf`` as emphasis; the math stays TeX between
    its delimiters (``$..$``, ``\\(..\\)``, ``\\[..\\]``, ``$$..$$``, display environments), which the
    script typesets in the browser. Escaped first: only Fyan's own tags are markup."""
    text = _ENV.sub("", _STRIP.sub("", body)).strip()
    html = escape(text, quote=False)
    return _TEXT_MACRO.sub(lambda m: f"<{_TEXT_TAG[m[1]]}>{m[2]}</{_TEXT_TAG[m[1]]}>", html)


_DEFINER = re.compile(r"\\(newcommand|renewcommand|providecommand|DeclareMathOperator|def)(\*?)\s*")


def _group(text: str, at: int) -> tuple[str, int] | None:
    """The balanced ``{...}`` group starting at ``text[at]`` (its inside, and the index after it)."""
    if at >= len(text) or text[at] != "{":
        return None
    depth = 0
    for i in range(at, len(text)):
        c = text[i]
        if c == "\\":
            continue
        if c == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif c == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[at + 1:i], i + 1
    return None


def katex_macros(definitions: list[str]) -> dict[str, str]:
    """The document's macro definitions (``Catalogue.macros``: ``\\newcommand{\\F}{\\mathbb{F}}``,
    ``\\newcommand{\\dist}[2]{d[#1;#2]}``, ``\\DeclareMathOperator{\\rk}{rk}``, ``\\def\\X{...}``)
    as KaTeX's ``macros`` option (name -> expansion, ``#1``... kept), so the page typesets the
    statement's own notation. A definition in a form not recognised here is left out (KaTeX then
    shows that macro in red, as without it)."""
    out: dict[str, str] = {}
    for d in definitions:
        m = _DEFINER.match(d.strip())
        if not m:
            continue
        rest, at = d.strip(), m.end()
        named = _group(rest, at)
        if named is not None:
            name, at = named[0].strip(), named[1]
        else:
            nm = re.match(r"\\[A-Za-z@]+|\\.", rest[at:])
            if not nm:
                continue
            name, at = nm.group(0), at + nm.end()
        while at < len(rest) and rest[at] in " \t":
            at += 1
        if m.group(1) != "def":
            arity = re.match(r"\[(\d)\](?:\[[^\]]*\])?", rest[at:])
            if arity:
                at += arity.end()
        elif re.match(r"#", rest[at:]):
            continue  # a \def with a parameter text: not translated
        body = _group(rest, at)
        if body is None or not re.fullmatch(r"\\[A-Za-z@]+|\\.", name):
            continue
        if m.group(1) == "DeclareMathOperator":
            out[name] = f"\\operatorname{m.group(2)}{{{body[0]}}}"
        else:
            out[name] = body[0]
    return out


def statement_block(problem: str | None, proof: str | None) -> str:
    """The statement as the source gives it (``units/<id>/problem.tex`` without its provenance
    block): its math typeset (``statement_math``; the TeX source in a fold below it), then the
    provenance block and the source's proof (``source_proof.tex``) in folds."""
    from fyan.gates.stages import provenance_block

    if problem is None:
        return "<h2>Statement</h2><p class=note>problem.tex is missing from the unit's folder.</p>"
    block = provenance_block(problem) or ""
    body = problem.replace(block, "").strip()
    out = [f"<h2>Statement</h2><div id=statement-math class=math>{statement_math(body)}</div>"
           f"<details><summary>TeX source</summary><pre id=statement>{escape(body)}</pre></details>"]
    if block:
        out.append(f"<details><summary>provenance</summary><pre id=provenance>{escape(block)}</pre></details>")
    if proof and proof.strip():
        out.append(f"<details><summary>the source's proof</summary><div id=source-proof-math class=math>"
                   f"{statement_math(proof.strip())}</div><pre id=source-proof>{escape(proof.strip())}</pre>"
                   "</details>")
    return "".join(out)


def lean_block(lean: dict[str, Any] | None) -> str:
    """The unit's Lean: the frozen statement (``Statement.lean`` and the frozen declarations
    with their normalized signatures), the current proof (``Basic.lean``) and its diagnostics
    (the last Formalizer iteration's review, from ``iterations.json``: build errors, ``sorry``,
    lints; the completion gate's findings are in the gate report below). ``lean``: ``statement``,
    ``proof`` (file texts or None), ``freezes`` (``FreezeRecord``s as dicts), ``iterations``."""
    lean = lean or {}
    out = ["<h2 id=lean>Lean</h2>"]
    freezes = lean.get("freezes") or []
    if freezes:
        rows = "".join(f"<tr><td><code>{escape(str(f.get('decl')))}</code></td><td>{escape(str(f.get('role')))}</td>"
                       f"<td><code>{escape(str(f.get('normalized_signature')))}</code></td></tr>" for f in freezes)
        out.append("<h3>Frozen statement</h3><table id=frozen><tr><th>declaration</th><th>role</th><th>signature "
                   f"(normalized)</th></tr>{rows}</table>")
    elif lean.get("statement") is not None:
        out.append("<h3>Statement (not frozen yet)</h3>")
    if lean.get("statement") is not None:
        out.append(f"<pre id=lean-statement>{escape(lean['statement'])}</pre>")
    else:
        out.append("<p class=note id=lean-statement>No Lean statement yet (the plan stage writes it).</p>")
    if lean.get("proof") is not None:
        out.append(f"<h3>Current proof</h3><pre id=lean-proof>{escape(lean['proof'])}</pre>")
    else:
        out.append("<p class=note id=lean-proof>No proof yet (the prove stage writes it).</p>")
    its = lean.get("iterations")
    if isinstance(its, list) and its and isinstance(its[-1], dict):
        last = its[-1]
        review = last.get("review")
        head = (f"<h3>Diagnostics</h3><p class=note>Formalizer iteration {escape(str(last.get('iteration')))} of the "
                f"last prove attempt ({'compiled' if last.get('compiled') else 'not compiled'}"
                + (f", {escape(str(last['checked']))} check" if last.get("checked") else "") + ")</p>")
        if review == "clean":
            out.append(head + "<p id=diagnostics>clean: no error, no <code>sorry</code>, no lint</p>")
        elif isinstance(review, list):
            out.append(head + "<ul id=diagnostics>" + "".join(f"<li><pre>{escape(str(x))}</pre></li>" for x in review)
                       + "</ul>")
    return "".join(out)


def unit_page(name: str, view: UnitView, shown: dict[str, Any] | None, runs: list, gate: Any, audit_record: Any,
              audit_result: Any, calls: list, events: list, guidance_text: str, stale: str | None, saved: bool,
              token_error: bool = False, problem: str | None = None, source_proof: str | None = None,
              lean: dict[str, Any] | None = None, macros: dict[str, str] | None = None) -> str:
    """One unit: status and why, the statement, stage history, gate report, audit, cost, events,
    guidance. ``shown``: the unit as ``fyan status`` shows it (run liveness and grouping applied);
    ``token_error``: a save was refused — the typed ``guidance_text`` is kept in the form;
    ``problem``/``source_proof``: the unit's ``problem.tex`` and ``source_proof.tex`` (None: absent);
    ``lean``: its Lean statement, proof and diagnostics (``lean_block``); ``macros``: the document's
    macros for the math renderer (``katex_macros``).
    A part with nothing recorded says so in a line (no table of headers alone)."""
    uid = view.unit.id
    status = shown["status"] if shown else view.status.value
    reason = shown["reason"] if shown else view.reason
    body = [f'<p><a href="/">← {escape(name)}</a></p><h1>{escape(uid)} {badge(status)}</h1>',
            f"<p>{escape(view.unit.kind)}, layer {view.unit.layer}, {escape(view.unit.provenance)}; next stage "
            f"{escape(view.next_stage.value if view.next_stage else '-')}</p>"]
    if view.depends_on:
        body.append("<p>Depends on: " + ", ".join(f'<a href="/unit/{escape(d)}">{escape(d)}</a>' for d in view.depends_on) + "</p>")
    if reason:
        body.append(f"<p><b>Why:</b> {escape(reason)}</p>")
    refuted, executed = int((shown or {}).get("refuted_lemmas") or 0), refutations_executed(shown or {})
    body.append(f"<p id=replans>Re-plans: {view.replans} · planned lemmas refuted: {refuted} · "
                f"refutations executed: {executed}</p>")
    if stale:
        body.append(f"<p class=stale>Stale: {escape(stale)} (held until the source change is accepted: "
                    "<code>fyan accept-source</code> on the project; <code>--dry-run</code> first says what re-runs)</p>")
    if saved:
        body.append(f"<p id=saved class=saved><b>Guidance saved</b> to guidance/{escape(uid)}.md; the unit's next attempt "
                    "gets it as context.</p>")
    section = (shown or {}).get("section") or []
    if section:
        body.append(f"<p id=section>In {escape(' › '.join(section))}</p>")
    body.append(statement_block(problem, source_proof))
    # the macros as JSON data for the page script; every "<" escaped (\u003c), so document text can
    # neither end the script element nor open a comment in it
    body.append("<script type=application/json id=tex-macros>"
                + json.dumps(macros or {}).replace("<", "\\u003c") + "</script>")
    body.append(lean_block(lean))
    rows = "".join(
        f"<tr><td>{r.id}</td><td>{escape(r.stage.value)}</td><td>{r.attempt}</td><td>{badge(r.status.value) if r.status.value in COLOURS else escape(r.status.value)}</td>"
        f"<td>{'' if r.duration is None else f'{r.duration:.1f}s'}</td><td>{escape(r.reason or '')}</td></tr>"
        for r in runs)
    body.append("<h2>Stage history</h2>" + (
        "<table id=history><tr><th>run</th><th>stage</th><th>attempt</th><th>status</th>"
        f"<th>took</th><th>reason</th></tr>{rows}</table>" if rows else "<p class=note id=history>No attempt yet.</p>"))
    body.append(_gate_block(gate))
    body.append(audit_block(audit_record, audit_result) if audit_result is not None or audit_record is not None
                else _json_block("Semantic audit", None))
    cost = sum(c.cost for c in calls)
    body.append(f"<h2>Cost</h2><p>{len(calls)} model call(s), {sum(c.tokens_in for c in calls)} tokens in, "
                f"{sum(c.tokens_out for c in calls)} out, ${cost:.4f}"
                f" ({sum(c.replay for c in calls)} replayed)</p>")
    ev = "".join(f"<tr><td>{e.id}</td><td>{escape(e.kind)}</td><td>{escape(json.dumps(e.data, ensure_ascii=False)[:300])}</td></tr>"
                 for e in events if e.kind not in ("stage_started",))
    body.append("<h2>Events</h2>" + (f"<table id=events><tr><th>id</th><th>kind</th><th>data</th></tr>{ev}</table>"
                                      if ev else "<p class=note id=events>No event recorded for this unit.</p>"))
    error = ""
    if token_error:
        error = ("<div id=token-error class=error role=alert><b>Not saved: the write token is missing or wrong.</b> "
                 "Your text is kept below. Paste the token printed when the dashboard started (<code>fyan daemon "
                 "start</code> or <code>fyan dashboard</code> shows it; it is also in <code>.fyan/daemon.json</code>, "
                 "readable only by you), then save again.</div>")
    body.append(
        "<h2 id=guidance>Guidance</h2><p class=note>Advice for the unit's next attempt. It reaches the model as quoted "
        "context only; it never edits Lean files or frozen statements. Saved to guidance/&lt;unit&gt;.md.</p>"
        + error +
        '<form id=guidance-form method=post action="/guidance#guidance">'
        f'<input type=hidden name=unit value="{escape(uid)}">'
        f'<textarea name=text rows=8 id=guidance-text>{escape(guidance_text)}</textarea><br>'
        '<label>Token (printed when the dashboard started): <input name=token id=token type=password autocomplete=off></label> '
        "<button type=submit id=guidance-submit>Save guidance</button></form>")
    return page(f"Fyan — {uid}", "".join(body), ("/static/vendor/katex/katex.min.js",
                                                  "/static/vendor/katex/auto-render.min.js", "/static/dashboard.js"),
                styles=("/static/vendor/katex/katex.min.css",))
