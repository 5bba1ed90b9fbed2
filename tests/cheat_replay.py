"""What a real Lean prints for each cheat beyond what the toolchain double derives: the corpus's
authored replays (``tests/cheats/manifest.toml``, ``[cheat.replay]``) as a scenario of the Lake
double (``tests/fakes/fake_lake.py``). Used by ``tests/test_cheats.py`` and by the conftest's
selftest of the double (``fyan selftest`` run against it)."""

from __future__ import annotations

from fyan.selftest.harness import Setup

ICON = {"error": "✖", "warning": "⚠", "info": "ℹ"}


def replay(setup: Setup, entry: dict) -> dict:
    """The toolchain-double scenario for ``entry``: its authored build messages placed at the
    lines of the rendered ``Basic.lean`` they point to, and its inspector fields."""
    spec = entry.get("replay", {})
    scenario: dict = {"inspect": {f"{setup.ns}.{name}": fields for name, fields in spec.get("inspect", {}).items()}}
    if "messages" in spec:
        text = setup.basic.read_text(encoding="utf-8").splitlines()
        rel = "Cheats/ThmRoot/Basic.lean"
        lines = []
        for m in spec["messages"]:
            n = next(i for i, line in enumerate(text, start=1) if m["at"] in line)
            lines.append(f"{m['severity']}: {rel}:{n}:{text[n - 1].index(m['at'])}: {m['text']}")
        worst = next((s for s in ("error", "warning", "info") if any(m["severity"] == s for m in spec["messages"])), None)
        if worst == "error":  # Lean refuses the file: Lake stops, nothing is built
            scenario["build"] = {"exit": 1, "output": "\n".join([
                "✖ [2/2] Building Cheats.ThmRoot.Basic", *lines, "error: build failed"])}
        else:
            scenario["build"] = {"exit": 0, "output": "\n".join([
                f"{ICON.get(worst, '✔')} [2/2] Built Cheats.ThmRoot.Basic (0.6s)", *lines,
                "Build completed successfully (2 jobs).",
            ])}
        scenario["build_only"] = ["Cheats.ThmRoot.Basic"]
    if "kernel_replay" in spec:
        scenario["kernel_replay"] = spec["kernel_replay"]
    return scenario
