"""What a real Lean prints for each cheat beyond what the toolchain double derives: the corpus's
authored replays (``tests/cheats/manifest.toml``, ``[cheat.replay]``) as a scenario of the Lake
double (``tests/fakes/fake_lake.py``). Used by ``tests/test_cheats.py`` and by the conftest's
selftest of the double (``fyan selftest`` run against it)."""

from __future__ import annotations

from fyan.selftest.harness import Setup

import json



def replay(setup: Setup, entry: dict) -> dict:
    """The toolchain-double scenario for ``entry``: its authored build messages placed at the
    lines of the rendered ``Basic.lean`` they point to, and its inspector fields."""
    spec = entry.get("replay", {})
    scenario: dict = {"inspect": {f"{setup.ns}.{name}": fields for name, fields in spec.get("inspect", {}).items()}}
    if "messages" in spec:  # as `lean --json` prints them (tests/fakes/fake_lean.py prints these lines)
        text = setup.basic.read_text(encoding="utf-8").splitlines()
        lines = []
        for m in spec["messages"]:
            n = next(i for i, line in enumerate(text, start=1) if m["at"] in line)
            col = text[n - 1].index(m["at"])
            sorry = "sorry" in m["text"]
            lines.append(json.dumps({
                "caption": "", "data": m["text"], "endPos": {"column": col + len(m["at"]), "line": n},
                "fileName": "@FILE@", "isSilent": False, "keepFullRange": False,
                "kind": "hasSorry" if sorry else "[anonymous]",
                "pos": {"column": col, "line": n},
                "severity": "information" if m["severity"] == "info" else m["severity"]}))
        scenario["build"] = {"exit": 1 if any(m["severity"] == "error" for m in spec["messages"]) else 0,
                             "output": "\n".join(lines)}
        scenario["build_only"] = ["Cheats.ThmRoot.Basic"]
    if "kernel_replay" in spec:
        scenario["kernel_replay"] = spec["kernel_replay"]
    return scenario
