"""What the state gateway reads of an ingest plan: the shape of the Specifier's ``Dag``
(``fyan.specifier.dag``), as protocols.

The gateway records the units and edges the Specifier planned (``Gateway.register_units``); the
Specifier builds the plan and registers it through the gateway. Declaring the shape here lets
the state layer type its argument without importing the Specifier, which sits above it.
Read-only members, so the Specifier's pydantic models satisfy them as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class PlannedUnit(Protocol):
    """One theorem unit of the plan (``fyan.specifier.units.UnitSpec``)."""

    @property
    def id(self) -> str: ...
    @property
    def order(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def label(self) -> str | None: ...
    @property
    def title(self) -> str | None: ...
    @property
    def module(self) -> str: ...
    @property
    def statements(self) -> Sequence[int]: ...
    @property
    def provenance(self) -> object: ...


class PlannedEdge(Protocol):
    """One dependency edge (``fyan.specifier.dag.Edge``): ``unit`` depends on ``depends_on``."""

    @property
    def unit(self) -> str: ...
    @property
    def depends_on(self) -> str: ...
    @property
    def origin(self) -> str: ...
    @property
    def in_proof(self) -> bool: ...
    @property
    def evidence(self) -> str: ...


class UnitPlan(Protocol):
    """Validated units, dependency edges and each unit's layer (``fyan.specifier.dag.Dag``)."""

    @property
    def units(self) -> Sequence[PlannedUnit]: ...
    @property
    def edges(self) -> Sequence[PlannedEdge]: ...
    @property
    def layers(self) -> Mapping[str, int]: ...
