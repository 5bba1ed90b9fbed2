"""Fyan: formalize whole mathematical documents in Lean 4.

The package is organised by responsibility (see docs/architecture.md): ``intake`` reads documents,
``specifier`` builds theorem units and the dependency DAG, ``state`` holds the store and the
gateway (the only writer of state), ``agents`` talks to models, ``lean`` talks to the Lean
toolchain, ``audit`` and ``gates`` decide deterministically, ``orchestrator`` schedules.
"""

__version__ = "0.1.0"
