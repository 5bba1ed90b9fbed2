"""Test double of the Lean toolchain's ``lake`` executable (no Lean runs in CI).

It stands in for ``lake --version``, ``lake build <module>`` and
``lake env lean --json --stdin`` (the gate's probe), printing output in the formats real Lake
and Lean print (``shared/lean-samples/``: ``✔ [n/m] Built X (t)`` progress lines,
``warning: F:L:C: declaration uses `sorry``` messages, ``Build completed successfully (N jobs).``,
``lean --json`` message objects).

Default behaviour is a clean toolchain: every build succeeds; the probe finds each requested
declaration that the workspace's source declares, with a type hash computed from its
normalized header (so a changed statement changes the hash, as a real elaboration would) and
no axioms. Scenario overrides, for the gate and cheat tests, come from the JSON file named by
``FAKE_LAKE_SCENARIO``:

    {"build": {"exit": 1, "output": "..."},          # replaces the build output
     "probe": {"<decl>": {"found": false} | {"axioms": [...]} | {"type_hash": "..."}},
     "probe_output": "...",                          # raw probe output (e.g. forged lines)
     "sorry_warnings": true,                         # add sorry warnings for `sorry` in source
     "constants": ["Int.mul_comm", ...]}             # library names the probe also finds

Every call is appended to ``FAKE_LAKE_LOG`` when set, so tests can see what Fyan ran.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path


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


def declarations(root: Path) -> dict[str, str]:
    """Full declaration name -> normalized header, over every .lean file in the workspace."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from fyan.lean.declarations import scan

    found = {}
    for f in sorted(root.rglob("*.lean")):
        if ".lake" in f.parts:
            continue
        for d in scan(f.read_text()):
            found[d.full_name] = d.frozen_signature
    return found


def build(module: str, sc: dict) -> int:
    spec = sc.get("build", {})
    if "output" in spec:
        print(spec["output"])
        return int(spec.get("exit", 0))
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
    print(f"{icon} [1/1] Built {module} (0.4s)")
    for w in warnings:
        print(w)
    print("Build completed successfully (1 job).")
    return int(spec.get("exit", 0))


def probe(sc: dict) -> int:
    source = sys.stdin.read()
    if "probe_output" in sc:
        print(sc["probe_output"])
        return 0
    decls = declarations(Path.cwd())
    for name in sc.get("constants", []):
        decls.setdefault(name, name)
    overrides = sc.get("probe", {})
    for m in re.finditer(r'^#fyan_probe "([^"]+)" (\S+)$', source, re.MULTILINE):
        nonce, name = m.group(1), m.group(2)
        rec = {"name": name, "found": name in decls}
        if rec["found"]:
            rec.update({
                "kind": "theorem", "module": "", "level_params": [],
                "type_hash": hashlib.sha256(decls[name].encode()).hexdigest()[:16],
                "value_hash": "0", "type_constants": [], "axioms": [],
            })
        rec.update(overrides.get(name, {}))
        msg = {"caption": "", "data": f"{nonce} {json.dumps(rec)}", "endPos": None, "fileName": "<stdin>",
               "isSilent": False, "keepFullRange": False, "kind": "[anonymous]",
               "pos": {"column": 0, "line": 1}, "severity": "information"}
        print(json.dumps(msg))
    return 0


def main(argv: list[str]) -> int:
    log(argv)
    sc = scenario()
    if argv[:1] == ["--version"]:
        print("Lake version 5.0.0-fake (Lean version 4.31.0) [Fyan test double]")
        return 0
    if argv[:1] == ["build"] and len(argv) == 2:
        return build(argv[1], sc)
    if argv[:2] == ["env", "lean"] and "--stdin" in argv:
        return probe(sc)
    print(f"fake lake: unsupported arguments {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
