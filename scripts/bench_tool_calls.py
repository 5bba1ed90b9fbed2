"""Model calls per Formalizer attempt, with and without the prover tools, on the replayed
example project (``projects/taste-number-theory``: its cassette holds both, see
``scripts/build_example_cassette.py``).

Replays the example twice in scratch copies — as shipped (``[agents.stages.prove] tools =
true``) and with ``tools = false`` — with ``fyan run`` (no model, no network; whatever toolchain
this machine has), then reads each project's store: per Formalizer attempt, its model calls (one
per turn of the tool conversation) and, from the attempt's ``tool_loop.json``, the tool calls and
tokens it used. Prints one row per attempt and the totals of both runs.

    .venv/bin/python scripts/bench_tool_calls.py
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXAMPLE = ROOT / "projects" / "taste-number-theory"


def replay(folder: Path, tools: bool) -> list[dict]:
    """Replay a copy of the example in ``folder``; one row per Formalizer attempt."""
    from fyan.cli import main
    from fyan.project import Project
    from fyan.state.store import Store

    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces"))
    if not tools:
        toml = folder / "fyan.toml"
        toml.write_text(toml.read_text(encoding="utf-8").replace("tools = true", "tools = false"), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["run", str(folder)])
    project = Project.open(folder)
    store = Store(project.paths.db)
    try:
        calls = store.model_calls()
        rows = []
        for run in store.runs():
            if run.stage.value != "prove":
                continue
            record = project.paths.root / run.attempt_dir / "tool_loop.json"
            used = json.loads(record.read_text())["used"] if record.is_file() else {}
            mine = [c for c in calls if c.run_id == run.id]
            rows.append({"unit": run.unit, "attempt": run.attempt, "status": run.status.value,
                         "model_calls": len(mine), "tokens": sum(c.tokens_in + c.tokens_out for c in mine),
                         "tool_calls": used.get("tool_calls", 0)})
        return rows
    finally:
        store.close()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="fyan-bench-tools-") as tmp:
        runs = {label: replay(Path(tmp) / label, tools) for label, tools in (("with-tools", True),
                                                                                ("without-tools", False))}
    print(f"{'run':<14} {'unit':<18} {'attempt':>7} {'status':<10} {'model calls':>11} {'tool calls':>10} "
          f"{'tokens':>7}")
    for label, rows in runs.items():
        for r in rows:
            print(f"{label:<14} {r['unit']:<18} {r['attempt']:>7} {r['status']:<10} {r['model_calls']:>11} "
                  f"{r['tool_calls']:>10} {r['tokens']:>7}")
    for label, rows in runs.items():
        print(f"{label}: {len(rows)} Formalizer attempt(s), {sum(r['model_calls'] for r in rows)} model call(s), "
              f"{sum(r['tool_calls'] for r in rows)} tool call(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
