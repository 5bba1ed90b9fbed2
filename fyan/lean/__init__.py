"""The Lean adapters: Fyan's side of the Lean toolchain, knowing nothing of a project.

``toolchain`` (discovery, pin in every spelling, kernel checker), ``compile`` (plain ``lean`` on
one module with a dependency search path), ``lake`` (``lake build`` with a verdict), ``lsp`` (a
Lean language server session), ``diagnostics`` (Lake and ``lean --json`` output parsers),
``inspector`` (the trusted inspector: Fyan's own Lean program, built per toolchain pin, reading
compiled modules as an environment), ``policy`` and ``extensions`` (what a compiled unit may
contain), ``declarations`` (lexer and source scanner), ``lints``, ``header`` (a module's header),
``render`` (the escaping renderer for document text in Lean source), ``mathlib`` (Mathlib release
tags and the toolchains they pin). Processes run confined by ``fyan.sandbox``; what needs the
project's store or folders is in ``fyan.lakepackage``.
"""
