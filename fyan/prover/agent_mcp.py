"""The prover tools for a ``command`` agent: MCP configuration written into its workspace.

A command agent (``fyan.agents.providers.command``) runs confined by bubblewrap: it writes only
its workspace, has no network (unless ``network = true``), and the project folder — the state
store, ``.fyan/``, other units — and the home are hidden from it. ``fyan mcp prover PROJECT
UNIT`` opens the project's store and configuration, so it cannot start *inside* that sandbox.
Instead Fyan derives the unit's server configuration outside (``config_for_unit``: the
toolchain, the search path, the unit's header and preamble), writes it as
``.fyan-prover/prover.json`` in the workspace, and writes, for the common coding-agent CLIs, an
MCP configuration whose server command is ``<python> -m fyan mcp prover --config
<workspace>/.fyan-prover/prover.json`` over stdio:

* ``.mcp.json`` — Claude Code's project-scoped servers (``mcpServers``: ``command``, ``args``,
  ``env``);
* ``.codex/config.toml`` — Codex (``[mcp_servers.<name>]``: ``command``, ``args``, ``env``; read
  as the project's config in a trusted project, or as the whole config with
  ``CODEX_HOME=$FYAN_WORKSPACE/.codex``);
* ``.gemini/settings.json`` — Gemini CLI's project settings (``mcpServers``: ``command``,
  ``args``, ``env``, ``cwd``);
* ``.fyan-prover/mcp.json`` — the generic form (``mcpServers`` as above), also named by the
  request's ``FYAN_MCP_CONFIG`` variable.

**The server inherits the agent's confinement.** The agent's client starts the server as its
own child, inside the agent's bubblewrap sandbox: the same user namespace without
capabilities, the same hidden folders, no network, writes only in the workspace. A sandbox
cannot be nested (bubblewrap refuses a user namespace inside one made with
``--disable-userns``), so the configuration's ``sandbox`` is ``off`` and its warm Lean server
runs under the agent's sandbox instead — the confinement every process the agent starts
already has. Its scratch folder and its call log are inside the workspace
(``.fyan-prover/``, never taken as a response file: ``fyan.agents.providers.command``
skips it). Everything the server reads that the sandbox hides — the declaration index in
``.fyan/``, the toolchain, the dependencies — is bound back read-only by the agent's
confinement (``read_only_paths``), decided by Fyan, never from a file in the workspace (the agent
can rewrite those: they only change what it itself runs, with its own rights).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the server's modules load only when a configuration is written
    from fyan.prover.mcp_server import ProverConfig

#: the workspace folder of the server's configuration, scratch and call log
CONFIG_DIR = ".fyan-prover"
#: the client configurations written, relative to the workspace
CLIENT_FILES = (".mcp.json", ".codex/config.toml", ".gemini/settings.json", f"{CONFIG_DIR}/mcp.json")


@dataclass
class AgentMcp:
    """What ``prepare`` wrote: ``files`` (relative path → path), the server ``command``, and
    ``note`` (why nothing was written, when ``files`` is empty)."""

    files: dict[str, Path] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def generic(self) -> Path | None:
        return self.files.get(f"{CONFIG_DIR}/mcp.json")


def server_command(config: Path) -> list[str]:
    """The stdio server's command line: this Python running ``fyan mcp prover --config``."""
    return [sys.executable, "-m", "fyan", "mcp", "prover", "--config", str(config)]


def inside_sandbox(config: ProverConfig, workspace: Path) -> ProverConfig:
    """``config`` as it runs inside the agent's sandbox (module docstring): scratch and log in
    ``workspace/.fyan-prover/``, the warm server under the agent's confinement (``sandbox =
    "off"``, since a sandbox cannot be nested)."""
    folder = workspace.resolve() / CONFIG_DIR
    return config.model_copy(update={"scratch": folder / "servers", "log": folder / "tools.jsonl", "sandbox": "off",
                                     "hidden": [], "readable": []})


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string for these characters


def client_configs(command: list[str], workspace: Path) -> dict[str, str]:
    """The text of each of ``CLIENT_FILES`` for the server ``command`` (module docstring)."""
    from fyan.prover.mcp_server import SERVER_NAME

    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    entry = {"command": command[0], "args": command[1:], "env": env}
    generic = json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2) + "\n"
    gemini = json.dumps({"mcpServers": {SERVER_NAME: {**entry, "cwd": str(workspace.resolve())}}}, indent=2) + "\n"
    codex = (f"[mcp_servers.{SERVER_NAME}]\n"
             f"command = {_toml_string(command[0])}\n"
             f"args = [{', '.join(_toml_string(a) for a in command[1:])}]\n\n"
             f"[mcp_servers.{SERVER_NAME}.env]\n"
             + "".join(f"{k} = {_toml_string(v)}\n" for k, v in env.items()))
    return {".mcp.json": generic, ".codex/config.toml": codex, ".gemini/settings.json": gemini,
            f"{CONFIG_DIR}/mcp.json": generic}


def write(workspace: Path, config: ProverConfig) -> AgentMcp:
    """Write ``config`` (already ``inside_sandbox``) and the client configurations into
    ``workspace``. Existing files of those names are replaced (the agent may have changed them)."""
    folder = workspace / CONFIG_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "prover.json"
    path.write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")
    command = server_command(path.resolve())
    out = AgentMcp(command=command)
    for rel, text in client_configs(command, workspace).items():
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.is_symlink() or target.exists():
            target.unlink()  # never written through a link the agent left
        target.write_text(text, encoding="utf-8")
        out.files[rel] = target
    return out


def prepare(project, store, unit, workspace: Path) -> AgentMcp:
    """Derive the unit's server configuration (``fyan.prover.mcp_server.unit_config``) and write
    it with the client configurations into ``workspace``; without a toolchain (or when the
    configuration cannot be had) nothing is written and ``note`` says why."""
    from fyan.prover.mcp_server import unit_config

    try:
        config = unit_config(project, store, unit)
    except ValueError as e:
        return AgentMcp(note=f"no prover tools for this request: {e}")
    return write(workspace, inside_sandbox(config, workspace))


def read_only_paths(project_root: Path | None, hidden: list[Path] | tuple[Path, ...] = ()) -> list[Path]:
    """What a command agent's confinement binds back read-only so the server can run inside it:
    this Python's installation and the folders holding Fyan and the ``mcp`` SDK (they may be
    under the hidden home; a folder that *is* one of ``hidden`` is never bound back whole), and
    the project's declaration index (under the hidden ``.fyan/``) when there is one."""
    import importlib.util

    from fyan.sandbox.runner import program_paths

    closed = {Path(h).resolve() for h in hidden}
    paths = program_paths(sys.executable, hidden=tuple(hidden))
    for name in ("fyan", "mcp"):  # found, not imported: importing the SDK here would only cost time
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            continue
        folder = Path(spec.origin).resolve().parent
        paths.append(folder if folder.parent in closed else folder.parent)
    if project_root is not None:
        index = project_root / ".fyan" / "declarations.sqlite"
        if index.is_file():
            paths.append(index)
    return list(dict.fromkeys(paths))
