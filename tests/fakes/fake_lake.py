"""Test double of the Lean toolchain's ``lake`` executable (no Lean runs in CI).

It stands in for ``lake --version``, ``lake build <module>...``, ``lake env lean --json
--stdin`` (the gate's probe) and ``lake env <program> <args>`` (kernel replay), printing output
in the formats real Lake and Lean print (``shared/lean-samples/``: ``✔ [n/m] Built X (t)``
progress lines, ``warning: F:L:C: declaration uses `sorry``` messages, ``Build completed
successfully (N jobs).``, ``lean --json`` message objects at the position of the command that
logged them).

Default behaviour is a clean toolchain: every build succeeds; the probe finds each requested
declaration that the imported modules (followed through their ``import`` lines inside the
workspace) declare; its ``type_repr`` is the declaration's normalized header and, for a
definition, ``value_repr`` its body (so a changed statement changes the hash, as a real
elaboration would); ``local_constants`` are the workspace declarations whose names the
statement mentions, transitively; no axioms. Scenario overrides, for the gate and cheat tests,
come from the JSON file named by ``FAKE_LAKE_SCENARIO``:

    {"build": {"exit": 1, "output": "...",          # replaces the build output (@MODULE@ and
               "sleep": 5, "signal": 11},            #  @FILE@ are substituted); sleep first;
                                                     #  or die by a signal
     "probe": {"<decl>": {"found": false} | {"axioms": [...]} | {"type_hash": "..."} | ...},
     "probe_by_import": {"<module>": {"<decl>": {...}}},  # the same, only for probes importing
                                                          #  <module>
     "probe_output": "...",                          # raw probe output (e.g. forged lines)
     "probe_extra_output": ["..."],                  # raw lines printed before the records
                                                     #  (@NONCE@ = this run's nonce)
     "probe_process": {"exit": 1, "sleep": 5, "signal": 11},
     "sorry_warnings": true,                         # warnings for `sorry` in source (default)
     "constants": ["Int.mul_comm", ...],             # library names outside the workspace that
                                                     #  the probe also finds, as Lean core would
     "kernel_replay": {"exit": 1, "output": "..."},  # `lake env <checker> <module>`
     "version": {"exit": 0, "output": "..."}}        # `lake --version`

Every call is appended to ``FAKE_LAKE_LOG`` when set, so tests can see what Fyan ran.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def scenario() -> dict:
    path = os.environ.get("FAKE_LAKE_SCENARIO")
    return json.loads(Path(path).read_text()) if path else {}


def log(argv: list[str]) -> None:
    path = os.environ.get("FAKE_LAKE_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\n")


def module_file(module: str) -> Path:
    return Path(*module.split(".")).with_suffix(".lean")


def behave(spec: dict) -> None:
    """Sleep and/or die by a signal as a scenario section says."""
    if spec.get("sleep"):
        time.sleep(float(spec["sleep"]))
    if spec.get("signal"):
        sys.stdout.flush()
        os.kill(os.getpid(), int(spec["signal"]))


KIND = {"theorem": "theorem", "def": "def", "abbrev": "def", "instance": "def", "opaque": "opaque",
        "axiom": "axiom", "structure": "inductive", "inductive": "inductive", "class": "inductive"}


def reachable_declarations(modules: list[str]) -> dict[str, tuple[str, object]]:
    """Full name -> (module, scanned declaration) over ``modules`` and, transitively, the
    workspace modules they import (what a real ``import`` makes visible)."""
    sys.path.insert(0, str(ROOT))
    from fyan.lean.declarations import scan

    found: dict[str, tuple[str, object]] = {}
    todo, seen = list(modules), set()
    while todo:
        module = todo.pop()
        path = module_file(module)
        if module in seen or not path.is_file():
            continue
        seen.add(module)
        text = path.read_text()
        todo += re.findall(r"(?m)^import\s+(\S+)", text)
        for d in scan(text):
            if d.full_name:
                found.setdefault(d.full_name, (module, d))
    return found


def _mentions(text: str, decls: dict[str, tuple[str, object]]) -> list[str]:
    tokens = set(re.findall(r"[A-Za-z_][A-Za-z0-9_'.]*", text))
    return [full for full, (_, d) in decls.items()
            if d.name in tokens or full in tokens or d.name.split(".")[-1] in tokens]


def record_for(name: str, decls: dict[str, tuple[str, object]]) -> dict:
    if name not in decls:
        return {"name": name, "found": False}
    module, d = decls[name]
    kind = KIND.get(d.kind, d.kind)
    is_def = kind == "def"
    start = d.header + (" " + d.body if is_def else "")
    local, todo, seen = [], _mentions(start, decls), {name}
    while todo:
        full = todo.pop(0)
        if full in seen:
            continue
        seen.add(full)
        m, cd = decls[full]
        local.append({"name": full, "module": m, "kind": KIND.get(cd.kind, cd.kind), "meaning": [cd.frozen_signature]})
        ckind = KIND.get(cd.kind, cd.kind)
        todo += _mentions(cd.header + (" " + cd.body if ckind == "def" else ""), decls)
    return {
        "name": name, "found": True, "kind": kind, "module": module, "level_params": [],
        "type_repr": d.signature, "value_repr": d.body if is_def else None,
        "type_expr_hash": "0", "value_hash": "0", "type_constants": [],
        "local_constants": local, "conclusion_true": d.type_text == "True", "axioms": [],
    }


def build(modules: list[str], sc: dict) -> int:
    spec = sc.get("build", {})
    behave(spec)
    if "output" in spec:
        module = modules[-1]
        print(spec["output"].replace("@MODULE@", module).replace("@FILE@", module_file(module).as_posix()))
        return int(spec.get("exit", 0))
    total = len(modules)
    for i, module in enumerate(modules, start=1):
        path = module_file(module)
        if not path.is_file():
            print(f"error: unknown module '{module}'")
            return 1
        text = path.read_text()
        warnings = []
        if sc.get("sorry_warnings", True) and "set_option warn.sorry false" not in text:
            for n, line in enumerate(text.splitlines(), start=1):
                if re.search(r"\bsorry\b", line.split("--")[0]):
                    warnings.append(f"warning: {path.as_posix()}:{n}:{line.index('sorry')}: declaration uses `sorry`")
        icon = "⚠" if warnings else "✔"
        print(f"{icon} [{i}/{total}] Built {module} (0.4s)")
        for w in warnings:
            print(w)
    print(f"Build completed successfully ({total} job{'s' if total != 1 else ''}).")
    return int(spec.get("exit", 0))


def message(text: str, line: int) -> str:
    return json.dumps({"caption": "", "data": text, "endPos": {"column": 11, "line": line}, "fileName": "<stdin>",
                       "isSilent": False, "keepFullRange": False, "kind": "[anonymous]",
                       "pos": {"column": 0, "line": line}, "severity": "information"})


def probe(sc: dict) -> int:
    source = sys.stdin.read()
    spec = sc.get("probe_process", {})
    behave(spec)
    if "probe_output" in sc:
        print(sc["probe_output"])
        return int(spec.get("exit", 0))
    imports = re.findall(r"(?m)^import\s+(\S+)", source)
    decls = reachable_declarations([m for m in imports if m != "Lean"])
    overrides = dict(sc.get("probe", {}))
    for module, more in sc.get("probe_by_import", {}).items():
        if module in imports:
            overrides.update(more)
    commands = [(n, m) for n, line in enumerate(source.splitlines(), start=1)
                if (m := re.match(r'^#fyan_probe "([^"]+)" (?:"[^"]*" )?(\S+)$', line))]
    for extra in sc.get("probe_extra_output", []):
        nonce = commands[0][1].group(1) if commands else ""
        print(extra.replace("@NONCE@", nonce))
    for line_no, m in commands:
        nonce, name = m.group(1), m.group(2)
        rec = record_for(name, decls)
        if not rec["found"] and name in sc.get("constants", []):
            rec = {"name": name, "found": True, "kind": "theorem", "module": "Init", "level_params": [],
                   "type_repr": name, "value_repr": None, "type_expr_hash": "0", "value_hash": "0",
                   "type_constants": [], "local_constants": [], "conclusion_true": False, "axioms": []}
        over = dict(overrides.get(name, {}))
        if "type_hash" in over:
            rec.pop("type_repr", None)
            rec.pop("value_repr", None)
        rec.update(over)
        print(message(f"{nonce} {json.dumps(rec)}", line_no))
    return int(spec.get("exit", 0))


def env_program(argv: list[str], sc: dict) -> int:
    spec = sc.get("kernel_replay")
    if spec is not None:
        behave(spec)
        if spec.get("output"):
            print(spec["output"])
        return int(spec.get("exit", 0))
    return subprocess.run(argv).returncode


def main(argv: list[str]) -> int:
    log(argv)
    sc = scenario()
    if argv[:1] == ["--version"]:
        spec = sc.get("version", {})
        behave(spec)
        print(spec.get("output", "Lake version 5.0.0-fake (Lean version 4.31.0) [Fyan test double]"))
        return int(spec.get("exit", 0))
    if argv[:1] == ["build"] and len(argv) >= 2:
        return build(argv[1:], sc)
    if argv[:2] == ["env", "lean"] and "--stdin" in argv:
        return probe(sc)
    if argv[:1] == ["env"] and len(argv) >= 2:
        return env_program(argv[1:], sc)
    print(f"fake lake: unsupported arguments {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raise SystemExit(main(sys.argv[1:]))
