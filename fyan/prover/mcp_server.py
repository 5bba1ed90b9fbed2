"""``fyan mcp prover PROJECT UNIT``: the prover tools over MCP (stdio), for ``command`` agents.

The server speaks the Model Context Protocol through the official ``mcp`` Python SDK
(``mcp.server.mcpserver.MCPServer``, stdio transport) and serves ``lean_check``,
``lean_goals``, ``lean_try``, ``lean_lookup``, ``lean_axioms`` (``fyan.prover.tools``) and
``search_declarations`` (``fyan.prover.search``). Each tool's input schema comes from its typed
parameters and its structured result from the result model.

What it serves is fixed before the agent asks anything (``ProverConfig``): the unit's import
header and preamble, the ``lean`` of the project's toolchain with the search path
``compile_candidate`` uses, the scratch folder a warm server may write, the ``[lean] sandbox``
mode and what the sandbox lets it read, the call log (``tools.jsonl``) and the declaration
index. ``config_for_unit`` derives it from an opened project and unit; ``--config FILE`` reads
it from a JSON file (how a test, or a sandbox that cannot open the project's store, starts it).

``main(argv)`` is the entry point (``argv``: ``PROJECT UNIT`` or ``--config FILE``); it
returns an exit code (2: the configuration could not be had, the reason on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import BaseModel, Field

from fyan.lakepackage.pool import ServerKey, ServerPool, ServerSpec
from fyan.prover.models import (AxiomsInput, AxiomsResult, CheckInput, CheckResult, GoalsInput, GoalsResult, Limits,
                                LookupInput, LookupResult, TryInput, TryResult)
from fyan.prover.search import DeclarationIndex, IndexError_, SearchResult
from fyan.prover.tools import ProverTools

SERVER_NAME = "fyan-prover"


class ProverConfig(BaseModel):
    """What one prover server serves (module docstring). Paths absolute."""

    model_config = {"extra": "forbid"}

    unit: str | None = None
    lean: str
    githash: str = ""
    search_path: list[str] = Field(default_factory=list)
    options: list[tuple[str, str]] = Field(default_factory=list)
    header: str
    preamble: str = ""
    postamble: str = ""
    scratch: Path
    extra_env: dict[str, str] = Field(default_factory=dict)
    readable: list[Path] = Field(default_factory=list)
    hidden: list[Path] = Field(default_factory=list)
    sandbox: str = "require"
    limits: Limits = Field(default_factory=Limits)
    start_timeout_s: float = 120.0
    log: Path | None = None
    index: Path | None = None


class Prover:
    """The tools of one config, on a pool of one warm server of this process."""

    def __init__(self, config: ProverConfig) -> None:
        self.config = config
        self.pool = ServerPool(size=1, idle_s=3600)
        self.key = ServerKey(config.lean, config.githash, tuple(config.search_path), config.header,
                             tuple((k, v) for k, v in config.options))
        self.spec = ServerSpec(scratch=config.scratch / self.key.digest(), extra_env=dict(config.extra_env),
                               readable=tuple(config.readable), hidden=tuple(config.hidden), sandbox=config.sandbox,
                               timeout_s=config.limits.timeout_s, start_timeout_s=config.start_timeout_s)
        self.index: DeclarationIndex | None = None
        self.index_problem = "no declaration index was given"
        if config.index is not None:
            try:
                self.index = DeclarationIndex(config.index)
            except IndexError_ as e:
                self.index_problem = str(e)
        self.tools = ProverTools(config.header, lambda: self.pool.lease(self.key, self.spec, unit=config.unit),
                                 log=config.log, limits=config.limits, preamble=config.preamble,
                                 postamble=config.postamble,
                                 module_of=self.index.module_of if self.index is not None else None)

    def search(self, query: str, limit: int = 10) -> SearchResult:
        if self.index is None:
            return SearchResult(status="unavailable", note=self.index_problem, query=query)
        return self.index.search(query, limit=limit)

    def close(self) -> None:
        self.pool.shutdown()
        if self.index is not None:
            self.index.close()


def build_server(prover: Prover):
    """The ``MCPServer`` serving ``prover``'s tools."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(SERVER_NAME, instructions=(
        "Lean tools for the unit you are proving: check text in the unit's context, read goal states, try several "
        "tactic scripts at one goal, look up and search declarations, list the axioms a declaration uses. "
        "Answers are feedback; only the completion gate decides."))
    t = prover.tools

    def lean_check(text: str) -> CheckResult:
        """Elaborate Lean declarations in the unit's context (its imports and namespace are added): every
        message, and the goal at each `sorry` and error. Lines are those of the text given."""
        return t.lean_check(CheckInput(text=text))

    def lean_goals(text: str, line: int, column: int | None = None) -> GoalsResult:
        """The goal state before and after the tactic (or term) on `line` (1-based) of the text."""
        return t.lean_goals(GoalsInput(text=text, line=line, column=column))

    def lean_try(text: str, line: int, scripts: list[str], column: int | None = None,
                 stop_at_first: bool = True) -> TryResult:
        """Try each script in place of the `sorry` (or the tactic) on `line`: which closes the goal first,
        and the errors and remaining goals of the others."""
        return t.lean_try(TryInput(text=text, line=line, column=column, scripts=scripts, stop_at_first=stop_at_first))

    def lean_lookup(name: str) -> LookupResult:
        """Whether a Lean name exists in the unit's environment; its signature, docstring and module."""
        return t.lean_lookup(LookupInput(name=name))

    def lean_axioms(name: str, text: str = "") -> AxiomsResult:
        """The axioms a declaration depends on (after the given declarations, if any); sorryAx means a sorry."""
        return t.lean_axioms(AxiomsInput(name=name, text=text))

    def search_declarations(query: str, limit: int = 10) -> SearchResult:
        """Declarations of the project's environment ranked for words (`integral add`) or a type pattern
        (`_ + _ = _ + _`): names, signatures, docstrings, modules."""
        return prover.search(query, limit)

    for fn in (lean_check, lean_goals, lean_try, lean_lookup, lean_axioms, search_declarations):
        server.add_tool(fn, structured_output=True)
    return server


def config_for_unit(project_dir: Path, unit_id: str) -> ProverConfig:
    """The config of ``unit_id`` in the project at ``project_dir`` (``unit_config``). Raises
    ``ValueError`` with the reason."""
    from fyan.project import Project
    from fyan.state.store import Store

    project = Project.open(project_dir)
    store = Store(project.paths.db)
    try:
        unit = store.unit(unit_id)
        if unit is None:
            raise ValueError(f"no unit {unit_id!r} in {project_dir}")
        return unit_config(project, store, unit)
    finally:
        store.close()


def unit_config(project, store, unit, *, log: Path | None = None, index: Path | None = None) -> ProverConfig:
    """The config of ``unit`` (a ``UnitRecord``) of an opened project: its toolchain
    (``discover``, ``resolve_setup``), the warm-server search path and confinement of
    ``fyan.lakepackage.pool.unit_spec``, the unit file's header and the text around its model part;
    ``log``: the call log (default the unit's ``attempts/<unit>/tools.jsonl``), ``index``: the
    declaration index (default ``.fyan/declarations.sqlite`` when it exists). The Formalizer's
    tool loop (``fyan.agents.prove_tools``) and the command agent's MCP set-up build their tools
    from it. Raises ``ValueError`` with the reason."""
    from fyan.lakepackage.package import MODEL_BEGIN, MODEL_END, render_unit_file
    from fyan.lakepackage.pool import header_of, unit_spec
    from fyan.lakepackage.trusted import GateEnvironmentError, resolve_setup
    from fyan.lean.toolchain import discover

    found = discover(project.config.lean)
    if found.toolchain is None:
        raise ValueError(f"no Lean toolchain: {found.problem}")
    try:
        setup = resolve_setup(project, found.toolchain)
    except GateEnvironmentError as e:
        raise ValueError(str(e)) from None
    search, spec = unit_spec(project, setup)
    marker = "\u0000BODY\u0000"
    text = render_unit_file(project, store, unit, marker, "Basic")
    before, after = text.split(marker, 1)
    header = header_of(before)
    preamble = before[before.index(header.split("\n")[-1]) + len(header.split("\n")[-1]):] if header else before
    if log is None:
        log = project.paths.attempts / unit.id / "tools.jsonl"
    if index is None:
        default = project.paths.state / "declarations.sqlite"
        index = default if default.is_file() else None
    return ProverConfig(unit=unit.id, lean=str(setup.lean), githash=setup.githash, search_path=list(search),
                        options=list(setup.options), header=header,
                        preamble=preamble.rstrip("\n").removesuffix(MODEL_BEGIN).strip("\n"),
                        postamble=after.removeprefix("\n").removeprefix(MODEL_END).strip("\n"),
                        scratch=spec.scratch, extra_env=spec.extra_env, readable=list(spec.readable),
                        hidden=list(spec.hidden), sandbox=spec.sandbox, log=log, index=index)


def main(argv: list[str] | None = None) -> int:
    """Serve the prover tools over stdio until the client closes (module docstring)."""
    ap = argparse.ArgumentParser(prog="fyan mcp prover", description="the prover tools of one unit over MCP (stdio)")
    ap.add_argument("project", nargs="?", type=Path)
    ap.add_argument("unit", nargs="?")
    ap.add_argument("--config", type=Path, help="a ProverConfig JSON file instead of PROJECT UNIT")
    args = ap.parse_args(argv)
    try:
        if args.config is not None:
            config = ProverConfig.model_validate_json(args.config.read_text(encoding="utf-8"))
        elif args.project is not None and args.unit:
            config = config_for_unit(args.project, args.unit)
        else:
            ap.error("give PROJECT UNIT or --config FILE")
    except (OSError, ValueError) as e:
        print(f"fyan mcp prover: {e}", file=sys.stderr)
        return 2
    prover = Prover(config)
    try:
        build_server(prover).run("stdio")
    finally:
        prover.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
