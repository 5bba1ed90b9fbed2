"""The project's Lean code as Lake packages: what needs the project's folders or its store.

``package`` (the project's Lake package ``lean/``: unit files, namespaces, the compiled library),
``workspace`` (an agent's working copy), ``trusted`` (gate-owned workspaces and two-phase builds
from recorded files), ``fetch`` (the dependencies a package requires, such as Mathlib),
``signatures`` (what a freeze binds and what changed), ``names`` (look-ups of a unit's
declarations), ``pool`` (warm Lean servers per workspace). Built on ``fyan.lean`` and
``fyan.sandbox``.
"""
