// Fyan dashboard: keeps the page current and draws the dependency graph.
//
// Live updates: poll /api/version every POLL_MS; when it changes, re-read /api/state and
// update the counts, outages, the stuck list (failed units by cause), tables and the graph's colours (the overview),
// or reload the unit page unless guidance is being typed (then say so instead).
// Everything from the server is set as text (textContent), never as markup.
// The graph: cytoscape (vendored, see static/vendor/README.md). By default the document's
// structure: chapters and sections (the headings intake recorded) as compound nodes, closed
// above COLLAPSE_ABOVE units, each closed one a tile whose background is its progress bar
// (complete, running, failed) under a label with the counts; a chapter whose own units failed
// has a solid red border, one whose units only wait on failed units elsewhere a dashed grey one;
// a click opens or closes a group
// and lists its units in the table. Unit labels appear as one zooms in (min-zoomed-font-size).
// On request: one row per layer ("layers (compact)") or dagre. In every layout each edge is
// routed around the boxes it does not join (routeEdges, routeRanks, routeAround). A unit's label
// cut to fit its box shows the whole id in a tooltip; "find" centres the unit with its
// neighbourhood in view. The unit page's statement is typeset by KaTeX (vendored).
// Arrows point from a dependency to its dependent; zoom and pan; filters by status and layer;
// a click highlights a unit's ancestors (what it needs) and descendants (what needs it) and
// selects its row in the units table, whose rows sort, filter and show their unit in the graph.
"use strict";

(function () {
  const POLL_MS = 2000;
  const COLOURS = {complete: "#2e7d32", running: "#1565c0", ready: "#6a1b9a", waiting: "#9e9e9e",
                   failed: "#c62828", interrupted: "#ef6c00"};
  const WAITS_ON_FAILED = "#6d4c41";  // the dashed border of a group whose units wait on failed ones
  const ORDER = {failed: 0, interrupted: 1, running: 2, ready: 3, waiting: 4, complete: 5};
  let version = null;
  let cy = null;
  let graphUnits = null;  // the unit ids the graph was built from
  let selected = null;
  let lastState = null;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "className") e.className = v; else e.setAttribute(k, v);
    }
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function badge(status) {
    const b = el("span", {className: "badge status-" + status}, status);
    b.style.background = COLOURS[status] || "#555";
    return b;
  }

  function names(list, limit) {
    const shown = list.slice(0, limit).join(", ");
    return list.length > limit ? shown + ", ... (+" + (list.length - limit) + " more)" : shown;
  }

  // -- polling ------------------------------------------------------------------------------
  async function poll() {
    try {
      const r = await fetch("/api/version", {cache: "no-store"});
      if (r.ok) {
        const v = (await r.json()).version;
        if (version === null) version = v;
        else if (v !== version) { version = v; await changed(); }
      }
    } catch (e) { /* the dashboard went away (the daemon stopped): keep trying */ }
    setTimeout(poll, POLL_MS);
  }

  async function changed() {
    if (document.getElementById("guidance-form")) {
      const text = document.getElementById("guidance-text");
      if (text && text.value !== text.defaultValue) {
        let note = document.getElementById("unit-changed");
        if (!note) {
          note = el("p", {id: "unit-changed", className: "outage"},
                    "This unit changed since the page was loaded. Save or copy your guidance, then reload to see the new state.");
          document.getElementById("guidance-form").before(note);
        }
        return;
      }
      location.reload();
      return;
    }
    await refresh();
  }

  async function refresh() {
    const t0 = performance.now();
    const r = await fetch("/api/state", {cache: "no-store"});
    if (!r.ok) return;
    const state = await r.json();
    const timings = {fetch_start: t0, fetched: performance.now()};
    lastState = state;
    version = state.version;
    if (!document.getElementById("units-wrap")) { if (state.ingested) location.reload(); return; }
    renderHeader(state);
    renderBlocked(state.blocked_groups);
    renderStuckLink(state);
    renderLayers(state.units);
    if (cy && sameUnits(state.units)) recolour(state.units); else buildGraph(state.units);
    timings.graph = performance.now();
    renderUnits(state.units);
    timings.table = performance.now();
    window.fyanTimings = timings;  // ms since navigation (the bench reads them)
  }

  // -- the overview's parts -----------------------------------------------------------------
  function renderHeader(state) {
    const counts = state.counts || {};
    const total = state.units.length;
    document.getElementById("done").textContent = counts.complete || 0;
    document.getElementById("total").textContent = total;
    const replans = document.getElementById("replans");  // render.replans_text
    if (replans) replans.textContent = replansText(state.replans || 0, state.refuted_lemmas || 0);
    const p = document.getElementById("count-badges");
    p.replaceChildren();
    Object.keys(counts).sort((a, b) => (ORDER[a] ?? 9) - (ORDER[b] ?? 9)).forEach(k => {
      p.append(badge(k), " " + counts[k] + " ");
    });
    const run = document.getElementById("run");
    if (run && state.run_text) run.textContent = state.run_text;  // the server's sentence (render.run_text)
    const outages = document.getElementById("outages");
    outages.replaceChildren();
    for (const o of state.providers || []) {
      const e = el("p", {className: "outage", "data-next-try": o.next_try, "data-provider": o.provider}, o.text);
      e.dataset.text = o.text;
      outages.append(e);
    }
  }

  function tickOutages() {
    // "next try in 40 s" counts down between polls (the server's text is the source)
    const now = Date.now() / 1000;
    document.querySelectorAll("#outages .outage").forEach(p => {
      const next = parseFloat(p.getAttribute("data-next-try"));
      if (!isFinite(next)) return;
      const wait = Math.round(next - now);
      p.textContent = p.textContent.replace(/next try in \d+ s|trying again now/,
                                            wait >= 1 ? "next try in " + wait + " s" : "trying again now");
    });
  }

  // re-plans the Formalizer's checked verdicts caused, and planned lemmas refuted (render.replans_text)
  function replansText(r, f) {
    return (r || f) ? ` — ${r} re-plan${r === 1 ? "" : "s"}, ${f} lemma${f === 1 ? "" : "s"} refuted` : "";
  }

  function unitLink(id) { return el("a", {href: "/unit/" + encodeURIComponent(id)}, id); }

  function appendLinks(parent, ids) {
    ids.forEach((id, i) => { if (i) parent.append(", "); parent.append(unitLink(id)); });
  }

  // the stuck list (render.blocked_html): failed units by cause, the remedy once, each linked
  function renderBlocked(groups) {
    const box = document.getElementById("blocked");
    if (!box) return;
    box.replaceChildren();
    groups = (groups || []).filter(g => g.roots.length);
    if (!groups.length) { box.append(el("p", {className: "note"}, "No unit failed.")); return; }
    for (const g of groups) {
      const div = el("div", {className: "cause"});
      const head = el("p");
      head.append(el("b", {}, g.roots.length + " failed: " + g.cause));
      const stages = (g.stages || []).filter(st => !g.cause.includes("the " + st + " stage"));  // said once
      if (stages.length) head.append(" (at the " + stages.join(", ") + " stage)");
      if (g.remedy) head.append(" ", el("span", {className: "remedy"}, "→ " + g.remedy));
      const who = el("p", {className: "who failed-units"});
      appendLinks(who, g.roots.slice(0, 12));
      if (g.roots.length > 12) {
        const more = el("details", {className: "more"});
        more.append(el("summary", {}, (g.roots.length - 12) + " more"));
        appendLinks(more, g.roots.slice(12));
        who.append(" ", more);
      }
      div.append(head, who);
      const them = g.roots.length === 1 ? "it" : "them";
      if (g.waiting.length) div.append(el("p", {className: "who"}, g.waiting.length + " unit(s) wait on " + them + "."));
      box.append(div);
    }
  }

  function renderStuckLink(state) {
    const p = document.getElementById("stuck-link");
    if (!p) return;
    const failed = (state.counts || {}).failed || 0;
    p.replaceChildren();
    p.className = failed ? "" : "note";
    if (!failed) { p.textContent = "No unit failed."; return; }
    const a = el("a", {href: "#stuck-title"});
    a.append(el("b", {}, failed + " failed"), ", " + (state.waiting_on_failed || 0) +
             " waiting on them: what is stuck and what to do");
    p.append(a);
  }

  function renderLayers(units) {
    const tbody = document.querySelector("#layers tbody");
    if (!tbody) return;
    const layers = new Map();
    for (const u of units) {
      if (!layers.has(u.layer)) layers.set(u.layer, {});
      const c = layers.get(u.layer);
      c[u.status] = (c[u.status] || 0) + 1;
    }
    tbody.replaceChildren();
    [...layers.keys()].sort((a, b) => a - b).forEach(layer => {
      const c = layers.get(layer);
      const n = Object.values(c).reduce((a, b) => a + b, 0);
      const tr = el("tr");
      const bar = el("span", {className: "bar"});
      const fill = el("span");
      fill.style.width = Math.round(100 * (c.complete || 0) / n) + "%";
      bar.append(fill);
      const td = el("td");
      td.append(bar, " " + (c.complete || 0) + "/" + n);
      const st = el("td");
      Object.keys(c).sort().forEach(k => st.append(badge(k), " " + c[k] + " "));
      tr.append(el("td", {}, layer), td, st);
      tbody.append(tr);
    });
  }

  // -- the units table: sort, filter, linked with the graph ---------------------------------
  // Columns: unit, section, layer, kind, status, stage, cost, failure cause, reason. A click on a
  // header sorts by it (again: the other way); the selects above filter; a click on a row shows
  // the unit in the graph (its groups opened), a click on a unit in the graph selects its row,
  // a click on a group filters the table to it.
  const table = {sort: "status", dir: 1, costs: {}};

  function sectionName(u) { return (u.section || []).join(" › ") || NO_HEADING; }

  function sortKey(u, key) {
    switch (key) {
      case "status": return [ORDER[u.status] ?? 9, u.layer, u.order ?? 0];
      case "layer": return [u.layer, u.order ?? 0];
      case "section": return [u.order ?? 0];
      case "cost": return [parseFloat((table.costs[u.id] || "$0").slice(1)) || 0];
      case "cause": return [u.cause || "\uffff", u.order ?? 0];
      case "kind": return [u.kind, u.order ?? 0];
      case "stage": return [u.stage || "\uffff", u.order ?? 0];
      default: return [u.id];
    }
  }

  function compareKeys(a, b) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (a[i] < b[i]) return -1;
      if (a[i] > b[i]) return 1;
    }
    return 0;
  }

  // " [1 re-plan, 1 lemma refuted, 2 refutations executed]" after a unit's reason (status_text.replan_note;
  // the refutations slot: a count or {executed: n})
  function replansNote(u) {
    const r = u.replans || 0, f = u.refuted_lemmas || 0;
    const slot = u.refutations, e = typeof slot === "number" ? slot : (slot && slot.executed) || 0;
    const parts = (r || f) ? [`${r} re-plan${r === 1 ? "" : "s"}`] : [];
    if (f) parts.push(`${f} lemma${f === 1 ? "" : "s"} refuted`);
    if (e) parts.push(`${e} refutation${e === 1 ? "" : "s"} executed`);
    return parts.length ? ` [${parts.join(", ")}]` : "";
  }

  function renderUnits(units) {
    const tbody = document.querySelector("#units tbody");
    if (!tbody) return;
    tbody.querySelectorAll("tr.unit-row").forEach(tr => {
      const c = tr.querySelector("td.cost");
      if (c) table.costs[tr.dataset.unit] = c.textContent;
    });
    const rows = [...units].sort((a, b) => table.dir * compareKeys(sortKey(a, table.sort), sortKey(b, table.sort)));
    tbody.replaceChildren();
    for (const u of rows) {
      const tr = el("tr", {className: "unit-row", "data-unit": u.id, "data-status": u.status, "data-layer": u.layer,
                           "data-section": sectionName(u), "data-cause": u.cause || ""});
      const name = el("td");
      name.append(el("a", {href: "/unit/" + encodeURIComponent(u.id)}, u.id));
      if (u.stale) { name.append(" "); name.append(el("span", {className: "stale", title: u.stale}, "stale")); }
      const st = el("td");
      st.append(badge(u.status));
      tr.append(name, el("td", {className: "section"}, sectionName(u)), el("td", {}, u.layer), el("td", {}, u.kind), st,
                el("td", {}, u.stage || "-"), el("td", {className: "cost"}, table.costs[u.id] || "$0.0000"),
                el("td", {className: "cause"}, u.cause || ""), el("td", {}, (u.short_reason || "") + replansNote(u)));
      if (u.id === selected) tr.classList.add("picked-row");
      tbody.append(tr);
    }
    fillTableFilters(units);
    filterTable();
  }

  function fillSelect(id, values, label) {
    const s = document.getElementById(id);
    if (!s) return;
    const keep = s.value;
    s.replaceChildren(el("option", {value: ""}, label));
    for (const [v, text] of values) s.append(el("option", {value: v}, text));
    if ([...s.options].some(o => o.value === keep)) s.value = keep;
  }

  function fillTableFilters(units) {
    const statuses = [...new Set(units.map(u => u.status))].sort((a, b) => (ORDER[a] ?? 9) - (ORDER[b] ?? 9));
    fillSelect("table-status", statuses.map(s => [s, s]), "any status");
    const layers = [...new Set(units.map(u => u.layer))].sort((a, b) => a - b);
    fillSelect("table-layer", layers.map(l => [String(l), "layer " + l]), "any layer");
    const groups = [];
    const walk = g => {
      for (const c of g.children) { groups.push(["g:" + c.key, "  ".repeat(c.depth) + c.title]); walk(c); }
    };
    if (tree) walk(tree);
    fillSelect("table-section", groups, "any section");
    const causes = [...new Set(units.map(u => u.cause).filter(Boolean))].sort();
    fillSelect("table-cause", causes.map(c => [c, c]), "any failure cause");
  }

  function filterTable() {
    const val = id => (document.getElementById(id) || {}).value || "";
    const status = val("table-status"), layer = val("table-layer");
    const section = val("table-section"), cause = val("table-cause");
    let shown = 0, total = 0;
    document.querySelectorAll("#units tr.unit-row").forEach(tr => {
      total++;
      const d = tr.dataset;
      const ok = (!status || d.status === status) && (!layer || d.layer === layer) && (!cause || d.cause === cause) &&
        (!section || (d.section + " › ").startsWith(section.slice(2) + " › "));
      tr.hidden = !ok;
      if (ok) shown++;
    });
    const n = document.getElementById("table-count");
    if (n) n.textContent = shown === total ? total + " units" : shown + " of " + total + " units";
  }

  function setTableSection(key) {
    const s = document.getElementById("table-section");
    if (!s) return;
    s.value = key ? "g:" + key : "";
    filterTable();
  }

  function selectRow(id) {
    document.querySelectorAll("#units tr.picked-row").forEach(tr => tr.classList.remove("picked-row"));
    const tr = document.querySelector("#units tr.unit-row[data-unit='" + CSS.escape(id) + "']");
    if (!tr) return;
    if (tr.hidden) {  // shown even when the filters hid it
      for (const f of ["table-status", "table-layer", "table-section", "table-cause"]) {
        const s = document.getElementById(f);
        if (s) s.value = "";
      }
      filterTable();
    }
    tr.classList.add("picked-row");
    const wrap = document.getElementById("units-wrap");
    if (wrap) wrap.scrollTop = tr.offsetTop - wrap.clientHeight / 2;
  }

  // -- the document's structure: chapter → section → unit -----------------------------------
  const NO_HEADING = "(before the first heading)";
  let tree = null;          // {children, units, ...} of the document's headings
  let groupOf = new Map();  // unit id -> its innermost group
  let groupsByKey = new Map();
  const expanded = new Set();  // keys of the groups shown open
  let expandedFor = null;      // the unit set the default expansion was chosen for
  const COLLAPSE_ABOVE = 150;

  function buildTree(units) {
    tree = {key: "", title: "", depth: -1, children: [], units: [], all: [], parent: null};
    groupOf = new Map();
    groupsByKey = new Map();
    const anySection = units.some(u => (u.section || []).length);
    for (const u of [...units].sort((a, b) => (a.order ?? 0) - (b.order ?? 0))) {
      let path = u.section || [];
      if (!path.length) path = anySection ? [NO_HEADING] : [];
      let g = tree;
      path.forEach((title, depth) => {
        const key = g.key ? g.key + " › " + title : title;
        let c = groupsByKey.get(key);
        if (!c) {
          c = {key: key, title: title, depth: depth, children: [], units: [], all: [], parent: g,
               id: "group-" + groupsByKey.size};
          groupsByKey.set(key, c);
          g.children.push(c);
        }
        g = c;
      });
      g.units.push(u);
      groupOf.set(u.id, g);
      for (let a = g; a; a = a.parent) a.all.push(u);
    }
  }

  // a group's units by state; `onFailed`: how many of its waiting units wait on a failed unit
  function groupCounts(g) {
    const c = {onFailed: 0};
    for (const u of g.all) {
      c[u.status] = (c[u.status] || 0) + 1;
      if (u.waiting_on && u.waiting_on.length) c.onFailed++;
    }
    return c;
  }

  // "3/26 complete · 1 running · 2 failed · 20 waiting": each state apart
  function groupLabel(g) {
    const c = groupCounts(g);
    const parts = [(c.complete || 0) + "/" + g.all.length + " complete"];
    for (const s of ["running", "interrupted", "failed", "waiting"]) if (c[s]) parts.push(c[s] + " " + s);
    return g.title + "\n" + parts.join(" · ");
  }

  // the group's classes: its own units failed (solid red border) or only wait on failed units
  function markGroup(n, c) {
    n.toggleClass("has-failed", !!c.failed);
    n.toggleClass("waits-on-failed", !c.failed && c.onFailed > 0);
  }

  // a group's box is its progress bar: complete, running, failed, the rest, left to right
  function groupBar(g) {
    const c = groupCounts(g), n = g.all.length || 1;
    const parts = [["complete", COLOURS.complete], ["running", COLOURS.running], ["interrupted", COLOURS.interrupted],
                   ["failed", COLOURS.failed]];
    const colours = [], stops = [];
    let at = 0;
    for (const [s, colour] of parts) {
      if (!c[s]) continue;
      colours.push(colour, colour);
      stops.push(at + "%", (at + 100 * c[s] / n) + "%");
      at += 100 * c[s] / n;
    }
    colours.push("#e6e6e6", "#e6e6e6");
    stops.push(at + "%", "100%");
    return {colours: colours.join(" "), stops: stops.join(" "), counts: c};
  }

  function visible(g) {  // are all of g's enclosing groups open?
    for (let a = g.parent; a && a !== tree; a = a.parent) if (!expanded.has(a.key)) return false;
    return true;
  }

  function representative(uid) {  // the unit's own node, or its outermost closed group
    let rep = null;
    for (let a = groupOf.get(uid); a && a !== tree; a = a.parent) if (!expanded.has(a.key)) rep = a;
    return rep ? rep.id : uid;
  }

  function groupElements(units) {
    const elements = [];
    const nodes = new Set();
    for (const g of groupsByKey.values()) {
      if (!visible(g)) continue;
      const open = expanded.has(g.key);
      const data = {id: g.id, key: g.key, label: groupLabel(g), kind: "group"};
      if (g.parent !== tree) data.parent = g.parent.id;
      elements.push({group: "nodes", data: data, classes: open ? "group open" : "group closed"});
      nodes.add(g.id);
    }
    for (const u of units) {
      const g = groupOf.get(u.id);
      if (g !== tree && (!visible(g) || !expanded.has(g.key))) continue;
      const data = {id: u.id, label: label(u.id), status: u.status, layer: u.layer, kind: "unit"};
      if (g !== tree) data.parent = g.id;
      elements.push({group: "nodes", data: data, classes: "unit status-" + u.status});
      nodes.add(u.id);
    }
    const seen = new Map();
    for (const u of units) {
      const t = representative(u.id);
      for (const d of u.depends_on || []) {
        if (!graphUnits.has(d)) continue;
        const s = representative(d);
        if (s === t) continue;
        const id = s + "→" + t;
        seen.set(id, (seen.get(id) || 0) + 1);
      }
    }
    for (const [id, n] of seen) {
      const [s, t] = id.split("→");
      if (nodes.has(s) && nodes.has(t)) {
        elements.push({group: "edges", data: {id: id, source: s, target: t, weight: n}});
      }
    }
    return elements;
  }

  // Flow layout of the open groups: each group's content (its subgroups, then its units by
  // layer) in rows in document order; a closed group is one tile. Returns the leaves' positions.
  const TILE_W = 250, TILE_H = 72, PAD = 16, LABEL_H = 44;

  function flowLayout() {
    const positions = {};
    const box = document.getElementById("graph");
    const aspect = Math.max(0.6, Math.min(3, (box.clientWidth || 1200) / (box.clientHeight || 700)));

    function measure(g) {  // size of an item (tile, open group or unit) and how to place it
      if (g !== tree && !expanded.has(g.key)) {
        return {w: TILE_W, h: TILE_H, place: (x, y) => { positions[g.id] = {x: x + TILE_W / 2, y: y + TILE_H / 2}; }};
      }
      const items = g.children.map(measure).concat(
        [...g.units].sort((a, b) => a.layer - b.layer || (a.order ?? 0) - (b.order ?? 0)).map(u => ({
          w: NODE_W, h: 24, place: (x, y) => { positions[u.id] = {x: x + NODE_W / 2, y: y + 12}; }})));
      const rowsFor = target => {
        const rows = [];
        let row = [], rw = 0;
        for (const it of items) {
          if (row.length && rw + it.w > target) { rows.push(row); row = []; rw = 0; }
          row.push(it);
          rw += it.w + GAP;
        }
        if (row.length) rows.push(row);
        const w = Math.max(...rows.map(r => r.reduce((a, it) => a + it.w + GAP, -GAP)));
        const h = rows.reduce((a, r) => a + Math.max(...r.map(it => it.h)) + GAP, -GAP);
        return {rows, w, h};
      };
      let best;
      if (g === tree) {  // the top level: the row width that shows it largest in the view
        let bestScale = -1;
        for (let k = 1, target = 0; k <= items.length; k++) {
          target += items[k - 1].w + GAP;
          const cand = rowsFor(target);
          const scale = Math.min((box.clientWidth || 1200) / cand.w, (box.clientHeight || 700) / cand.h);
          if (scale > bestScale + 1e-9) { bestScale = scale; best = cand; }
        }
      } else {
        const area = items.reduce((a, it) => a + (it.w + GAP) * (it.h + GAP), 0);
        const widest = items.reduce((a, it) => Math.max(a, it.w), 0);
        best = rowsFor(Math.max(widest, 1.3 * Math.sqrt(area * aspect)));
      }
      const {rows, w, h} = best;
      const top = g === tree ? 0 : LABEL_H, side = g === tree ? 0 : PAD;
      return {w: w + 2 * side, h: h + top + side, place: (x, y) => {
        let yy = y + top;
        for (const r of rows) {
          let xx = x + side;
          for (const it of r) { it.place(xx, yy); xx += it.w + GAP; }
          yy += Math.max(...r.map(it => it.h)) + GAP;
        }
      }};
    }
    measure(tree).place(0, 0);
    return positions;
  }

  function toggleGroup(node) {
    const key = node.data("key");
    if (expanded.has(key)) {
      expanded.delete(key);
      for (const k of [...expanded]) if (k.startsWith(key + " › ")) expanded.delete(k);
    } else {
      expanded.add(key);
    }
    drawGroups(lastUnits, node.id());
  }

  function reveal(uid) {  // open the groups around a unit (graph: structure view)
    let changed = false;
    for (let a = groupOf.get(uid); a && a !== tree; a = a.parent) {
      if (!expanded.has(a.key)) { expanded.add(a.key); changed = true; }
    }
    if (changed) drawGroups(lastUnits);
  }

  // -- the dependency graph -----------------------------------------------------------------
  let lastUnits = [];

  function sameUnits(units) {
    if (!graphUnits || graphUnits.size !== units.length) return false;
    return units.every(u => graphUnits.has(u.id));
  }

  function label(id) { return id.length > 28 ? id.slice(0, 27) + "…" : id; }

  function mode() { return (document.getElementById("graph-layout") || {}).value || "groups"; }

  function graphStyle() {
    const style = [
      {selector: "node", style: {"shape": "round-rectangle", "width": NODE_W, "height": 24, "label": "data(label)",
        "font-size": 10, "color": "#fff", "text-valign": "center", "text-halign": "center",
        "text-max-width": NODE_W - 4,
        "text-wrap": "ellipsis", "background-color": "#555", "border-width": 0, "min-zoomed-font-size": 7}},
      {selector: "node.group", style: {"color": "#111", "font-size": 15, "font-weight": "bold", "text-wrap": "wrap",
        "min-zoomed-font-size": 4, "border-width": 1, "border-color": "#888"}},
      {selector: "node.group.closed", style: {"width": TILE_W, "height": TILE_H, "text-max-width": TILE_W - 10,
        "background-fill": "linear-gradient", "background-gradient-direction": "to-right",
        "text-background-color": "#fff", "text-background-opacity": 0.88, "text-background-padding": 3,
        "text-background-shape": "round-rectangle"}},
      {selector: "node.group.open", style: {"background-color": "#f3f3f3", "background-opacity": 0.6,
        "text-valign": "top", "text-halign": "center", "text-margin-y": -4, "padding": PAD,
        "text-max-width": 600, "font-size": 14}},
      {selector: "node.group.has-failed", style: {"border-width": 4, "border-color": COLOURS.failed}},
      {selector: "node.group.waits-on-failed", style: {"border-width": 3, "border-style": "dashed",
        "border-color": WAITS_ON_FAILED}},
      {selector: "edge", style: {"width": 1, "line-color": "#b0b0b0", "target-arrow-color": "#909090",
        "target-arrow-shape": "triangle", "arrow-scale": 0.8, "curve-style": "straight", "opacity": 0.75}},
      {selector: "edge.between-groups", style: {"curve-style": "bezier", "opacity": 0.2,
        "width": "mapData(weight, 1, 40, 1, 6)"}},
      {selector: ".hidden", style: {"display": "none"}},
      {selector: ".faded", style: {"opacity": 0.12}},
      {selector: "node.ancestor", style: {"border-width": 4, "border-color": "#ef6c00"}},
      {selector: "node.descendant", style: {"border-width": 4, "border-color": "#1565c0"}},
      {selector: "edge.ancestor", style: {"line-color": "#ef6c00", "target-arrow-color": "#ef6c00", "width": 2, "opacity": 1}},
      {selector: "edge.descendant", style: {"line-color": "#1565c0", "target-arrow-color": "#1565c0", "width": 2, "opacity": 1}},
      {selector: "node.picked", style: {"border-width": 5, "border-color": "#000"}},
    ];
    for (const [s, c] of Object.entries(COLOURS)) style.push({selector: "node.status-" + s, style: {"background-color": c}});
    return style;
  }

  function buildGraph(units) {
    const box = document.getElementById("graph");
    if (!box || typeof cytoscape === "undefined") return;
    if (cy) { cy.destroy(); cy = null; }
    box.replaceChildren();
    lastUnits = units;
    graphUnits = new Set(units.map(u => u.id));
    buildTree(units);
    const choice0 = document.getElementById("graph-layout");
    if (choice0 && !groupsByKey.size && choice0.value === "groups") choice0.value = "layers";  // no headings
    const key = units.map(u => u.id).join(",");
    if (expandedFor !== key) {  // small documents open, large ones closed (then opened by clicks)
      expanded.clear();
      if (units.length <= COLLAPSE_ABOVE) for (const k of groupsByKey.keys()) expanded.add(k);
      expandedFor = key;
    }
    const large = units.length > 800;  // keep panning smooth: edges hidden while the view moves
    cy = cytoscape({container: box, elements: [], style: graphStyle(), minZoom: 0.02, maxZoom: 3,
                    boxSelectionEnabled: false, autoungrabify: true, hideEdgesOnViewport: large,
                    textureOnViewport: large});
    window.fyanGraph = cy;  // for people poking around in the browser's console, and for tests
    draw(units);
    const choice = document.getElementById("graph-layout");
    if (choice) choice.onchange = () => { clearPick(); draw(lastUnits); };
    cy.on("tap", "node.unit", e => { pick(e.target); selectRow(e.target.id()); });
    cy.on("tap", "node.group", e => {
      setTableSection(e.target.data("key"));
      showGroupInfo(groupsByKey.get(e.target.data("key")));
      toggleGroup(e.target);
    });
    cy.on("dbltap", "node.unit", e => { location.href = "/unit/" + encodeURIComponent(e.target.id()); });
    tooltip();
    cy.on("tap", e => { if (e.target === cy) clearPick(); });
    fillLayerSelects(units);
    fillSearch(units);
    box.setAttribute("data-ready", "1");
  }

  function draw(units) {
    const t0 = performance.now();
    if (mode() === "groups") drawGroups(units);
    else drawFlat(units);
    window.fyanGraphLayoutMs = Math.round(performance.now() - t0);
  }

  function drawGroups(units, focus) {
    cy.batch(() => {
      cy.elements().remove();
      cy.add(groupElements(units));
      cy.edges().addClass("between-groups");
      cy.nodes(".group.closed").forEach(n => {
        const bar = groupBar(groupsByKey.get(n.data("key")));
        n.style({"background-gradient-stop-colors": bar.colours, "background-gradient-stop-positions": bar.stops});
        markGroup(n, bar.counts);
      });
      cy.nodes(".group.open").forEach(n => markGroup(n, groupCounts(groupsByKey.get(n.data("key")))));
    });
    const positions = flowLayout();
    cy.layout({name: "preset", positions: n => positions[n.id()], fit: true, padding: 20, animate: false}).run();
    routeAround();
    if (focus) {
      const n = cy.getElementById(focus);
      if (n && !n.empty() && n.isParent()) cy.fit(n, 30);
    }
    cy.container().setAttribute("data-mode", "groups");
    applyFilters();
  }

  function drawFlat(units) {
    cy.batch(() => {
      cy.elements().remove();
      const elements = [];
      for (const u of units) {
        elements.push({group: "nodes", classes: "unit status-" + u.status,
                       data: {id: u.id, label: label(u.id), status: u.status, layer: u.layer, kind: "unit"}});
      }
      for (const u of units) {
        for (const d of u.depends_on || []) {
          if (graphUnits.has(d)) elements.push({group: "edges", data: {id: d + "→" + u.id, source: d, target: u.id}});
        }
      }
      cy.add(elements);
    });
    if (mode() === "dagre" && typeof cytoscapeDagre !== "undefined") {
      cy.layout({name: "dagre", rankDir: "TB", nodeSep: 10, rankSep: ROW - 24, edgeSep: 4,
                 minLen: e => Math.max(1, e.target().data("layer") - e.source().data("layer")),
                 fit: true, padding: 20, animate: false}).run();
      routeRanks();
    } else {
      const t0 = performance.now();
      const {positions, rows} = layerPositions(units);
      const t1 = performance.now();
      cy.layout({name: "preset", positions: n => positions[n.id()], fit: true, padding: 20, animate: false}).run();
      const t2 = performance.now();
      routeEdges(positions, rows);
      window.fyanLayoutParts = {order_ms: t1 - t0, place_ms: t2 - t1, route_ms: performance.now() - t2};
    }
    cy.container().setAttribute("data-mode", mode());
    applyFilters();
  }

  // Layouts. "groups" (the default): the document's structure (above). "layers": one row per
  // Fyan layer (dependencies above their dependents), each row ordered by the barycenter
  // heuristic — a few sweeps that place a unit under the mean position of its dependencies
  // (down) or above its dependents (up), which removes most crossings — then centred; a layer
  // too wide for the view wraps into sub-rows; edges are routed through the gaps between boxes
  // (``routeEdges``), so none passes behind a box it does not join. "dagre": the dagre
  // library's layered layout, each edge spanning exactly the layers between its ends.
  const NODE_W = 120, GAP = 14, ROW = 70, SUB = 44, NODE_H = 24, CLEAR = 4;

  function layerPositions(units) {
    const byLayer = new Map();
    for (const u of units) {
      if (!byLayer.has(u.layer)) byLayer.set(u.layer, []);
      byLayer.get(u.layer).push(u.id);
    }
    const deps = new Map(units.map(u => [u.id, (u.depends_on || []).filter(d => graphUnits.has(d))]));
    const dependents = new Map(units.map(u => [u.id, []]));
    for (const u of units) for (const d of deps.get(u.id)) dependents.get(d).push(u.id);
    const layers = [...byLayer.keys()].sort((a, b) => a - b);
    const x = new Map();
    const place = ids => ids.forEach((id, i) => x.set(id, i - (ids.length - 1) / 2));
    layers.forEach(l => place(byLayer.get(l)));  // start in document order
    for (let sweep = 0; sweep < 8; sweep++) {
      const down = sweep % 2 === 0;
      for (const l of down ? layers.slice(1) : layers.slice(0, -1).reverse()) {
        const ids = byLayer.get(l);
        const key = new Map(ids.map(id => {
          const near = (down ? deps : dependents).get(id).map(n => x.get(n));
          return [id, near.length ? near.reduce((a, b) => a + b, 0) / near.length : x.get(id)];
        }));
        ids.sort((a, b) => key.get(a) - key.get(b) || x.get(a) - x.get(b));
        place(ids);
      }
    }
    // a layer wider than `cap` units wraps into sub-rows (closer together than layers), with
    // `cap` chosen so that the whole graph shows as large as the view allows
    const box = document.getElementById("graph");
    const viewW = Math.max(300, box.clientWidth), viewH = Math.max(200, box.clientHeight);
    const sizes = layers.map(l => byLayer.get(l).length);
    const widest = Math.max(...sizes);
    let cap = widest, best = -1;
    for (let c = Math.min(widest, 4); c <= widest; c++) {
      const w = c * (NODE_W + GAP);
      const h = sizes.reduce((a, n) => a + (Math.ceil(n / c) - 1) * SUB, 0) + (layers.length - 1) * ROW + NODE_H;
      const scale = Math.min(viewW / w, viewH / h);
      if (scale > best + 1e-9) { best = scale; cap = c; }
    }
    const positions = {};
    const rows = [];  // every row, top to bottom: {y, xs (sorted box centres)}
    let y = 0;
    for (const l of layers) {
      const ids = byLayer.get(l);
      for (let start = 0; start < ids.length; start += cap) {
        const row = ids.slice(start, start + cap);
        // on one grid for every row (a row of even length sits half a box off centre), so the
        // gaps line up from row to row and a routed edge can keep to one channel
        const xs = row.map((id, i) => (i - Math.floor((row.length - 1) / 2)) * (NODE_W + GAP));
        row.forEach((id, i) => { positions[id] = {x: xs[i], y: y, row: rows.length}; });
        rows.push({y: y, xs: xs});
        if (start + cap < ids.length) y += SUB;
      }
      y += ROW;
    }
    return {positions, rows};
  }

  // The gap of `row` nearest to `x`: a point between two boxes, or beside the row's ends.
  function gapNear(row, x) {
    const xs = row.xs;
    const half = NODE_W / 2, out = half + GAP;
    let best = xs[0] - out, bestD = Math.abs(x - best);
    const consider = g => { const d = Math.abs(x - g); if (d < bestD) { best = g; bestD = d; } };
    consider(xs[xs.length - 1] + out);
    const i = xs.findIndex(v => v >= x);  // the box at or right of x; the gaps beside it
    for (const j of [i - 1, i]) if (j >= 0 && j + 1 < xs.length) consider((xs[j] + xs[j + 1]) / 2);
    if (i < 0 && xs.length > 1) consider((xs[xs.length - 2] + xs[xs.length - 1]) / 2);
    return best;
  }

  // Is `x` clear of every box of `row`?
  function free(row, x) {
    const xs = row.xs;
    let lo = 0, hi = xs.length - 1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (xs[mid] < x) lo = mid + 1; else hi = mid; }
    for (const j of [lo - 1, lo]) if (j >= 0 && j < xs.length && Math.abs(xs[j] - x) < NODE_W / 2 + 3) return false;
    return true;
  }

  // Each edge as segments: down out of its source, through a gap of every row it crosses
  // (vertically, from just above the row to just below it), and down into its target; the
  // diagonal parts lie in the free bands between rows. An edge between adjacent rows in one
  // column stays straight.
  let distanceSign = 0;  // cytoscape's side for a positive segment distance, found on the first routed edge

  function routeEdges(positions, rows) {
    const routed = [];
    cy.edges().forEach(e => {
      const s = positions[e.source().id()], t = positions[e.target().id()];
      if (!s || !t) return;
      if (t.row === s.row + 1 && Math.abs(s.x - t.x) < 0.5) return;
      let pts = [{x: s.x, y: s.y + NODE_H / 2 + CLEAR}];
      let cx = null;
      for (let r = s.row + 1; r < t.row; r++) {
        const f = (rows[r].y - s.y) / (t.y - s.y);
        const want = s.x + f * (t.x - s.x);
        // keep to the channel already taken while it is free (few bends: cytoscape draws a long
        // list of segment points slowly); when a box stands in it, the gap nearest the course
        const gx = cx !== null && free(rows[r], cx) ? cx : gapNear(rows[r], want);
        pts.push({x: gx, y: rows[r].y - NODE_H / 2 - CLEAR}, {x: gx, y: rows[r].y + NODE_H / 2 + CLEAR});
        cx = gx;
      }
      pts.push({x: t.x, y: t.y - NODE_H / 2 - CLEAR});
      // points in the middle of a vertical run add nothing
      pts = pts.filter((p, i) => i === 0 || i === pts.length - 1 || !(pts[i - 1].x === p.x && pts[i + 1].x === p.x));
      routed.push(segments(e, s, t, pts));
    });
    applyRoutes(routed);
  }

  // An edge drawn through `pts` as cytoscape's segment weights (along source → target) and
  // distances (perpendicular to it), from the ends' centres `s` and `t`.
  function segments(e, s, t, pts) {
    const dx = t.x - s.x, dy = t.y - s.y, len2 = dx * dx + dy * dy || 1, len = Math.sqrt(len2);
    const weights = [], dists = [];
    for (const p of pts) {
      weights.push(((p.x - s.x) * dx + (p.y - s.y) * dy) / len2);
      dists.push(((p.y - s.y) * dx - (p.x - s.x) * dy) / len);
    }
    return {e, pts, weights, dists};
  }

  function applyRoutes(routed) {
    const apply = (r, sign) => r.e.style({"curve-style": "segments", "edge-distances": "node-position",
      "segment-weights": r.weights.join(" "), "segment-distances": r.dists.map(d => sign * d).join(" ")});
    if (!distanceSign && routed.length) {  // which side is positive, asked of cytoscape once
      const probe = routed.find(r => r.dists.some(d => Math.abs(d) > 1)) || routed[0];
      apply(probe, 1);
      const got = probe.e.segmentPoints() || [];
      const p = probe.pts.find((q, i) => Math.abs(probe.dists[i]) > 1) || probe.pts[0];
      const i = probe.pts.indexOf(p);
      distanceSign = got[i] && Math.abs(got[i].x - p.x) + Math.abs(got[i].y - p.y) <= 1 ? 1 : -1;
    }
    cy.batch(() => routed.forEach(r => apply(r, distanceSign || 1)));
    window.fyanRoutePoints = routed.reduce((a, r) => a + r.pts.length, 0);
  }

  // Edges of any layout routed around every box they do not join ("groups" and "dagre"; the
  // "layers" layout has its own channel router above). The boxes are the drawn leaves — units
  // and closed groups; an open group is a frame that edges cross. Each edge is an orthogonal path
  // on a grid of CELL model pixels through the cells no box (grown by a pixel) touches: A* from
  // the source's centre to the target's, one step per cell, BEND extra per turn (few bends read
  // better and cytoscape draws few segment points faster). An edge whose ends are aligned with
  // nothing between them stays straight; one with no free path (never in Fyan's layouts) too.
  const CELL = 5, BEND = 8;

  // dagre places every rank on one row (all units are NODE_W wide): its edges take the layers
  // layout's channel router (``routeEdges``), through the gaps of each row they cross.
  function routeRanks() {
    const ys = [...new Set(cy.nodes().map(n => Math.round(n.position("y"))))].sort((a, b) => a - b);
    const rowOf = new Map(ys.map((y, i) => [y, i]));
    const rows = ys.map(y => ({y: y, xs: []}));
    const positions = {};
    cy.nodes().forEach(n => {
      const p = n.position(), r = rowOf.get(Math.round(p.y));
      positions[n.id()] = {x: p.x, y: p.y, row: r};
      rows[r].xs.push(p.x);
    });
    rows.forEach(r => r.xs.sort((a, b) => a - b));
    routeEdges(positions, rows);
  }

  function routeAround() {
    const t0 = performance.now();
    const leaves = cy.nodes(":visible").filter(n => !n.isParent());
    const edges = cy.edges(":visible");
    if (!leaves.length || !edges.length) { window.fyanRouted = 0; return; }
    const bb = leaves.boundingBox({includeLabels: false});
    const x0 = bb.x1 - 6 * CELL, y0 = bb.y1 - 6 * CELL;
    const W = Math.ceil((bb.w + 12 * CELL) / CELL) + 1, H = Math.ceil((bb.h + 12 * CELL) / CELL) + 1;
    const owner = new Int32Array(W * H).fill(-1);
    const index = new Map();
    leaves.forEach((n, i) => {
      index.set(n.id(), i);
      const b = n.boundingBox({includeLabels: false});
      const cx1 = Math.max(0, Math.floor((b.x1 - 1 - x0) / CELL)), cx2 = Math.min(W - 1, Math.floor((b.x2 + 1 - x0) / CELL));
      const cy1 = Math.max(0, Math.floor((b.y1 - 1 - y0) / CELL)), cy2 = Math.min(H - 1, Math.floor((b.y2 + 1 - y0) / CELL));
      for (let y = cy1; y <= cy2; y++) for (let x = cx1; x <= cx2; x++) owner[y * W + x] = i;
    });
    const cellOf = p => [Math.min(W - 1, Math.max(0, Math.floor((p.x - x0) / CELL))),
                         Math.min(H - 1, Math.max(0, Math.floor((p.y - y0) / CELL)))];
    const centre = (x, y) => ({x: x0 + (x + 0.5) * CELL, y: y0 + (y + 0.5) * CELL});
    // per-state arrays reused by every edge: a state's cost counts only when its stamp is the
    // edge's (no clearing of the whole grid per edge)
    const N = W * H * 4, cost = new Float64Array(N), from = new Int32Array(N);
    const stamp = new Int32Array(N), closed = new Int32Array(N);
    let gen = 0;
    const DX = [1, 0, -1, 0], DY = [0, 1, 0, -1];
    const routed = [];
    edges.forEach(e => {
      const si = index.get(e.source().id()), ti = index.get(e.target().id());
      const s = e.source().position(), t = e.target().position();
      const [sx, sy] = cellOf(s), [tx, ty] = cellOf(t);
      const free = c => owner[c] === -1 || owner[c] === si || owner[c] === ti;
      // A* over (cell, direction) with a binary heap of state indices
      gen++;
      const heap = [], key = [];
      const push = (st, k) => {
        heap.push(st); key.push(k);
        let i = heap.length - 1;
        while (i > 0) {
          const j = (i - 1) >> 1;
          if (key[j] <= key[i]) break;
          [heap[i], heap[j]] = [heap[j], heap[i]]; [key[i], key[j]] = [key[j], key[i]]; i = j;
        }
      };
      const pop = () => {
        const top = heap[0], lastS = heap.pop(), lastK = key.pop();
        if (heap.length) {
          heap[0] = lastS; key[0] = lastK;
          let i = 0;
          for (;;) {
            const l = 2 * i + 1, r = l + 1;
            let m = i;
            if (l < heap.length && key[l] < key[m]) m = l;
            if (r < heap.length && key[r] < key[m]) m = r;
            if (m === i) break;
            [heap[i], heap[m]] = [heap[m], heap[i]]; [key[i], key[m]] = [key[m], key[i]]; i = m;
          }
        }
        return top;
      };
      const h = (x, y) => Math.abs(x - tx) + Math.abs(y - ty);
      for (let d = 0; d < 4; d++) {
        const st = (sy * W + sx) * 4 + d;
        cost[st] = 0; from[st] = -1; stamp[st] = gen; push(st, h(sx, sy));
      }
      let goal = -1;
      while (heap.length) {
        const st = pop();
        if (closed[st] === gen) continue;
        closed[st] = gen;
        const c = st >> 2, d = st & 3, x = c % W, y = (c / W) | 0;
        if (x === tx && y === ty) { goal = st; break; }
        for (let nd = 0; nd < 4; nd++) {
          if (nd === ((d + 2) & 3)) continue;
          const nx = x + DX[nd], ny = y + DY[nd];
          if (nx < 0 || ny < 0 || nx >= W || ny >= H) continue;
          const nc = ny * W + nx;
          if (!free(nc)) continue;
          const ns = nc * 4 + nd, g = cost[st] + 1 + (nd === d ? 0 : BEND);
          if (stamp[ns] !== gen || g < cost[ns]) { stamp[ns] = gen; cost[ns] = g; from[ns] = st; push(ns, g + h(nx, ny)); }
        }
      }
      if (goal < 0) return;
      const cells = [];
      for (let st = goal; st >= 0; st = from[st]) cells.push(st);
      cells.reverse();
      const bends = [];  // the cells where the direction changes
      for (let i = 1; i < cells.length; i++) if ((cells[i] & 3) !== (cells[i - 1] & 3) && i > 1) bends.push(cells[i - 1] >> 2);
      if (!bends.length) {  // a straight run: draw it straight (the ends' centres share a row or column)
        e.removeStyle("curve-style segment-weights segment-distances edge-distances");
        return;
      }
      const pts = bends.map(c => centre(c % W, (c / W) | 0));
      // the first leg leaves the source's centre along its row or column, the last reaches the
      // target's centre along its own: both stay in the cells the path used
      const firstDir = cells[1] & 3, lastDir = cells[cells.length - 1] & 3;
      if (firstDir % 2 === 0) pts[0].y = s.y; else pts[0].x = s.x;
      if (lastDir % 2 === 0) pts[pts.length - 1].y = t.y; else pts[pts.length - 1].x = t.x;
      routed.push(segments(e, s, t, pts));
    });
    applyRoutes(routed);
    window.fyanRouted = routed.length;
    window.fyanRouteMs = Math.round(performance.now() - t0);
  }

  function recolour(units) {
    const before = new Map(lastUnits.map(u => [u.id, u.status]));
    lastUnits = units;
    buildTree(units);
    if (mode() === "groups") {
      if (units.some(u => before.get(u.id) !== u.status)) drawGroupsKeepingView(units);
    } else {
      cy.batch(() => {
        for (const u of units) {
          const n = cy.getElementById(u.id);
          if (!n || n.empty()) continue;
          if (n.data("status") !== u.status) {
            n.removeClass("status-" + n.data("status"));
            n.data("status", u.status);
            n.addClass("status-" + u.status);
          }
        }
      });
    }
    applyFilters();
    if (selected) showInfo(cy.getElementById(selected));
  }

  function drawGroupsKeepingView(units) {
    const zoom = cy.zoom(), pan = cy.pan();
    drawGroups(units);
    cy.viewport({zoom: zoom, pan: pan});
    if (selected) {
      const n = cy.getElementById(selected);
      if (n && !n.empty()) pick(n);
    }
  }

  function fillLayerSelects(units) {
    const max = units.reduce((m, u) => Math.max(m, u.layer), 0);
    for (const [id, value] of [["layer-from", 0], ["layer-to", max]]) {
      const s = document.getElementById(id);
      if (!s) continue;
      s.replaceChildren();
      for (let i = 0; i <= max; i++) s.append(el("option", {value: i}, i));
      s.value = String(value);
      s.onchange = applyFilters;
    }
  }

  // The unit in the graph: its groups opened, picked, and centred in the view at the zoom that
  // shows its neighbourhood (its direct dependencies and dependents, or the groups they are in)
  // around it, up to a readable zoom.
  function showUnit(uid) {
    if (!cy) return;
    if (mode() === "groups") reveal(uid);
    const n = cy.getElementById(uid);
    if (!n || n.empty()) return;
    pick(n);
    const c = n.position(), near = n.closedNeighborhood().nodes().filter(m => m.visible());
    let dx = n.width(), dy = n.height();
    near.forEach(m => {
      const b = m.boundingBox({includeLabels: false});
      dx = Math.max(dx, Math.abs(b.x1 - c.x), Math.abs(b.x2 - c.x));
      dy = Math.max(dy, Math.abs(b.y1 - c.y), Math.abs(b.y2 - c.y));
    });
    const margin = 30;
    const zoom = Math.max(cy.minZoom(), Math.min(1.5, (cy.width() / 2 - margin) / dx, (cy.height() / 2 - margin) / dy));
    cy.viewport({zoom: zoom, pan: {x: cy.width() / 2 - zoom * c.x, y: cy.height() / 2 - zoom * c.y}});
    cy.container().setAttribute("data-found", uid);
  }

  // A label cut to fit its box ("…") shows the whole id in a tooltip while the pointer is on it
  function tooltip() {
    const box = document.getElementById("graph");
    let tip = document.getElementById("graph-tip");
    if (!tip) {
      tip = el("div", {id: "graph-tip", role: "tooltip"});
      tip.style.cssText = "position:absolute;pointer-events:none;background:#222;color:#fff;padding:2px 6px;" +
        "border-radius:3px;font-size:12px;white-space:nowrap;display:none;z-index:10";
      box.style.position = "relative";
      box.append(tip);
    }
    cy.on("mouseover", "node.unit", e => {
      const p = e.renderedPosition || e.target.renderedPosition();
      tip.textContent = e.target.id() + " (" + e.target.data("status") + ")";
      tip.style.left = (p.x + 12) + "px";
      tip.style.top = (p.y + 12) + "px";
      tip.style.display = "block";
    });
    cy.on("mouseout", "node.unit", () => { tip.style.display = "none"; });
    cy.on("viewport", () => { tip.style.display = "none"; });
  }

  function fillSearch(units) {
    const list = document.getElementById("unit-ids");
    if (list) {
      list.replaceChildren();
      units.forEach(u => list.append(el("option", {value: u.id})));
    }
    const input = document.getElementById("graph-search");
    if (input) input.onchange = () => { showUnit(input.value.trim()); selectRow(input.value.trim()); };
  }

  function applyFilters() {
    if (!cy) return;
    const shown = new Set([...document.querySelectorAll(".status-filter")].filter(c => c.checked).map(c => c.value));
    const from = parseInt((document.getElementById("layer-from") || {}).value || "0", 10);
    const to = parseInt((document.getElementById("layer-to") || {}).value || "100000", 10);
    cy.batch(() => {
      cy.nodes(".unit").forEach(n => {
        const visible = shown.has(n.data("status")) && n.data("layer") >= from && n.data("layer") <= to;
        n.toggleClass("hidden", !visible);
      });
    });
  }

  function pick(node) {
    clearPick(false);
    selected = node.id();
    const up = node.predecessors();   // what it needs: its dependencies, transitively
    const down = node.successors();   // what needs it: its dependents, transitively
    cy.batch(() => {
      cy.elements().addClass("faded");
      node.removeClass("faded").addClass("picked");
      node.ancestors().removeClass("faded");  // its groups
      up.removeClass("faded").addClass("ancestor");
      down.removeClass("faded").addClass("descendant");
      up.nodes().ancestors().removeClass("faded");
      down.nodes().ancestors().removeClass("faded");
    });
    showInfo(node, up.nodes().length, down.nodes().length);
  }

  function clearPick(resetInfo = true) {
    if (!cy) return;
    selected = null;
    cy.batch(() => cy.elements().removeClass("faded ancestor descendant picked"));
    if (resetInfo) {
      const info = document.getElementById("graph-info");
      info.replaceChildren(el("p", {className: "note"}, INFO_HELP));
    }
  }

  const INFO_HELP = "Click a group to open it (again to close it) and list its units in the table; click a unit to " +
    "highlight what it needs (ancestors) and what needs it (descendants); double-click opens it.";

  function showGroupInfo(g) {
    const info = document.getElementById("graph-info");
    if (!info || !g) return;
    const c = groupCounts(g);
    info.replaceChildren();
    info.append(el("h3", {id: "picked-group"}, g.title));
    const p = el("p");
    Object.keys(c).filter(k => k !== "onFailed").sort((a, b) => (ORDER[a] ?? 9) - (ORDER[b] ?? 9)).forEach(k => p.append(badge(k), " " + c[k] + " "));
    info.append(p);
    // only the units that failed here, by cause, each linked; then what the others wait on
    const causes = new Map();
    for (const u of g.all) if (u.status === "failed") {
      const cause = u.cause || "failed";
      if (!causes.has(cause)) causes.set(cause, []);
      causes.get(cause).push(u.id);
    }
    if (causes.size) {
      info.append(el("p", {}, "Failed here, by cause:"));
      const ul = el("ul", {id: "group-causes"});
      [...causes].sort((a, b) => b[1].length - a[1].length).forEach(([cause, ids]) => {
        const li = el("li", {}, ids.length + " × " + cause + ": ");
        appendLinks(li, ids);
        ul.append(li);
      });
      info.append(ul);
    }
    const elsewhere = new Set();
    for (const u of g.all) for (const f of u.waiting_on || []) elsewhere.add(f);
    if (c.onFailed) {
      const p2 = el("p", {id: "group-waits"}, c.onFailed + " unit(s) here wait on failed unit(s): ");
      appendLinks(p2, [...elsewhere].slice(0, 12));
      if (elsewhere.size > 12) p2.append(", ... (+" + (elsewhere.size - 12) + " more)");
      info.append(p2);
    }
    info.append(el("p", {className: "note"}, "The table below lists its " + g.all.length + " unit(s)."));
  }

  function showInfo(node, nUp, nDown) {
    const info = document.getElementById("graph-info");
    if (!info || !node || node.empty() || !node.hasClass("unit")) return;
    const u = (lastState && lastState.units.find(x => x.id === node.id())) || {};
    nUp = nUp ?? node.predecessors().nodes().length;
    nDown = nDown ?? node.successors().nodes().length;
    info.replaceChildren();
    const h = el("h3", {id: "picked-unit"});
    h.append(el("a", {href: "/unit/" + encodeURIComponent(node.id())}, node.id()));
    info.append(h);
    const p = el("p");
    p.append(badge(node.data("status")), " layer " + node.data("layer") + (u.stage ? ", next stage " + u.stage : ""));
    info.append(p);
    if (u.section && u.section.length) info.append(el("p", {}, "in " + u.section.join(" › ")));
    if (u.short_reason) info.append(el("p", {}, u.short_reason));
    info.append(el("p", {id: "picked-lineage"}, "needs " + nUp + " unit(s) (orange), needed by " + nDown + " unit(s) (blue)"));
  }

  // -- the unit page's math: KaTeX (vendored) typesets the statement's TeX in place ---------
  const MATH_DELIMITERS = [
    {left: "$$", right: "$$", display: true}, {left: "\\[", right: "\\]", display: true},
    {left: "\\begin{equation}", right: "\\end{equation}", display: true},
    {left: "\\begin{equation*}", right: "\\end{equation*}", display: true},
    {left: "\\begin{align}", right: "\\end{align}", display: true},
    {left: "\\begin{align*}", right: "\\end{align*}", display: true},
    {left: "$", right: "$", display: false}, {left: "\\(", right: "\\)", display: false}];

  function typeset() {
    if (typeof renderMathInElement === "undefined") return;
    let macros = {};
    try { macros = JSON.parse((document.getElementById("tex-macros") || {}).textContent || "{}"); } catch (e) { /* none */ }
    for (const id of ["statement-math", "source-proof-math"]) {
      const box = document.getElementById(id);
      if (!box) continue;
      // a macro of the document's preamble KaTeX does not know is shown in red, never an error
      renderMathInElement(box, {delimiters: MATH_DELIMITERS, throwOnError: false, strict: "ignore",
                                macros: Object.assign({}, macros)});
      box.setAttribute("data-typeset", "1");
    }
  }

  // -- start --------------------------------------------------------------------------------
  function start() {
    typeset();
    document.querySelectorAll(".status-filter").forEach(c => c.addEventListener("change", applyFilters));
    const fit = document.getElementById("graph-fit");
    if (fit) fit.onclick = () => cy && cy.fit(cy.elements(":visible"), 20);
    const clear = document.getElementById("graph-clear");
    if (clear) clear.onclick = () => clearPick();
    for (const id of ["table-status", "table-layer", "table-section", "table-cause"]) {
      const s = document.getElementById(id);
      if (s) s.onchange = filterTable;
    }
    document.querySelectorAll("#units th[data-sort]").forEach(th => {
      th.onclick = () => {
        table.dir = table.sort === th.dataset.sort ? -table.dir : 1;
        table.sort = th.dataset.sort;
        if (lastState) renderUnits(lastState.units);
      };
    });
    const tbody = document.querySelector("#units tbody");
    if (tbody) {
      tbody.addEventListener("click", e => {
        if (e.target.closest("a")) return;  // the unit's link opens its page
        const tr = e.target.closest("tr.unit-row");
        if (!tr) return;
        selectRow(tr.dataset.unit);
        showUnit(tr.dataset.unit);
        const g = document.getElementById("graph");
        if (g) g.scrollIntoView({block: "nearest"});
      });
    }
    if (document.getElementById("graph")) {
      refresh().catch(() => {});
    }
    setInterval(tickOutages, 1000);
    poll();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
