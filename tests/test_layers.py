"""Fyan's packages form one-way layers: every import goes down the layer table, and no two
packages import each other, directly or round a loop.

The layer table below is the one declaration of the layers; ``docs/architecture.md`` shows the
same table (``test_architecture_page_shows_this_table`` keeps the two equal). A *unit* is a
subpackage of ``fyan`` (``fyan.lean``) or a module directly in ``fyan/`` (``fyan.config``);
``fyan`` itself is its ``__init__``. Every import counts: top-level ones, those inside
functions, and those under ``if TYPE_CHECKING:``, since each names a dependency a reader must
understand, whenever Python happens to run it. Imports within one unit are that unit's own
business.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]

#: The layers, bottom first: a unit may import units of its own layer (as long as no cycle
#: forms) and of the layers below, never of a layer above.
LAYERS: list[tuple[str, list[str]]] = [
    ("foundations", ["fyan", "fyan.errors", "fyan.resources", "fyan.logs", "fyan.terminal", "fyan.arguments",
                     "fyan.command_result"]),
    ("shared types and registry", ["fyan.models", "fyan.stages"]),
    ("sandbox", ["fyan.sandbox"]),
    ("configuration", ["fyan.config", "fyan.configfile", "fyan.project"]),
    ("Lean adapters", ["fyan.lean"]),
    ("state", ["fyan.state"]),
    ("Lake packages", ["fyan.lakepackage"]),
    ("domain", ["fyan.intake", "fyan.specifier", "fyan.audit", "fyan.shadow", "fyan.trust", "fyan.adopt",
                "fyan.refute", "fyan.prover"]),
    ("checks", ["fyan.gates", "fyan.selftest", "fyan.replan"]),
    ("agents", ["fyan.agents"]),
    ("running", ["fyan.executor", "fyan.orchestrator", "fyan.dashboard", "fyan.daemon"]),
    ("commands", ["fyan.commands", "fyan.mcp_server", "fyan.api", "fyan.cli", "fyan.doctor", "fyan.progress",
                  "fyan.__main__"]),
]


@dataclass(frozen=True)
class Exception_:
    """An import the table allows although it goes up or closes a loop: ``importer`` (a module,
    or a unit for all its modules) may import ``imported`` (a module, or a unit or package
    prefix for all its modules)."""

    importer: str
    imported: str
    reason: str


#: At most three, each with its reason; an entry no import uses any more fails the test.
EXCEPTIONS: list[Exception_] = [
    # Configuration is validated when it is loaded, so a bad axiom or extension allowlist entry,
    # an unparsable toolchain pin or a Mathlib revision that is no release tag is refused before
    # anything runs. The rules belong to the Lean side (the environment policy, the pin parser,
    # the Mathlib release table), which itself takes its settings as a ``LeanSection``; the
    # validators import them inside the validator functions, so loading ``fyan.config`` loads none.
    Exception_("fyan.config", "fyan.lean",
               "configuration validation defers to the Lean policy, pin and Mathlib rules it validates against"),
    # The gateway is the only writer of project state, and the compiled library ``lean/`` is
    # state derived from the complete units: when a unit completes (or after ``recover``), the
    # gateway re-derives it under its own lock, through the code that knows the Lake layout,
    # which in turn reads the store to know which units are complete.
    Exception_("fyan.state.gateway", "fyan.lakepackage.package",
               "the only writer of state publishes the compiled library it derives from the store"),
    # ``fyan mcp`` serves every command to outside agents: its command module starts the MCP
    # server, which runs commands through ``fyan.api`` and so through the command registry. The
    # command that serves the others necessarily sits beside them.
    Exception_("fyan.commands.mcp", "fyan.mcp_server",
               "the `fyan mcp` command serves every command, through the registry it belongs to"),
]


def layer_rank(layers: list[tuple[str, list[str]]]) -> dict[str, int]:
    return {unit: i for i, (_name, units) in enumerate(layers) for unit in units}


def modules(root: Path, package: str = "fyan") -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``root/package``."""
    out = {}
    for p in sorted((root / package).rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def unit_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def _in(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (a submodule when ``from package import submodule``)
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def imports(root: Path, package: str = "fyan") -> list[Import]:
    """Every import of a ``package`` module by a ``package`` module, anywhere in the file."""
    mods = modules(root, package)
    found = []
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in mods else source for a in node.names]
            else:
                continue
            for t in targets:
                if _in(t, package):
                    found.append(Import(mod, t, node.lineno))
    return found


@dataclass
class Findings:
    upward: list[str]
    cycles: list[list[str]]
    unplaced: list[str]
    unused_exceptions: list[Exception_]


def check_layers(root: Path, layers: list[tuple[str, list[str]]], exceptions: list[Exception_],
                 package: str = "fyan") -> Findings:
    """Upward imports (``upward``, one line each), cycles between units (``cycles``, each a
    list of units), units the table does not place (``unplaced``) and exceptions no import uses."""
    rank = layer_rank(layers)
    used: set[Exception_] = set()
    upward, unplaced = [], set()
    graph = nx.DiGraph()
    for imp in imports(root, package):
        src, dst = unit_of(imp.module), unit_of(imp.target)
        if src == dst:
            continue
        excused = [e for e in exceptions if _in(imp.module, e.importer) and _in(imp.target, e.imported)]
        if excused:
            used.update(excused)
            continue
        for u in (src, dst):
            if u not in rank:
                unplaced.add(u)
        graph.add_edge(src, dst, example=str(imp))
        if src in rank and dst in rank and rank[dst] > rank[src]:
            upward.append(f"{imp}: {dst} ({layers[rank[dst]][0]}) is above {src} ({layers[rank[src]][0]})")
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
    return Findings(upward, cycles, sorted(unplaced), [e for e in exceptions if e not in used])


def _cycle_text(graph_cycles: list[list[str]], root: Path, package: str = "fyan") -> str:
    lines = []
    edges = {}
    for imp in imports(root, package):
        edges.setdefault((unit_of(imp.module), unit_of(imp.target)), str(imp))
    for c in graph_cycles:
        lines.append(" <-> ".join(c) + ": " + "; ".join(edges[(a, b)] for a in c for b in c if (a, b) in edges))
    return "\n".join(lines)


def test_every_import_goes_down_the_layer_table() -> None:
    found = check_layers(ROOT, LAYERS, EXCEPTIONS)
    assert not found.unplaced, f"units missing from the layer table (place them in LAYERS): {found.unplaced}"
    assert not found.upward, "imports that go up a layer:\n" + "\n".join(found.upward)


def test_no_cycle_between_packages() -> None:
    found = check_layers(ROOT, LAYERS, EXCEPTIONS)
    assert not found.cycles, "packages that import each other:\n" + _cycle_text(found.cycles, ROOT)


def test_exceptions_are_few_explained_and_used() -> None:
    assert len(EXCEPTIONS) <= 3, "at most three exceptions: move code instead of adding one"
    assert all(e.reason.strip() for e in EXCEPTIONS)
    found = check_layers(ROOT, LAYERS, EXCEPTIONS)
    assert not found.unused_exceptions, f"exceptions no import needs any more (remove them): {found.unused_exceptions}"


def test_every_unit_is_placed_once() -> None:
    units = [u for _n, us in LAYERS for u in us]
    assert len(units) == len(set(units))
    on_disk = {unit_of(m) for m in modules(ROOT)}
    assert on_disk == set(units), (f"on disk, not in the table: {sorted(on_disk - set(units))}; "
                                   f"in the table, not on disk: {sorted(set(units) - on_disk)}")


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def test_the_check_reports_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    """A synthetic tree: ``low`` imports ``high`` inside a function (upward), ``high`` imports
    ``low`` (a cycle between them), ``mid`` imports ``mid2`` under ``TYPE_CHECKING`` and
    ``mid2`` imports ``mid`` relatively (a cycle within one layer, no upward import)."""
    _write(tmp_path, "pkg/__init__.py", "")
    _write(tmp_path, "pkg/low/__init__.py", "def f():\n    from pkg.high import thing\n    return thing\n")
    _write(tmp_path, "pkg/high/__init__.py", "from pkg.low import f\nthing = 1\n")
    _write(tmp_path, "pkg/mid/__init__.py",
           "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.mid2 import x\n")
    _write(tmp_path, "pkg/mid2/__init__.py", "from ..mid import TYPE_CHECKING as x\n")
    layers = [("bottom", ["pkg", "pkg.low"]), ("middle", ["pkg.mid", "pkg.mid2"]), ("top", ["pkg.high"])]
    found = check_layers(tmp_path, layers, [], package="pkg")
    assert [line.split(":")[0] for line in found.upward] == ["pkg.low"]
    assert "pkg.high (top) is above pkg.low (bottom)" in found.upward[0]
    assert found.cycles == [["pkg.high", "pkg.low"], ["pkg.mid", "pkg.mid2"]]
    assert found.unplaced == []

    excused = check_layers(tmp_path, layers, [Exception_("pkg.low", "pkg.high", "synthetic")], package="pkg")
    assert excused.upward == [] and excused.cycles == [["pkg.mid", "pkg.mid2"]]
    unplaced = check_layers(tmp_path, layers[:2], [Exception_("pkg.x", "pkg.y", "never used")], package="pkg")
    assert unplaced.unplaced == ["pkg.high"]
    assert [e.importer for e in unplaced.unused_exceptions] == ["pkg.x"]


def _architecture_table() -> list[tuple[str, list[str]]]:
    """The layer table of ``docs/architecture.md``: rows ``| layer | units | ... |``, units as
    code spans (``fyan/lean/`` or ``fyan/config.py``) turned into dotted names."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not line.startswith("|") or set(cells[0]) <= {"-"} or cells[0] == "layer":
            continue
        names = re.findall(r"`(fyan/[\w/]*?)(?:/|\.py)?`", cells[1])
        rows.append((cells[0], [n.replace("/", ".").replace(".__init__", "") for n in names]))
    return rows


def test_architecture_page_shows_this_table() -> None:
    shown = _architecture_table()
    assert [n for n, _ in shown] == [n for n, _ in LAYERS]
    for (name, units), (_n, doc_units) in zip(LAYERS, shown):
        assert sorted(doc_units) == sorted(units), f"layer {name!r}: docs/architecture.md lists {doc_units}"

