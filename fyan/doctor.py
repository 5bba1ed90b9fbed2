"""``fyan doctor``: which providers are usable here, and whether a Lean toolchain is present.

For each agent configuration a project uses (the stages sharing one are reported together):

* ``replay`` — the cassette file exists (how many entries); a miss is only known when a
  request is made;
* ``record`` — as the live provider it records from, plus the cassette folder;
* ``anthropic`` / ``openai`` — the API key is in the environment (the key itself is never
  printed); the endpoint is contacted only with ``--online`` (otherwise: "not checked");
* ``openai-compatible`` — ``base_url`` is set and answers ``GET <base_url>/models`` (a local
  server; 5 s timeout);
* ``command`` — the program is found on ``PATH``.

Then the Lean toolchain (``fyan.lean.toolchain.discover``: ``lake --version``), the build
sandbox (bubblewrap; how an unconfined command's process tree is ended), the environment
confined processes get (which variables pass: names and whether set, never values), the
trusted inspector, the project's library (its Mathlib tag and toolchain, and whether Fyan's table
``fyan.lean.mathlib.PAIRS`` holds the pair), the kernel soundness bugs the toolchain found still
has (``fyan.lean.mathlib.KERNEL_BUGS``, each with its fix), and the selftest state per toolchain (``fyan
selftest``: the gate trusts only a toolchain whose selftest passed). Nothing is reported usable that was not checked.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from pydantic import BaseModel

from fyan.agents.preflight import agent_groups, stages_in_use
from fyan.config import FyanConfig, StageAgent

KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
DEFAULT_ENDPOINTS = {"anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
                     "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1")}


class Finding(BaseModel):
    what: str
    ok: bool | None  # None: not checked
    detail: str


def _reach(url: str, timeout: float = 5.0) -> tuple[bool, str]:
    import httpx2

    try:
        resp = httpx2.get(url, timeout=timeout)
    except httpx2.HTTPError as e:
        return False, f"{url} unreachable: {type(e).__name__}: {str(e)[:120]}"
    return True, f"{url} answered HTTP {resp.status_code}"


def check_agent(kind: str, agent: StageAgent, cassette, online: bool) -> list[Finding]:
    """Findings for one provider ``kind`` configured as ``agent``."""
    from fyan.agents.providers.replay import load_cassette
    from fyan.errors import FyanError

    out: list[Finding] = []
    if kind == "replay":
        if cassette.is_file():
            try:
                n = len(load_cassette(cassette))
                out.append(Finding(what="cassette", ok=True, detail=f"{cassette} ({n} recorded responses)"))
            except FyanError as e:
                out.append(Finding(what="cassette", ok=False, detail=e.message))
        else:
            out.append(Finding(what="cassette", ok=False, detail=f"{cassette} does not exist"))
    elif kind == "record":
        if agent.record_provider is None:
            out.append(Finding(what="record_provider", ok=False, detail='provider = "record" needs record_provider'))
        else:
            out += check_agent(agent.record_provider, agent, cassette, online)
    elif kind in KEY_VARS:
        var = KEY_VARS[kind]
        present = bool(os.environ.get(var))
        out.append(Finding(what="api key", ok=present, detail=f"{var} {'is set' if present else 'is not set'}"))
        env, default = DEFAULT_ENDPOINTS[kind]
        base = os.environ.get(env) or default
        if online:
            ok, detail = _reach(base)
            out.append(Finding(what="endpoint", ok=ok, detail=detail))
        else:
            out.append(Finding(what="endpoint", ok=None, detail=f"{base} not checked (use --online)"))
    elif kind == "openai-compatible":
        if not agent.base_url:
            out.append(Finding(what="base_url", ok=False, detail="base_url is not set"))
        else:
            ok, detail = _reach(agent.base_url.rstrip("/") + "/models")
            out.append(Finding(what="endpoint", ok=ok, detail=detail))
    elif kind == "none":
        out.append(Finding(what="model", ok=False, detail='no model is configured (provider = "none"): set one in fyan.toml'))
    elif kind == "command":
        if not agent.command:
            out.append(Finding(what="command", ok=False, detail="command = [...] is empty"))
        else:
            path = shutil.which(agent.command[0])
            out.append(Finding(what="command", ok=path is not None,
                               detail=f"{agent.command[0]} found at {path}" if path else f"{agent.command[0]} not found on PATH"))
    return out


def diagnose(config: FyanConfig | None, project_root=None, online: bool = False) -> dict[str, Any]:
    """The doctor's report: ``providers`` (one entry per distinct agent configuration of the
    project; without a project, the hosted providers with ``needed`` false and ``state``
    "available" or "not configured"), ``lean``, ``sandbox`` and ``ok`` (every needed thing
    usable: a provider no project chose never makes it false)."""
    from fyan.sandbox.runner import bwrap_status
    from fyan.lean.toolchain import discover

    providers = []
    if config is not None:
        cassette = project_root / config.agents.replay_file
        for agent, stages in agent_groups(config, stages_in_use(config)):
            findings = check_agent(agent.provider, agent, cassette, online)
            providers.append({
                "stages": stages, "provider": agent.provider, "needed": True,
                # a model name only where one is sent: none has no model, a command agent picks its own
                "model": agent.model if agent.provider not in ("none", "command") else None,
                "usable": all(f.ok is not False for f in findings),
                "checks": [f.model_dump() for f in findings],
            })
    else:  # no project: nothing was chosen, so nothing is needed; say what is available here
        for kind in ("anthropic", "openai"):
            findings = check_agent(kind, StageAgent(provider=kind), None, online)
            usable = all(f.ok is not False for f in findings)
            providers.append({"stages": [], "provider": kind, "model": "", "needed": False, "usable": usable,
                              "state": "available" if usable else "not configured",
                              "checks": [f.model_dump() for f in findings]})
    # without a project: the defaults with this environment's FYAN_LEAN__* settings applied
    lean_cfg = config.lean if config is not None else FyanConfig(project={"name": "-", "source": "-"}).lean
    disc = discover(lean_cfg)
    lean = {"present": disc.toolchain is not None,
            "detail": f"{disc.toolchain.lake}: {disc.toolchain.version}" if disc.toolchain else disc.problem,
            "looked_in": list(disc.looked_in)}
    bwrap, why = bwrap_status()
    if bwrap is None:
        from fyan.sandbox.runner import SANDBOX_REMEDY

        if lean_cfg.sandbox == "off":  # the advice to set it off would be advice already taken
            why = (f"{why}; not used: [lean] sandbox = \"off\" runs model-written code unconfined (every report "
                   "says UNCONFINED); install bubblewrap and set sandbox = \"require\" to confine it")
        elif lean_cfg.sandbox == "auto":
            why = (f"{why}; [lean] sandbox = \"auto\" runs model-written code unconfined here (every report says "
                   "UNCONFINED); " + SANDBOX_REMEDY.split("; or set [lean] sandbox")[0] + " to confine it")
        else:
            why = f"{why}; {SANDBOX_REMEDY}"
    from fyan.sandbox.runner import tree_mechanism

    sandbox = {"available": bwrap is not None, "detail": why, "setting": lean_cfg.sandbox,
               "unconfined_tree": tree_mechanism()}
    environment = environment_status(config, lean_cfg)
    inspector = _inspector_status(lean_cfg)
    selftest = selftest_status(lean_cfg, disc.toolchain)
    from fyan.gates.completion import find_nanoda
    from fyan.lean.mathlib import library_status

    tc = disc.toolchain
    status = library_status(lean_cfg, tc.lean_version if tc else None, tc is not None, find_nanoda() is not None)
    ok = (all(p["usable"] for p in providers if p.get("needed", True)) and lean["present"] and (bwrap is not None or lean_cfg.sandbox != "require")
          and selftest["trusted"] is not False and status["kernel"]["ok"] is not False)
    return {"providers": providers, "lean": lean, "sandbox": sandbox, "environment": environment,
            "inspector": inspector, "selftest": selftest, **status, "ok": ok}


def environment_status(config: FyanConfig | None, lean_cfg, env: dict[str, str] | None = None) -> dict[str, Any]:
    """What of Fyan's environment (``env``, default this process's) reaches confined processes
    (``fyan.sandbox.runner.confined_environment``): ``always`` (``TOOL_VARIABLES`` and the passing
    ``FYAN_*`` names), ``lean`` (``[lean] pass_env``) and one entry per command agent configuration
    (its ``pass_env``), each name with whether it is set; ``withheld``: how many other variables
    are set and do not pass (names of secret-looking ``FYAN_*`` ones in ``withheld_fyan``)."""
    from fyan.sandbox.runner import TOOL_VARIABLES, _passes

    env = dict(os.environ) if env is None else env
    always = {k: k in env for k in TOOL_VARIABLES}
    always.update({k: True for k in sorted(env) if k.startswith("FYAN_") and _passes(k, env[k])})
    lean = {k: k in env for k in lean_cfg.pass_env}
    agents = []
    if config is not None:
        for agent, stages in agent_groups(config, stages_in_use(config)):
            if agent.provider == "command":
                agents.append({"stages": stages, "pass_env": {k: k in env for k in agent.pass_env}})
    named = set(always) | set(lean) | {k for a in agents for k in a["pass_env"]}
    return {"always": always, "lean": lean, "agents": agents,
            "withheld_fyan": sorted(k for k in env
                                    if k.startswith("FYAN_") and not _passes(k, env[k]) and k not in named),
            "withheld": len([k for k in env if k not in named])}


def selftest_status(lean_cfg, toolchain) -> dict[str, Any]:
    """The selftest state (``fyan.trust.record``): every toolchain with a kept
    ``fyan selftest`` result (passed or failed, its date, whether it is still valid for this Fyan,
    inspector and corpus), and whether the gate trusts the toolchain found here (``trusted``: None
    when there is none; ``statement``: what gate reports will say)."""
    from fyan.trust.record import all_records, current_identity, record_problem, toolchain_trust

    identity = current_identity()
    toolchains = [{"lean": r.get("key"), "toolchain": r.get("toolchain"), "passed": bool(r.get("passed")),
                   "date": r.get("date"), "fyan_version": r.get("fyan_version"),
                   "valid_now": record_problem(r, r.get("key", "?"), identity) is None,
                   "problem": record_problem(r, r.get("key", "?"), identity)} for r in all_records()]
    if toolchain is None:
        return {"trusted": None, "statement": "no toolchain found", "toolchains": toolchains}
    trust = toolchain_trust(toolchain, lean_cfg)
    return {"trusted": trust.trusted, "statement": trust.problem or trust.statement, "toolchains": toolchains}


def _inspector_status(lean_cfg) -> dict[str, Any]:
    """Whether the trusted inspector is built for the configured pin (it is built on first use,
    before any candidate; never here)."""
    from fyan.lean.inspector import cache_root, inspector_key, verified_build

    folder = cache_root(lean_cfg) / inspector_key(lean_cfg.toolchain)
    build = verified_build(folder)
    if build is not None:
        return {"built": True, "detail": f"{build.executable} ({build.note}; sha256 {build.sha256[:16]}…)"}
    if folder.exists():
        return {"built": False, "detail": f"{folder} does not match its manifest: it is rebuilt before the next gate"}
    return {"built": False, "detail": f"not built yet for {lean_cfg.toolchain}: built into {folder.parent} before the "
                                      "first gate (needs the pinned toolchain)"}


def render(report: dict[str, Any]) -> str:
    mark = {True: "ok  ", False: "FAIL", None: "--  "}
    lines = []
    for p in report["providers"]:
        if not p.get("needed", True):  # no project chose it: available or not, never a failure
            lines.append(f"[{'ok  ' if p['usable'] else '--  '}] provider {p['provider']}: {p['state']} "
                         "(no project given: a project that chooses it needs it)")
            for c in p["checks"]:
                lines.append(f"         [{'ok  ' if c['ok'] else '--  '}] {c['what']}: {c['detail']}")
            continue
        head = ("no model configured (provider = \"none\")" if p["provider"] == "none" else
                f"provider {p['provider']}" + (f" ({p['model']})" if p.get("model") else ""))
        lines.append(f"[{mark[p['usable']]}] {head}" + (f" for {', '.join(p['stages'])}" if p["stages"] else ""))
        for c in p["checks"]:
            lines.append(f"         [{mark[c['ok']]}] {c['what']}: {c['detail']}")
    lean = report["lean"]
    lines.append(f"[{mark[lean['present']]}] Lean toolchain: {lean['detail']}")
    if report.get("library"):
        lib, kernel = report["library"], report["kernel"]
        lines.append(f"[{'--  ' if lib['pair_problem'] else 'ok  '}] library: {lib['detail']}")
        lines.append(f"[{mark[kernel['ok']]}] kernel soundness: {kernel['detail']}")
    sb = report["sandbox"]
    lines.append(f"[{mark[sb['available']] if sb['available'] or sb['setting'] == 'require' else '--  '}] sandbox for "
                 f"model-written code ([lean] sandbox = {sb['setting']}): {sb['detail']}")
    lines.append(f"         unconfined (sandbox off), a command's process tree ends by: {sb.get('unconfined_tree')}")
    env = report.get("environment")
    if env:
        def names(d: dict[str, bool]) -> str:
            return ", ".join(k + ("" if set_ else " (unset)") for k, set_ in d.items()) or "nothing"

        lines.append(f"[ok  ] environment of confined processes: {names(env['always'])}")
        lines.append(f"         Lean processes also get ([lean] pass_env): {names(env['lean'])}")
        for a in env["agents"]:
            lines.append(f"         command agent for {', '.join(a['stages'])} also gets (pass_env): {names(a['pass_env'])}")
        withheld = f"{env['withheld']} other variable(s) of this environment do not pass"
        if env["withheld_fyan"]:
            withheld += f" (secret-looking: {', '.join(env['withheld_fyan'])})"
        lines.append("         " + withheld)
    ins = report.get("inspector")
    if ins:
        lines.append(f"[{'ok  ' if ins['built'] else '--  '}] trusted inspector: {ins['detail']}")
    st = report.get("selftest")
    if st:
        lines.append(f"[{mark[st['trusted']]}] gate selftest of this toolchain: {st['statement']}")
        for t in st["toolchains"]:
            state = ("passed" if t["passed"] else "FAILED") + ("" if t["valid_now"] or not t["passed"] else
                                                               " (out of date: run it again)")
            lines.append(f"         Lean {t['lean']}: selftest {state} on {t['date']} (fyan {t['fyan_version']})")
    lines.append("Everything needed is usable." if report["ok"] else "Something needed is missing (see FAIL above).")
    return "\n".join(lines)
