// Fyan dashboard: keeps the page current and draws the dependency graph.
//
// Live updates: poll /api/version every POLL_MS; when it changes, re-read /api/state and
// update the counts, outages, blocked causes, tables and the graph's colours (the overview),
// or reload the unit page unless guidance is being typed (then say so instead).
// Everything from the server is set as text (textContent), never as markup.
// The graph: cytoscape (vendored, see static/vendor/README.md), one row per layer (or the dagre
// layout, on request); arrows point from a dependency to its dependent; zoom and pan; filters
// by status and layer; a click highlights a unit's ancestors (what it needs) and descendants
// (what needs it).
"use strict";

(function () {
  const POLL_MS = 2000;
  const COLOURS = {complete: "#2e7d32", running: "#1565c0", ready: "#6a1b9a", waiting: "#9e9e9e",
                   blocked: "#c62828", interrupted: "#ef6c00"};
  const ORDER = {blocked: 0, interrupted: 1, running: 2, ready: 3, waiting: 4, complete: 5};
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
    const r = await fetch("/api/state", {cache: "no-store"});
    if (!r.ok) return;
    const state = await r.json();
    lastState = state;
    version = state.version;
    if (!document.getElementById("units-wrap")) { if (state.ingested) location.reload(); return; }
    renderHeader(state);
    renderBlocked(state.blocked_groups);
    renderLayers(state.units);
    renderUnits(state.units);
    if (cy && sameUnits(state.units)) recolour(state.units); else buildGraph(state.units);
  }

  // -- the overview's parts -----------------------------------------------------------------
  function renderHeader(state) {
    const counts = state.counts || {};
    const total = state.units.length;
    document.getElementById("done").textContent = counts.complete || 0;
    document.getElementById("total").textContent = total;
    const p = document.getElementById("count-badges");
    p.replaceChildren();
    Object.keys(counts).sort((a, b) => (ORDER[a] ?? 9) - (ORDER[b] ?? 9)).forEach(k => {
      p.append(badge(k), " " + counts[k] + " ");
    });
    const run = document.getElementById("run");
    if (run) {
      const r = state.run || {};
      run.textContent = r.alive
        ? "A Fyan " + (r.daemon ? "daemon" : "run") + " is working on this project (" + (r.holder || "") + ")" +
          (r.stopping ? "; stopping: " + r.stopping : "") + "."
        : "No Fyan run is working on this project (showing the recorded state)." +
          ((counts.interrupted || 0) ? " " + counts.interrupted + " attempt(s) were cut off when the last run stopped: they resume on the next run." : "");
    }
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

  function renderBlocked(groups) {
    const box = document.getElementById("blocked");
    if (!box) return;
    box.replaceChildren();
    if (!groups || !groups.length) { box.append(el("p", {className: "note"}, "No unit is blocked.")); return; }
    for (const g of groups) {
      const div = el("div", {className: "cause"});
      const head = el("p");
      head.append(el("b", {}, g.total + " blocked: " + g.cause));
      if (g.remedy) head.append(" ", el("span", {className: "remedy"}, "→ " + g.remedy));
      const them = g.roots.length === 1 ? "it" : "them";
      const who = names(g.roots, 12) + (g.stages && g.stages.length ? " (" + g.stages.join(", ") + ")" : "") +
        (g.waiting.length ? "; " + g.waiting.length + " more wait on " + them : "");
      div.append(head, el("p", {className: "who"}, who));
      box.append(div);
    }
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

  function renderUnits(units) {
    const tbody = document.querySelector("#units tbody");
    if (!tbody) return;
    const costs = {};
    tbody.querySelectorAll("tr.unit-row").forEach(tr => { costs[tr.dataset.unit] = tr.children[5].textContent; });
    tbody.replaceChildren();
    [...units].sort((a, b) => (ORDER[a.status] ?? 9) - (ORDER[b.status] ?? 9) || a.layer - b.layer).forEach(u => {
      const tr = el("tr", {className: "unit-row", "data-unit": u.id});
      const name = el("td");
      name.append(el("a", {href: "/unit/" + encodeURIComponent(u.id)}, u.id));
      if (u.stale) { name.append(" "); name.append(el("span", {className: "stale", title: u.stale}, "stale")); }
      const st = el("td");
      st.append(badge(u.status));
      tr.append(name, el("td", {}, u.layer), el("td", {}, u.kind), st, el("td", {}, u.stage || "-"),
                el("td", {}, costs[u.id] || "$0.0000"), el("td", {}, u.short_reason || ""));
      tbody.append(tr);
    });
  }

  // -- the dependency graph -----------------------------------------------------------------
  function sameUnits(units) {
    if (!graphUnits || graphUnits.size !== units.length) return false;
    return units.every(u => graphUnits.has(u.id));
  }

  function label(id) { return id.length > 28 ? id.slice(0, 27) + "…" : id; }

  function buildGraph(units) {
    const box = document.getElementById("graph");
    if (!box || typeof cytoscape === "undefined") return;
    if (cy) { cy.destroy(); cy = null; }
    box.replaceChildren();
    graphUnits = new Set(units.map(u => u.id));
    const elements = [];
    for (const u of units) {
      elements.push({group: "nodes", data: {id: u.id, label: label(u.id), status: u.status, layer: u.layer},
                     classes: "status-" + u.status});
    }
    for (const u of units) {
      for (const d of u.depends_on || []) {
        if (graphUnits.has(d)) elements.push({group: "edges", data: {id: d + "→" + u.id, source: d, target: u.id}});
      }
    }
    const style = [
      {selector: "node", style: {"shape": "round-rectangle", "width": 120, "height": 24, "label": "data(label)",
        "font-size": 10, "color": "#fff", "text-valign": "center", "text-halign": "center", "text-max-width": 116,
        "text-wrap": "ellipsis", "background-color": "#555", "border-width": 0, "min-zoomed-font-size": 6}},
      {selector: "edge", style: {"width": 1, "line-color": "#b0b0b0", "target-arrow-color": "#909090",
        "target-arrow-shape": "triangle", "arrow-scale": 0.8, "curve-style": "straight", "opacity": 0.75}},
      {selector: ".hidden", style: {"display": "none"}},
      {selector: ".faded", style: {"opacity": 0.12}},
      {selector: "node.ancestor", style: {"border-width": 4, "border-color": "#ef6c00"}},
      {selector: "node.descendant", style: {"border-width": 4, "border-color": "#1565c0"}},
      {selector: "edge.ancestor", style: {"line-color": "#ef6c00", "target-arrow-color": "#ef6c00", "width": 2, "opacity": 1}},
      {selector: "edge.descendant", style: {"line-color": "#1565c0", "target-arrow-color": "#1565c0", "width": 2, "opacity": 1}},
      {selector: "node.picked", style: {"border-width": 5, "border-color": "#000"}},
    ];
    for (const [s, c] of Object.entries(COLOURS)) style.push({selector: "node.status-" + s, style: {"background-color": c}});
    const large = units.length > 800;  // keep panning smooth: edges hidden while the view moves
    cy = cytoscape({container: box, elements: elements, style: style, minZoom: 0.02, maxZoom: 3,
                    boxSelectionEnabled: false, autoungrabify: true, hideEdgesOnViewport: large,
                    textureOnViewport: large});
    window.fyanGraph = cy;  // for people poking around in the browser's console, and for tests
    runLayout(units);
    const choice = document.getElementById("graph-layout");
    if (choice) choice.onchange = () => { runLayout(units); applyFilters(); };
    cy.on("tap", "node", e => pick(e.target));
    cy.on("dbltap", "node", e => { location.href = "/unit/" + encodeURIComponent(e.target.id()); });
    cy.on("tap", e => { if (e.target === cy) clearPick(); });
    fillLayerSelects(units);
    fillSearch(units);
    applyFilters();
    box.setAttribute("data-ready", "1");
  }

  // Layouts. "layers" (the default): one row per Fyan layer (dependencies above their
  // dependents), each row ordered by the barycenter heuristic — a few sweeps that place a unit
  // under the mean position of its dependencies (down) or above its dependents (up), which
  // removes most crossings — then centred; a layer too wide for the view wraps into sub-rows.
  // "dagre": the dagre library's layered layout, with each edge spanning exactly the layers
  // between its ends (so its rows are Fyan's layers too); it routes long edges around nodes,
  // which makes graphs with many long edges (PFR: 929 edges) several times wider than tall.
  const NODE_W = 120, GAP = 14, ROW = 70, SUB = 34;

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
      const h = sizes.reduce((a, n) => a + (Math.ceil(n / c) - 1) * SUB, 0) + (layers.length - 1) * ROW + 24;
      const scale = Math.min(viewW / w, viewH / h);
      if (scale > best + 1e-9) { best = scale; cap = c; }
    }
    const positions = {};
    let y = 0;
    for (const l of layers) {
      const ids = byLayer.get(l);
      for (let start = 0; start < ids.length; start += cap) {
        const row = ids.slice(start, start + cap);
        row.forEach((id, i) => { positions[id] = {x: (i - (row.length - 1) / 2) * (NODE_W + GAP), y: y}; });
        if (start + cap < ids.length) y += SUB;
      }
      y += ROW;
    }
    return positions;
  }

  function runLayout(units) {
    const choice = (document.getElementById("graph-layout") || {}).value || "layers";
    const t0 = performance.now();
    if (choice === "dagre" && typeof cytoscapeDagre !== "undefined") {
      cy.layout({name: "dagre", rankDir: "TB", nodeSep: 10, rankSep: ROW - 24, edgeSep: 4,
                 minLen: e => Math.max(1, e.target().data("layer") - e.source().data("layer")),
                 fit: true, padding: 20, animate: false}).run();
    } else {
      const positions = layerPositions(units);
      cy.layout({name: "preset", positions: n => positions[n.id()], fit: true, padding: 20, animate: false}).run();
    }
    window.fyanGraphLayoutMs = Math.round(performance.now() - t0);
  }

  function recolour(units) {
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
    applyFilters();
    if (selected) showInfo(cy.getElementById(selected));
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

  function fillSearch(units) {
    const list = document.getElementById("unit-ids");
    if (list) {
      list.replaceChildren();
      units.forEach(u => list.append(el("option", {value: u.id})));
    }
    const input = document.getElementById("graph-search");
    if (input) {
      input.onchange = () => {
        const n = cy.getElementById(input.value.trim());
        if (n && !n.empty()) { pick(n); cy.animate({center: {eles: n}, zoom: Math.max(cy.zoom(), 0.9)}, {duration: 200}); }
      };
    }
  }

  function applyFilters() {
    if (!cy) return;
    const shown = new Set([...document.querySelectorAll(".status-filter")].filter(c => c.checked).map(c => c.value));
    const from = parseInt((document.getElementById("layer-from") || {}).value || "0", 10);
    const to = parseInt((document.getElementById("layer-to") || {}).value || "100000", 10);
    cy.batch(() => {
      cy.nodes().forEach(n => {
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
      up.removeClass("faded").addClass("ancestor");
      down.removeClass("faded").addClass("descendant");
    });
    showInfo(node, up.nodes().length, down.nodes().length);
  }

  function clearPick(resetInfo = true) {
    if (!cy) return;
    selected = null;
    cy.batch(() => cy.elements().removeClass("faded ancestor descendant picked"));
    if (resetInfo) {
      const info = document.getElementById("graph-info");
      info.replaceChildren(el("p", {className: "note"},
        "Click a unit to highlight what it needs (ancestors) and what needs it (descendants); double-click opens it."));
    }
  }

  function showInfo(node, nUp, nDown) {
    const info = document.getElementById("graph-info");
    if (!info || !node || node.empty()) return;
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
    if (u.short_reason) info.append(el("p", {}, u.short_reason));
    info.append(el("p", {id: "picked-lineage"}, "needs " + nUp + " unit(s) (orange), needed by " + nDown + " unit(s) (blue)"));
  }

  // -- start --------------------------------------------------------------------------------
  function start() {
    document.querySelectorAll(".status-filter").forEach(c => c.addEventListener("change", applyFilters));
    const fit = document.getElementById("graph-fit");
    if (fit) fit.onclick = () => cy && cy.fit(cy.elements(":visible"), 20);
    const clear = document.getElementById("graph-clear");
    if (clear) clear.onclick = () => clearPick();
    if (document.getElementById("graph")) {
      refresh().catch(() => {});
    }
    setInterval(tickOutages, 1000);
    poll();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
