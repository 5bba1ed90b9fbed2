"""The declaration list of a toolchain and dependency set: its key, and where it is cached.

The declaration search (``fyan.prover.search``) and the plan's name lookup without a toolchain
(``fyan.gates.citations``) read an index built from a ``fyan-declarations/1`` list, which the
trusted inspector writes once per toolchain and dependency set. Both must never read an index
of another set as this one's, so the list and its index carry a key:

* ``toolchain`` — the project's pin, the first line of ``lean/lean-toolchain`` as elan reads it
  (``fyan.lean.toolchain.read_pin``), e.g. ``leanprover/lean4:v4.35.0``;
* ``dependencies`` — ``sha256:`` of the canonical JSON of the Lake manifest's packages (each
  package's ``name``, ``type``, ``url``/``dir``, ``rev``, ``inputRev``, ``scope``, in order of
  name), or ``none`` when the package requires nothing (no ``lean/lake-manifest.json``).

``DeclarationIndex(path, expect=declaration_key(project))`` refuses an index whose header names
another key.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

#: the fields of a manifest package that determine what it provides
PACKAGE_FIELDS = ("name", "type", "url", "dir", "rev", "inputRev", "scope", "subDir")


def dependency_digest(manifest: Path) -> str:
    """The ``dependencies`` key of a Lake manifest (module docstring). Raises ``ValueError`` for
    a manifest that is not JSON with a ``packages`` list."""
    if not manifest.is_file():
        return "none"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        packages = data["packages"]
        if not isinstance(packages, list):
            raise TypeError("packages is not a list")
        rows = sorted(({k: p.get(k) for k in PACKAGE_FIELDS if p.get(k) is not None} for p in packages),
                      key=lambda r: str(r.get("name")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{manifest} is not a Lake manifest Fyan can read: {e}") from None
    canon = json.dumps(rows, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


def declaration_key(project) -> tuple[str, str]:
    """(toolchain, dependencies) of ``project``'s Lake package (module docstring). Raises
    ``ValueError`` when the package pins no toolchain or its manifest is unreadable."""
    from fyan.lean.toolchain import read_pin

    pin = read_pin(project.paths.lean)
    if pin is None:
        raise ValueError(f"{project.paths.lean / 'lean-toolchain'} pins no toolchain")
    return pin, dependency_digest(project.paths.lean / "lake-manifest.json")
