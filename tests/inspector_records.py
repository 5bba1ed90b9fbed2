"""Complete records of the trusted inspector's report (format ``fyan-inspector/3``) for tests that
build reports by hand. The schema has no defaults (``fyan.lean.inspector``: every field required),
so a test states every field; these helpers state the ordinary values and let a test override
what it is about."""

from __future__ import annotations

from typing import Any


def declaration(name: str, **fields: Any) -> dict[str, Any]:
    """A declaration record of a module (``InspectedDeclaration``)."""
    return {"name": name, "found": True, "kind": "theorem", "module": name.rpartition(".")[0] or "M",
            "level_params": [], "type_repr": f"type of {name}", "type_pp": name, "value_repr": None, "safety": "safe",
            "implemented_by": None, "extern": False, "init": False, "sorry_direct": False, "sorry_in_type": False,
            "conclusion_true": False, "axioms": [], "kernel_evaluated": [], "missing_constants": [], **fields}


def lookup(name: str, **fields: Any) -> dict[str, Any]:
    """A found looked-up record (``InspectedLookup``)."""
    return declaration(name, **{"constants": [], "local_constants": [], "binder_domains": [], "references": [],
                                     **fields})


def module(name: str, **fields: Any) -> dict[str, Any]:
    """A module record (``InspectedModule``)."""
    return {"name": name, "found": True, "is_module": False, "imports": ["Init"], "declarations": [],
            "extensions": [], "registrations": [], "extra_constants": [], **fields}


def report(nonce: str = "n0", **fields: Any) -> dict[str, Any]:
    """A whole report (``InspectorReport``)."""
    return {"format": "fyan-inspector/3", "nonce": nonce, "lean_version": "4.34.1", "import_level": "private",
            "modules": [], "lookups": [], "problems": [], "blueprint": {"present": False}, "error": None,
            **fields}
