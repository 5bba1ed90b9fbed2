"""Before any attempt: is a usable model configured for every stage a run will use?

``fyan run``, ``fyan resume`` and the daemon call ``check_models`` after opening the project
and before ingesting or dispatching anything, so a project that cannot run stops with **one**
message and exit code 4 (``ConfigError``/``InputError``) instead of blocking every unit with
the same failure:

* ``provider = "none"`` (what ``fyan init`` writes without ``--provider``): no model yet — the
  message says how to choose one;
* ``replay``: the cassette file must exist and every line must be a valid entry (a miss of one
  request is only known when it is asked, and blocks that unit);
* ``anthropic`` / ``openai``: the API key must be in the environment;
* ``openai-compatible``: ``base_url`` must be set; ``command``: the program must be on ``PATH``.

Nothing is contacted over the network here (``fyan doctor --online`` does that).
"""

from __future__ import annotations

from fyan.config import FyanConfig, StageAgent
from fyan.errors import ConfigError, FyanError, InputError
from fyan.project import Project
from fyan.stages import post_task_names, stage_specs


def stages_in_use(config: FyanConfig, *, specify: bool = True) -> list[str]:
    """The stages whose models a run may call: the Specifier's (``[intake] specifier =
    "model"`` and ``specify``), the unit stages with an agent, the critic (``[stagnation] enabled``)
    and the post-completion tasks (``[agents] post_completion``)."""
    stages = [s.name for s in stage_specs() if s.agent]
    if specify and config.intake.specifier == "model":
        stages.insert(0, "specify")
    if config.stagnation.enabled:
        stages.append("critic")
    if config.agents.post_completion:
        stages += post_task_names()
    return stages


def agent_groups(config: FyanConfig, stages: list[str]) -> list[tuple[StageAgent, list[str]]]:
    """``stages`` grouped by the agent configuration they share, in first-use order."""
    groups: dict[str, tuple[StageAgent, list[str]]] = {}
    for stage in stages:
        agent = config.agents.for_stage(stage)
        groups.setdefault(agent.model_dump_json(), (agent, []))[1].append(stage)
    return list(groups.values())


def check_models(project: Project, *, ingested: bool) -> None:
    """Raise ``ConfigError`` or ``InputError`` (exit 4) when a stage the run will use has no
    usable model (module docstring); return quietly otherwise. ``ingested``: the project
    already has its units (the Specifier will not run)."""
    import shutil

    from fyan.agents.providers.factory import NO_MODEL_HINT, build_provider
    from fyan.agents.providers.replay import load_cassette

    config = project.config
    cassette = project.paths.root / config.agents.replay_file
    groups = agent_groups(config, stages_in_use(config, specify=not ingested))
    unset = [s for agent, stages in groups if agent.provider == "none" for s in stages]
    if unset:
        raise ConfigError(f"{project.paths.config}: no model is configured (provider = \"none\" for "
                          f"{', '.join(unset)}); nothing was run", hint=NO_MODEL_HINT)
    for agent, stages in groups:
        used_by = f"provider = \"{agent.provider}\" for {', '.join(stages)}"
        if agent.provider == "replay":
            if not cassette.is_file():
                raise InputError(f"the replay cassette {cassette} does not exist ({used_by}); nothing was run",
                                 hint=NO_MODEL_HINT + "; or record a cassette with provider = \"record\"")
            load_cassette(cassette)  # a malformed line: InputError with its line number
            continue
        try:
            provider = build_provider(agent, cassette)
        except FyanError as e:
            raise ConfigError(f"{e.message} ({used_by}); nothing was run", hint=e.hint) from None
        if agent.provider == "command" and shutil.which(agent.command[0]) is None:
            raise ConfigError(f"the command agent {agent.command[0]!r} is not on PATH ({used_by}); nothing was run",
                              hint="install it, or give its full path in command = [...] in fyan.toml")
        del provider


def endpoint_refusal(base_url: str, timeout: float = 5.0) -> str | None:
    """Why nothing answers at the OpenAI-compatible endpoint ``base_url`` (``GET
    <base_url>/models``, the route vLLM, llama.cpp's server and Ollama serve), or None when
    something does — whatever it answers: a 404, a 5xx or a timeout is a server that is there
    (an outage is waited out, ``fyan.agents.providers.breaker``). Only a connection that cannot
    be made (refused, unknown host, unroutable) is reported."""
    import httpx2

    url = base_url.rstrip("/") + "/models"
    try:
        httpx2.get(url, timeout=timeout)
    except httpx2.ConnectError as e:
        return f"{url}: {str(e) or type(e).__name__}"
    except httpx2.HTTPError:
        return None
    return None


def check_endpoints(project: Project, *, ingested: bool) -> None:
    """Raise ``ConfigError`` (exit 4) when an OpenAI-compatible server a run will use does not
    accept connections at its ``base_url`` (``endpoint_refusal``). ``fyan init`` and ``fyan
    run``/``resume`` check once, before anything runs: a server that was never started is a
    configuration problem, said at once with the URL; one that goes down after the start is an
    outage, waited out (``fyan daemon start`` waits from the start)."""
    config = project.config
    for agent, stages in agent_groups(config, stages_in_use(config, specify=not ingested)):
        kind = agent.record_provider if agent.provider == "record" else agent.provider
        if kind == "openai-compatible" and agent.base_url:
            refused = endpoint_refusal(agent.base_url)
            if refused:
                raise ConfigError(
                    f"nothing answers at base_url = \"{agent.base_url}\" (provider = \"openai-compatible\" for "
                    f"{', '.join(stages)}): {refused}; nothing was run",
                    hint="start the model server (vLLM: `vllm serve <model>`; llama.cpp: `llama-server`; Ollama: "
                         "`ollama serve`, base_url http://localhost:11434/v1) or correct base_url in fyan.toml, then "
                         "run the same command again; `fyan doctor` checks it")
