"""Everything that talks to the Lean toolchain.

``toolchain`` (discovery, pin in every spelling, kernel checker), ``runner`` (timeout, memory
limit, bubblewrap confinement, process groups, command artifacts), ``lake`` (``lake build`` with a
verdict), ``diagnostics`` (Lake and ``lean --json`` output parsers),
``inspector`` (the trusted inspector: Fyan's own Lean program, built per toolchain pin, reading
compiled modules as an environment), ``policy`` (what a compiled unit may contain),
``trusted`` (gate-owned workspaces and two-phase builds from recorded files), ``signatures``
(what a freeze binds and what changed), ``declarations`` (lexer and source scanner), ``lints``,
``render`` (the escaping renderer for document text in Lean source), ``workspace`` and
``package`` (the agents' workspaces and the project's Lake package), ``names`` (look-ups).
"""
