"""Everything that talks to the Lean toolchain: discovery, the sandboxed Lake runner, output
parsers, the declaration scanner, source lints, the probe, workspaces and the Lake package."""
