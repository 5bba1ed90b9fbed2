"""The Formalizer's tool loop: the prover tools offered to an SDK model through its API's tool
calls (``fyan.agents.tool_loop``), one loop per Formalizer iteration, within budgets per attempt.

* **When.** ``tools_enabled``: the stage's agent configuration says ``tools = true``, or leaves it
  unset and its provider supports tools (Anthropic, OpenAI; ``Provider.supports_tools``), and the
  provider can serve a request with tools (``can_use_tools``: SDK providers, replay, record). A
  command agent never: it edits a workspace (and has ``fyan mcp prover``). Otherwise the
  Formalizer asks as it always did.
* **Tools** (``UnitTools``): ``lean_check``, ``lean_goals``, ``lean_try``, ``lean_lookup``,
  ``lean_axioms`` (``fyan.prover.tools``, on a warm ``lean --server`` of the unit's toolchain and
  search path, started when first called in an iteration and shut down at its end) and ``search_declarations``
  (``fyan.prover.search``). The same six are offered on every machine (they are part of the
  request, hence of the replay key); where there is no Lean toolchain the ``lean_*`` tools
  answer ``status = "unavailable"`` with ``NO_TOOLCHAIN`` (the environment, not the proof), and
  without a declaration list ``search_declarations`` answers ``unavailable`` with the reason.
* **The declaration index** is the project's own (``.fyan/declarations.sqlite``) when it holds
  the current toolchain and dependency set (``fyan.prover.environment.current_index``; ``fyan
  setup`` builds it). Else it is built from ``[prover] declarations`` (a ``fyan-declarations/1``
  list in the project; a task on another node gets it like the cassette, ``use_declarations``)
  into a cache beside it keyed by the list's SHA-256, once; and when no list is configured, the
  project's own is built now by the trusted inspector (``project_index``). A failure never fails
  the attempt: ``search_declarations`` answers ``unavailable`` with the reason.
* **Budgets** (``[prover]``: tool calls, tokens, wall time, environment failures) hold for the
  whole attempt: each iteration's loop gets what the earlier ones left. The tool-call budget
  running out gets the model one last turn without tools (``final_turn``).
* **Recorded**: each tool round as a JSON line in the attempt's ``tools.jsonl``; each model
  turn as a model call (``calls/NN-prove.*``, the gateway's accounting, the cassette when
  recording); the budgets used per iteration and in all in ``tool_loop.json`` (read by ``fyan
  status --unit`` and ``fyan status --cost``).
* **Outcomes.** A final reply is parsed as the ``prove`` reply (``form_repairs`` repair turns,
  continuing the conversation). The environment failing ``[prover] environment_failures``
  rounds raises ``ToolEnvironmentError`` (not retryable: the attempt is the environment's
  failure, charged to no attempt budget). Tokens or wall time running out before a reply ends
  the iterations: the last candidate stands (the review and the gate judge it), or, when there
  is none, ``ModelOutputError`` (the model's use of its budget: an ordinary failed attempt).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from fyan.agents.providers.base import Message, ToolTurn
from fyan.agents.session import StageSession, parse_json_reply
from fyan.errors import FyanError, ModelOutputError
from fyan.agents.tool_loop import Budget, LoopResult, ToolSpec, run, tool_defs
from fyan.prover.models import (AxiomsInput, AxiomsResult, CheckInput, CheckResult, GoalsInput, GoalsResult,
                                LookupInput, LookupResult, ToolResult, TryInput, TryResult)
from fyan.prover.environment import current_index, declaration_key, project_index
from fyan.prover.search import SCHEMA, DeclarationIndex, IndexError_, SearchResult, build_index

#: what a ``lean_*`` tool answers where no Lean toolchain was found (fixed words: the same
#: answer on every such machine, so a replay made on one replays on another)
NO_TOOLCHAIN = ("no Lean toolchain on this machine (the environment, not the proof): the lean_* tools need one; "
                "search_declarations works without it")

#: seconds before a failed build of the project's declaration index is tried again in this process
INDEX_RETRY_S = 1800.0
#: (project folder, declaration key) -> (monotonic time, reason) of the last failed build in this process
_INDEX_FAILURES: dict[tuple[str, ...], tuple[float, str]] = {}
_DECLARATIONS: ContextVar[Path | None] = ContextVar("fyan_declarations_list", default=None)


class ToolEnvironmentError(FyanError):
    """The prover tools' environment failed too often in one attempt (timeouts, a Lean server
    that is down): not retryable now, and not the proof's failure (``FailureKind.ENVIRONMENT``)."""

    retryable = False


@contextlib.contextmanager
def use_declarations(path: Path | None) -> Iterator[None]:
    """Index the declaration list at ``path`` in this context (a task on a node: the head's
    ``[prover] declarations`` as a blob file) instead of the project's own path."""
    token = _DECLARATIONS.set(path)
    try:
        yield
    finally:
        _DECLARATIONS.reset(token)


def declarations_list(project) -> Path | None:
    """The declaration list this attempt indexes: ``use_declarations``'s, else
    ``[prover] declarations`` in the project (None: not configured)."""
    given = _DECLARATIONS.get()
    if given is not None:
        return given
    name = project.config.prover.declarations
    return project.paths.root / name if name else None


def cached_index(declarations: Path) -> Path:
    """The index of ``declarations`` in a cache beside the node's temporary files, keyed by the
    list's SHA-256 and the index layout (``fyan.prover.search.SCHEMA``): built once (to a
    temporary name, then renamed), reused after. Raises ``IndexError_`` (a malformed list) or
    ``OSError``."""
    digest = hashlib.sha256(declarations.read_bytes() + b"\0layout " + SCHEMA.encode()).hexdigest()[:32]
    folder = Path(tempfile.gettempdir()) / f"fyan-declarations-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    index = folder / f"{digest}.sqlite"
    if not index.is_file():
        part = folder / f"{digest}.{os.getpid()}.building"
        part.unlink(missing_ok=True)
        build_index(declarations, part)
        os.replace(part, index)
    return index


class SearchInput(BaseModel):
    query: str = Field(description="words (`integral add`) or a type pattern (`_ + _ = _ + _`)")
    limit: int = Field(default=10, ge=1, le=50)


DESCRIPTIONS = {
    "lean_check": "Elaborate Lean declarations in the unit's context (its imports and namespace are added): every "
                  "message, and the goal at each `sorry` and error. Lines are those of the text given.",
    "lean_goals": "The goal state before and after the tactic (or term) on `line` (1-based) of the text.",
    "lean_try": "Try each script in place of the `sorry` (or the tactic) on `line`: which closes the goal first, and "
                "the errors and remaining goals of the others.",
    "lean_lookup": "Whether a Lean name exists in the unit's environment; its signature, docstring and module.",
    "lean_axioms": "The axioms a declaration depends on (after the given declarations, if any); sorryAx means a sorry.",
    "search_declarations": "Declarations of the project's environment ranked for words (`integral add`) or a type "
                           "pattern (`_ + _ = _ + _`): names, signatures, docstrings, modules.",
}


class UnitTools:
    """The six prover tools of one unit for one attempt (module docstring). ``close`` ends the
    warm server and the index."""

    def __init__(self, u: Any) -> None:
        from fyan.prover.mcp_server import Prover, unit_config

        self.prover: Prover | None = None
        self.lean_problem = NO_TOOLCHAIN
        self.index: DeclarationIndex | None = None
        self.index_problem = "no declaration list is configured ([prover] declarations)"
        listed = declarations_list(u.project)
        own = current_index(u.project) if _DECLARATIONS.get() is None else None
        if own is None and listed is None:
            own = self._build_own(u.project)
        if own is not None:
            try:
                self.index = DeclarationIndex(own, expect=declaration_key(u.project))
            except (IndexError_, ValueError, OSError) as e:
                self.index_problem = f"the project's declaration index cannot be read: {type(e).__name__}"
        elif listed is not None:
            try:
                self.index = DeclarationIndex(cached_index(listed))
            except (IndexError_, OSError) as e:  # named by its file name: the same words on every node
                why = str(e).replace(str(listed), listed.name) if isinstance(e, IndexError_) else type(e).__name__
                self.index_problem = f"the declaration list {listed.name} cannot be indexed: {why}"
        try:
            config = unit_config(u.project, u.store, u.unit, log=None, index=None)
        except ValueError as e:
            if not str(e).startswith("no Lean toolchain"):
                self.lean_problem = f"the lean_* tools cannot start here (the environment, not the proof): {e}"
        else:
            self.prover = Prover(config)
            if self.index is not None:
                self.prover.tools.module_of = self.index.module_of

    def _build_own(self, project) -> Path | None:
        """The project's index of its current key, built now by the trusted inspector
        (``fyan.prover.environment.project_index``), or None with ``index_problem`` saying why.
        Without a toolchain the problem keeps its words (the same answer on every such machine)."""
        from fyan.lean.toolchain import TOOLCHAIN_MISSING

        try:
            key: tuple[str, ...] | None = (str(project.paths.root), *declaration_key(project))
        except (OSError, ValueError):
            key = None
        failed = _INDEX_FAILURES.get(key) if key is not None else None
        if failed is not None and time.monotonic() - failed[0] < INDEX_RETRY_S:
            self.index_problem = f"the project's declaration index could not be built: {failed[1]}"
            return None  # a failed build is not run again in every iteration (it may take minutes)
        state, reason, _ = project_index(project, project.paths.logs / "declarations")
        if state != "skipped":
            return current_index(project)
        if reason != TOOLCHAIN_MISSING:
            self.index_problem = f"the project's declaration index could not be built: {reason}"
            if key is not None:
                _INDEX_FAILURES[key] = (time.monotonic(), reason)
        return None

    def search(self, args: SearchInput) -> SearchResult:
        if self.index is None:
            return SearchResult(status="unavailable", note=self.index_problem, query=args.query)
        return self.index.search(args.query, limit=args.limit)

    def specs(self) -> list[ToolSpec]:
        def lean(tool: str, result: type[ToolResult], named: bool = False):
            def call(args: BaseModel) -> BaseModel:
                if self.prover is None:
                    extra = {"name": getattr(args, "name", "")} if named else {}
                    return result(status="unavailable", note=self.lean_problem, **extra)
                return getattr(self.prover.tools, tool)(args)
            return call

        return [
            ToolSpec("lean_check", DESCRIPTIONS["lean_check"], CheckInput, lean("lean_check", CheckResult)),
            ToolSpec("lean_goals", DESCRIPTIONS["lean_goals"], GoalsInput, lean("lean_goals", GoalsResult)),
            ToolSpec("lean_try", DESCRIPTIONS["lean_try"], TryInput, lean("lean_try", TryResult)),
            ToolSpec("lean_lookup", DESCRIPTIONS["lean_lookup"], LookupInput, lean("lean_lookup", LookupResult, True)),
            ToolSpec("lean_axioms", DESCRIPTIONS["lean_axioms"], AxiomsInput, lean("lean_axioms", AxiomsResult, True)),
            ToolSpec("search_declarations", DESCRIPTIONS["search_declarations"], SearchInput, self.search),  # type: ignore[arg-type]
        ]

    def close(self) -> None:
        if self.prover is not None:
            self.prover.close()
        if self.index is not None:
            self.index.close()


def tools_enabled(s: StageSession) -> bool:
    """Whether this attempt's Formalizer runs the tool loop (module docstring)."""
    provider = s.provider
    if s.edits_files or not getattr(provider, "can_use_tools", False):
        return False
    chosen = s.agent.tools
    return bool(provider.supports_tools if chosen is None else chosen)


@dataclass
class ToolLoop:
    """One attempt's tool loop: its tools, budgets left, and the record (``tool_loop.json``)."""

    u: Any
    budget: Budget
    tool_timeout_s: float
    tools: UnitTools | None = None
    iterations: list[dict[str, Any]] = field(default_factory=list)
    used: dict[str, Any] = field(default_factory=lambda: {"model_calls": 0, "tool_calls": 0, "tokens": 0,
                                                          "wall_s": 0.0, "environment_failures": 0})

    @classmethod
    def for_attempt(cls, u: Any) -> ToolLoop:
        cfg = u.project.config.prover
        return cls(u, Budget(tool_calls=cfg.tool_calls, tokens=cfg.tokens, wall_s=cfg.wall_time,
                             environment_failures=cfg.environment_failures), cfg.tool_timeout)

    def left(self) -> Budget:
        b, used = self.budget, self.used
        return Budget(tool_calls=max(0, b.tool_calls - used["tool_calls"]), tokens=max(0, b.tokens - used["tokens"]),
                      wall_s=max(0.0, b.wall_s - used["wall_s"]),
                      environment_failures=max(1, b.environment_failures - used["environment_failures"]))

    def account(self, iteration: int, r: LoopResult, repairs: int) -> None:
        env_s = sum(x.duration_s for x in r.rounds if x.environment)
        entry = {"iteration": iteration, "stop": r.stop, "replied": r.replied, "model_calls": r.model_calls,
                 "tool_calls": r.tool_calls, "tokens": r.input_tokens + r.output_tokens,
                 "wall_s": round(max(0.0, r.seconds - env_s), 3), "environment_failures": r.environment_failures,
                 "form_repairs": repairs,
                 "rounds": {status: sum(x.status == status for x in r.rounds)
                            for status in sorted({x.status for x in r.rounds})}}
        self.iterations.append(entry)
        for k in ("model_calls", "tool_calls", "tokens", "environment_failures"):
            self.used[k] += entry[k]
        self.used["wall_s"] = round(self.used["wall_s"] + entry["wall_s"], 3)
        self.write()

    def write(self) -> None:
        self.u.write("tool_loop.json", json.dumps({
            "budget": {"tool_calls": self.budget.tool_calls, "tokens": self.budget.tokens,
                       "wall_s": self.budget.wall_s, "environment_failures": self.budget.environment_failures},
            "used": self.used, "iterations": self.iterations,
        }, indent=2) + "\n")

    def close(self) -> None:
        if self.tools is not None:
            self.tools.close()
            self.tools = None


def ask_prove(s: StageSession, loop: ToolLoop, values: dict[str, str], iteration: int, schema: type[BaseModel]):
    """One Formalizer iteration's reply through the tool loop: the ``prove`` reply validated into
    ``schema``, or None when a budget (tokens, wall time) ran out before the model replied.
    Raises ``ToolEnvironmentError`` (module docstring) or ``ModelOutputError`` (no valid reply
    after the form repairs)."""

    loop.tools = UnitTools(loop.u)
    try:
        return _ask(s, loop, values, iteration, schema)
    finally:
        loop.close()


def _ask(s: StageSession, loop: ToolLoop, values: dict[str, str], iteration: int, schema: type[BaseModel]):
    from fyan.agents.prompts import render

    assert loop.tools is not None
    specs = loop.tools.specs()
    defs = tool_defs(specs)
    messages = [Message(role="system", content=render("prove.system", values) + "\n\n" + render("prove_tools.system", {})),
                Message(role="user", content=render("prove.user", values))]
    log = loop.u.attempt_dir / "tools.jsonl"
    turns: list[ToolTurn] = []
    errors: list[str] = []
    for repair in range(s.form_repairs + 1):
        start = time.monotonic()
        result = run(lambda t, choice: s.ask_turn("prove", messages, schema, defs, t, choice), tools=specs,
                     budget=loop.left(), log=log, tool_timeout_s=loop.tool_timeout_s, final_turn=True, turns=turns)
        result.seconds = round(time.monotonic() - start, 4)
        loop.account(iteration, result, repair)
        if result.stop == "environment":
            failed = [x for x in result.rounds if x.environment]
            raise ToolEnvironmentError(
                f"the prover tools failed {loop.used['environment_failures']} time(s) in this attempt (the "
                "environment, not the proof): " + "; ".join(f"{x.tool}: {x.status} {x.detail}".strip()
                                                              for x in failed[-3:]),
                hint="check the Lean toolchain and the warm language server (`fyan doctor`); the unit is tried "
                "again on the next run, with nothing charged to its attempts")
        if not result.replied:
            return None
        reply, errors = parse_json_reply(result.text, schema)
        if reply is not None:
            return reply
        turns.append(ToolTurn(text=result.text, user=render("form_repair.user", {
            "errors": "\n".join(f"- {e}" for e in errors)})))
    raise ModelOutputError(f"prove reply (prove, with tools) did not validate after {s.form_repairs} form repair(s): "
                           + "; ".join(errors[:3]))
