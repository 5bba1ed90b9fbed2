"""Everything that talks to the Lean toolchain.

``toolchain`` (discovery, pin, kernel checker), ``runner`` (timeout, memory limit, bubblewrap
sandbox, command artifacts), ``lake`` (``lake build`` with a verdict, ``lake env``),
``diagnostics`` (Lake, ``lean --json`` and REPL output parsers), ``probe`` (nonce-tagged
evidence from the compiled environment), ``signatures`` (what a freeze binds and what changed),
``declarations`` (source scanner), ``lints``, ``workspace`` and ``package`` (the project's Lake
package).
"""
