"""Rebuild the SA-Pass demo's recorded compile outcomes from its authored expectations.

    python scripts/build_shadow_demo.py [projects/shadow-demo]

No Lean toolchain runs where the demo was made, so its compile results are *authored
expectations* (``authored/outcomes.toml``: what Lean 4 with Mathlib is expected to decide, written
by people). Replay is keyed by the sha256 of each assembled file, and the assembled files depend
on the shadow sets, the submissions and Fyan's assembly code. This script runs
``fyan shadow check`` and ``fyan shadow eval``'s code paths on the demo with a compiler that
renders the authored expectation of each compile label as ``lean --json`` output (errors at the
line given or at the checker's first line, sorry warnings as Lean prints them) and as the trusted
inspector's report of the compiled file (its declarations with their transitive axioms — the
authored ``axioms``, plus sorryAx for a declaration with sorry, the candidate black-boxed for a
checker — and no extension entry beyond declaration ranges), records every outcome into
``replay/compile.jsonl`` labelled ``authored expectation (not a Lean run)``, and fails if an
authored entry was never used (stale). Prints the number of entries written.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fyan.lean import declarations  # noqa: E402
from fyan.lean.inspector import InspectorReport  # noqa: E402
from fyan.shadow.compiler import CompileOutcome, Compiler, RecordingCompiler, _outcome, module_name  # noqa: E402

ORIGIN = "authored expectation (not a Lean run): what Lean 4 + Mathlib is expected to decide"
DEFAULT_AXIOMS = ["propext", "Classical.choice", "Quot.sound"]


def _message(line: int, severity: str, data: str, kind: str = "[anonymous]") -> str:
    return json.dumps({"caption": "", "data": data, "endPos": {"column": 6, "line": line}, "fileName": "Check.lean",
                       "isSilent": False, "keepFullRange": False, "kind": kind, "pos": {"column": 0, "line": line},
                       "severity": severity}, ensure_ascii=False)


class AuthoringCompiler(Compiler):
    """Renders ``authored/outcomes.toml`` as Lean output (see the module docstring)."""

    description = "authored expectations"

    def __init__(self, authored: dict) -> None:
        self.defaults = authored.pop("defaults", {})
        self.entries = authored
        self.used: set[str] = set()

    def compile(self, text: str, *, label: str, nonce: str, lookups=(), black_box=()) -> CompileOutcome:
        check = label.rsplit("/", 1)[-1]
        spec = self.entries.get(label)
        if spec is not None:
            self.used.add(label)
        else:
            spec = self.defaults.get(check.split(":")[0], {})
        lines = text.split("\n")
        decls = [d for d in declarations.scan(text) if d.kind != "example" and d.full_name]
        messages: list[str] = []
        sorry_decls = {d.full_name for d in decls if re.search(r"\b(?:sorry|admit)\b", d.body)}
        for d in decls:
            if d.full_name in sorry_decls:
                messages.append(_message(d.line_start, "warning", "declaration uses `sorry`", "hasSorry"))
        module = module_name(text, nonce)
        if "error" in spec:
            line = spec.get("line") or self._default_error_line(lines, decls)
            messages.append(_message(line, "error", spec["error"]))
            output = "\n".join(messages) + "\n"
            return _outcome(label, output, 1, ORIGIN, module=module, inspection_problem="not inspected: the file does not compile")
        axioms = list(spec.get("axioms", DEFAULT_AXIOMS))

        def record(d) -> dict:
            # its own proof's axioms (a checker's black-boxed candidate passes none on)
            own = axioms + (["sorryAx"] if d.full_name in sorry_decls else [])
            return {"name": d.full_name, "found": True, "kind": "def" if d.kind in ("def", "abbrev") else d.kind,
                    "module": module, "level_params": [], "type_repr": d.signature, "type_pp": d.type_text,
                    "value_repr": d.body if d.kind in ("def", "abbrev") else None, "safety": "safe",
                    "implemented_by": None, "extern": False, "init": False,
                    "sorry_direct": d.full_name in sorry_decls, "sorry_in_type": bool(re.search(r"\bsorry\b", d.header)),
                    "conclusion_true": False, "axioms": sorted(set(own)), "kernel_evaluated": [],
                    "missing_constants": []}

        by_name = {d.full_name: record(d) for d in decls}
        inspection = InspectorReport.model_validate({
            "format": "fyan-inspector/3", "nonce": nonce, "lean_version": "4.31.0 (authored)", "import_level": "private",
            "modules": [{"name": module, "found": True, "is_module": False, "imports": ["Init", "Mathlib", "Aesop"],
                         "declarations": list(by_name.values()),
                         # extension entries are not authored: which ones a toolchain writes is learned by
                         # `fyan selftest` on that toolchain (fyan.trust.learn), not known here
                         "extensions": [],
                         "registrations": [], "extra_constants": []}],
            "lookups": [{**by_name[n], "constants": [], "local_constants": [], "binder_domains": [],
                          "references": []}
                        if n in by_name else {"name": n, "found": False} for n in lookups],
            "problems": [], "blueprint": {"present": False}, "error": None,
        })
        output = "\n".join(messages) + ("\n" if messages else "")
        return _outcome(label, output, 0, ORIGIN, module=module, inspection=inspection)

    @staticmethod
    def _default_error_line(lines: list[str], decls) -> int:
        for n, line in enumerate(lines, start=1):
            if line.startswith("-- fyan shadow check:"):
                return n + 1  # the checker's `theorem` line
        theorems = [d for d in decls if d.kind == "theorem"]
        return theorems[-1].line_start if theorems else 1


def main(demo: Path) -> int:
    from fyan.shadow.complete import check_completeness
    from fyan.shadow.evaluate import run_eval
    from fyan.shadow.shadowset import load_shadow_sets

    demo = demo.resolve()
    authored = tomllib.loads((demo / "authored" / "outcomes.toml").read_text(encoding="utf-8"))
    compiler = AuthoringCompiler(authored)
    target = demo / "replay" / "compile.jsonl"
    with tempfile.TemporaryDirectory(prefix="fyan-shadow-demo-") as tmp:
        recorded = Path(tmp) / "compile.jsonl"
        recorder = RecordingCompiler(compiler, recorded)
        sets = load_shadow_sets(demo / "shadows")
        incomplete = [s.problem for s in (check_completeness(x, recorder) for x in sets.values()) if not s.complete]
        if incomplete:
            print(f"authored expectations make these shadow sets incomplete: {incomplete}", file=sys.stderr)
            return 1
        run_eval(sets, demo / "shadows", demo / "submissions", Path(tmp) / "out", recorder, jobs=1)
        unused = sorted(set(compiler.entries) - compiler.used)
        if unused:
            print("authored entries never compiled (stale labels): " + ", ".join(unused), file=sys.stderr)
            return 1
        entries = {}
        for line in recorded.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            entries[entry["key"]] = entry
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps(entries[k], ensure_ascii=False, sort_keys=True) + "\n"
                                  for k in sorted(entries, key=lambda k: entries[k]["label"])), encoding="utf-8")
    print(f"{len(entries)} outcomes written to {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "projects" / "shadow-demo"))
