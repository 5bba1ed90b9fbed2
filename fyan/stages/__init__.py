"""The stage registry: every per-unit stage and post-completion task, declared once.

A stage is one module of this package holding ``SPEC = StageSpec(...)``; a post-completion task
is one holding ``SPEC = PostTaskSpec(...)``. Everything else reads the registry: the ``Stage``
identifiers (``fyan.state.models``), the files the gateway publishes, the inputs and the Lean
resource the executor gives a task, the agent a worker runs, the deterministic check the gateway
runs, the post-completion tasks the engine schedules. A package outside Fyan adds a stage by
naming a module with a ``SPEC`` under the ``fyan.stages`` entry-point group (``docs/extending.md``).

Agents, checks and input builders are named as ``"module:function"`` and imported on first
use: the registry itself imports nothing but this package, so reading a stage's outputs never
loads the agents' or the gate's modules (which load Lean adapters, networkx and the SDKs).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any

#: The entry-point group through which an installed package adds stages or post tasks.
ENTRY_POINT_GROUP = "fyan.stages"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class StageSpec:
    """One per-unit stage.

    * ``name`` — the identifier stored in the state store (``stage_runs.stage``) and used in
      ``fyan.toml`` (``[agents.stages.<name>]``); lowercase letters, digits, ``_``;
    * ``order`` — where the stage runs in a unit's life (ascending; the gateway allows stages
      only in this order; the built-in stages use 10, 20, ..., 50);
    * ``outputs`` — files (relative to ``units/<unit>/``) the agent must leave in its attempt
      folder; published when the check passes;
    * ``extra_outputs`` — files the attempt may leave besides, published with the outputs;
    * ``agent`` — ``"module:function"`` of the stage agent, ``function(StageSession,
      UnitContext) -> None`` (None: no model; the check alone produces the result);
    * ``check`` — ``"module:function"`` of the deterministic check, ``function(CheckContext) ->
      CheckOutcome`` (it never calls a model);
    * ``needs_lean`` — the task runs Lean: it needs a node with the ``lean`` resource and the
      build's memory limit;
    * ``inputs`` — ``"module:function"`` returning extra input files of a task,
      ``function(rows, run, root) -> dict[path, bytes]`` with the unit's exported store
      ``rows``, the opened ``StageRun`` and the project folder (None: the standard inputs only);
    * ``completes`` — a succeeded run of this stage completes the unit (the completion gate).
    """

    name: str
    order: int
    summary: str
    outputs: tuple[str, ...] = ()
    extra_outputs: tuple[str, ...] = ()
    agent: str | None = None
    check: str = ""
    needs_lean: bool = False
    inputs: str | None = None
    completes: bool = False


@dataclass(frozen=True)
class PostTaskSpec:
    """One post-completion task: runs for a complete unit, recorded in ``post_runs``; its check
    decides only what is published, never whether the unit is complete.

    ``agent``: ``"module:function"``, ``function(StageSession, UnitContext) -> None``;
    ``check``: ``"module:function"``, ``function(PostContext) -> PostOutcome``.
    """

    name: str
    order: int
    summary: str
    agent: str
    check: str


class RegistryError(Exception):
    """A stage module declares an inconsistent ``SPEC`` (raised at import: a broken stage
    must not let Fyan run with a different lifecycle than the one declared)."""


def _modules() -> list[Any]:
    """The stage modules: this package's, then those named under ``ENTRY_POINT_GROUP``."""
    mods = [importlib.import_module(f"{__name__}.{m.name}") for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
            if not m.name.startswith("_")]
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        mods.append(importlib.import_module(ep.value.split(":")[0]))
    return mods


def _validate(specs: list[StageSpec | PostTaskSpec]) -> None:
    names: dict[str, str] = {}
    orders: dict[tuple[type, int], str] = {}
    for spec in specs:
        where = f"stage {spec.name!r}"
        if not _NAME.match(spec.name):
            raise RegistryError(f"{where}: a name is lowercase letters, digits and _ (it is a store value and a config key)")
        if spec.name in names:
            raise RegistryError(f"{where} is declared twice ({names[spec.name]} and {spec.__module__})")
        names[spec.name] = type(spec).__name__
        key = (type(spec), spec.order)
        if key in orders:
            raise RegistryError(f"{where}: order {spec.order} is taken by {orders[key]!r}")
        orders[key] = spec.name
        refs = [spec.check, spec.agent, getattr(spec, "inputs", None)]
        for ref in refs:
            if ref is not None and not _REF.match(ref):
                raise RegistryError(f"{where}: {ref!r} is not a 'module:function' reference")
    stages = [s for s in specs if isinstance(s, StageSpec)]
    if [s.name for s in stages if s.completes] != [max(stages, key=lambda s: s.order).name]:
        raise RegistryError("exactly one stage completes a unit, and it is the last one")


@cache
def _load() -> tuple[tuple[StageSpec, ...], tuple[PostTaskSpec, ...]]:
    specs = []
    for mod in _modules():
        spec = getattr(mod, "SPEC", None)
        if not isinstance(spec, (StageSpec, PostTaskSpec)):
            raise RegistryError(f"{mod.__name__}: a stage module defines SPEC = StageSpec(...) or PostTaskSpec(...)")
        specs.append(spec)
    _validate(specs)
    stages = tuple(sorted((s for s in specs if isinstance(s, StageSpec)), key=lambda s: s.order))
    posts = tuple(sorted((s for s in specs if isinstance(s, PostTaskSpec)), key=lambda s: s.order))
    return stages, posts


def stage_specs() -> tuple[StageSpec, ...]:
    """Every stage, in the order a unit runs them."""
    return _load()[0]


def post_specs() -> tuple[PostTaskSpec, ...]:
    """Every post-completion task, in the order they run for a unit."""
    return _load()[1]


def stage_spec(name: str) -> StageSpec:
    """The spec of stage ``name`` (a ``Stage`` or its value); ``KeyError`` if none."""
    return _by_name()[str(name)]


def post_spec(name: str) -> PostTaskSpec:
    """The spec of post-completion task ``name``; ``KeyError`` if none."""
    return {s.name: s for s in post_specs()}[name]


@cache
def _by_name() -> dict[str, StageSpec]:
    return {s.name: s for s in stage_specs()}


def post_task_names() -> tuple[str, ...]:
    return tuple(s.name for s in post_specs())


@cache
def resolve(ref: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` reference names (imported on first use)."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def stage_agents() -> dict[str, Callable[..., None]]:
    """Stage name -> agent function, for every stage with an agent (imports them)."""
    return {s.name: resolve(s.agent) for s in stage_specs() if s.agent is not None}


def stage_checks() -> dict[str, Callable[..., Any]]:
    """Stage name -> deterministic check (imports them)."""
    return {s.name: resolve(s.check) for s in stage_specs()}


def needs_lean(stage: str) -> bool:
    """Whether a task of ``stage`` runs Lean (``StageSpec.needs_lean``)."""
    return _by_name()[str(stage)].needs_lean
