"""``fyan shadow eval | check | draft``: the command-line side of SA-Pass.

Registered as ``fyan shadow`` by ``fyan/commands/shadow.py``; each subcommand
returns a ``CommandResult`` and supports ``--json``.

Compile results come from one of:

* ``--workspace DIR`` — real Lean: plain ``lean --json`` with the dependency search path of the Lake
  package ``DIR`` (``lake env printenv LEAN_PATH`` there; for
  minif2f-style problems a package requiring Mathlib, with ``lake exe cache get`` done), then
  Fyan's trusted inspector, built for the package's ``lean-toolchain`` pin, on each compiled file;
  ``--record FILE`` also appends every outcome to ``FILE``;
* ``--replay FILE`` — recorded outcomes (a real run's ``--record`` file, or the demo's authored
  expectations); no toolchain needed, and a missing entry is an error, never a guess.

Exit codes: 0 done (``eval``: the evaluation ran — scores are results, not failures; ``check``:
every set complete; ``draft``: the draft was kept), 3 incomplete (no toolchain for ``eval``; an
incomplete set; a rejected draft), 4 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from fyan import arguments
from fyan.sandbox import safefile
from fyan.command_result import CommandResult
from fyan.config import LeanSection, StageAgent
from fyan.errors import ExitCode, InputError
from fyan.lean.inspector import ensure_inspector
from fyan.lean.compile import LeanSetupError, resolve
from fyan.lean.toolchain import check_pin, discover
from fyan.shadow.compiler import (
    Compiler,
    LeanCompiler,
    RecordedCompiler,
    RecordingCompiler,
    ToolchainUnavailable,
)

DEFAULT_TIMEOUT_S = 300.0


# -- shared options --------------------------------------------------------------------------

def _compile_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("compiling (real Lean, or recorded outcomes)")
    g.add_argument("--workspace", help="Lake package whose dependencies the files may import (e.g. one requiring "
                   "Mathlib); each file is compiled with plain `lean` and that package's search path")
    g.add_argument("--replay", help="replay recorded compile outcomes from this JSON-lines file instead of running Lean")
    g.add_argument("--record", help="with --workspace: also append every compile outcome to this file")
    g.add_argument("--lake", help="path to `lake` (default: $FYAN_LEAN__LAKE, PATH, ~/.elan/bin)")
    g.add_argument("--timeout", type=arguments.seconds, default=DEFAULT_TIMEOUT_S, help="seconds per compile (default %(default)s)")
    g.add_argument("--memory-mb", type=arguments.at_least(1, "--memory-mb"), default=LeanSection().memory_limit_mb, help="MiB per compile (default %(default)s)")
    g.add_argument("--sandbox", choices=("require", "auto", "off"), default="require",
                   help="bubblewrap sandbox for the submissions' Lean (default %(default)s; off runs them unconfined)")
    g.add_argument("--sandbox-readable", action="append", default=[], metavar="DIR",
                   help="a folder the confined Lean may read although the sandbox hides it (your home and /tmp "
                   "are hidden), e.g. a toolchain installed there; repeatable (default: $FYAN_LEAN__SANDBOX_READABLE, "
                   "a JSON list, as [lean] sandbox_readable)")


def _model_args(p: argparse.ArgumentParser, purpose: str) -> None:
    g = p.add_argument_group(f"model ({purpose})")
    g.add_argument("--provider", choices=("replay", "record", "anthropic", "openai", "openai-compatible"),
                   help="model provider (API keys from the environment)")
    g.add_argument("--model", default="example-authored", help="model name")
    g.add_argument("--cassette", help="record/replay cassette (JSON lines) for --provider replay|record")
    g.add_argument("--record-provider", choices=("anthropic", "openai", "openai-compatible"))
    g.add_argument("--base-url", help="endpoint of an OpenAI-compatible server")
    g.add_argument("--max-tokens", type=arguments.at_least(1, "--max-tokens"), default=8192, help="reply budget, tokens")
    g.add_argument("--form-repairs", type=arguments.at_least(0, "--form-repairs"), default=2, help="repair turns for a reply that does not validate")


def _env_list(name: str) -> list[str]:
    """A list setting given in the environment as a JSON list (as Fyan's configuration reads
    ``FYAN_<SECTION>__<KEY>``). Raises ``InputError`` when it is not one."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{name} must be a JSON list of folders, e.g. '[\"/opt/lean\"]' (got {raw!r})")
    return value


def _compiler(args: argparse.Namespace) -> tuple[Compiler | None, str]:
    """The compiler the options ask for, or (None, why) when there is no toolchain."""
    if args.replay:
        if args.workspace or args.record:
            raise InputError("--replay cannot be combined with --workspace or --record")
        return RecordedCompiler(Path(args.replay)), ""
    lean = LeanSection(lake=args.lake or os.environ.get("FYAN_LEAN__LAKE", ""), sandbox=args.sandbox,
                       memory_limit_mb=args.memory_mb, build_timeout=max(args.timeout, 60.0),
                       inspector_dir=os.environ.get("FYAN_LEAN__INSPECTOR_DIR", ""),
                       sandbox_readable=args.sandbox_readable or _env_list("FYAN_LEAN__SANDBOX_READABLE"))
    found = discover(lean)
    if found.toolchain is None:
        return None, found.problem or "Lean toolchain not found"
    if not args.workspace:
        raise InputError("compiling with Lean needs --workspace DIR (a Lake package; for minif2f one requiring Mathlib)",
                         hint="create one with `lake new shadowws math && cd shadowws && lake exe cache get`, "
                         "or replay recorded outcomes with --replay FILE")
    ws = Path(args.workspace)
    if not any((ws / n).is_file() for n in ("lakefile.toml", "lakefile.lean")):
        raise InputError(f"{ws}: not a Lake package (no lakefile.toml or lakefile.lean)")
    pin = check_pin(found.toolchain, ws)
    if not pin.ok:
        return None, pin.reason
    inspector, why = ensure_inspector(found.toolchain, pin.pin or "", lean)
    if inspector is None:
        return None, f"no trusted inspector: {why}"
    try:
        setup = resolve(found.toolchain, ws, lean)
    except LeanSetupError as e:
        return None, str(e)
    compiler: Compiler = LeanCompiler(found.toolchain, setup, ws, lean, timeout_s=args.timeout, inspector=inspector)
    if args.record:
        compiler = RecordingCompiler(compiler, Path(args.record))
    return compiler, ""


def _caller(args: argparse.Namespace, stage: str, log_dir: Path | None):
    from fyan.agents.providers.factory import build_provider
    from fyan.agents.shadow import ModelCaller

    agent = StageAgent(provider=args.provider, model=args.model, base_url=args.base_url, max_tokens=args.max_tokens,
                       record_provider=args.record_provider)
    provider = build_provider(agent, Path(args.cassette) if args.cassette else None)
    return ModelCaller(provider, agent, stage=stage, form_repairs=args.form_repairs, log_dir=log_dir)


def _table(title: str, columns: list[str], rows: list[list[str]]) -> str:
    from fyan.terminal import table_text

    return table_text(title, columns, rows, width=140)  # problem and file names printed literally


# -- eval ------------------------------------------------------------------------------------

def cmd_eval(args: argparse.Namespace) -> CommandResult:
    from fyan.shadow.evaluate import DEFAULT_ALLOWED_AXIOMS, run_eval
    from fyan.shadow.shadowset import load_shadow_sets

    shadows = Path(args.shadows)
    sets = load_shadow_sets(shadows)  # bad input fails before anything runs
    compiler, why = _compiler(args)
    if compiler is None:
        raise ToolchainUnavailable(f"cannot evaluate: {why}",
                                   hint="install Lean (README, 'Installing Lean'; docs/lean.md), or replay recorded outcomes with --replay FILE")
    out = Path(args.out)
    adapter = None
    if args.adapter:
        if not args.provider:
            raise InputError("--adapter needs a model: --provider ... --model ...")
        from fyan.agents.shadow_adapter import model_adapter

        adapter = model_adapter(_caller(args, "shadow_adapter", out / ".adapter-calls"))
    try:
        result = run_eval(sets, shadows, Path(args.submissions), out, compiler, jobs=args.jobs,
                          allow_sorry_proofs=args.allow_sorry_proofs,
                          allowed_axioms=tuple(args.allow_axiom or DEFAULT_ALLOWED_AXIOMS), adapter=adapter)
    finally:
        compiler.close()
    s = result.summary
    rows = []
    for r in result.reports:
        sc = r.scores
        rule = r.adaptation.target.rule if r.adaptation else "-"
        if r.adaptation and r.adaptation.method != "rules":
            rule += " + MODEL ADAPTER"
        rows.append([r.problem, r.submission, str(sc.compile), f"{sc.forward_passed}/{sc.forward_total}",
                     str(sc.backward), str(sc.sa_pass), sc.sa_pass_soft_exact, rule or "-",
                     (r.compile.reason if not sc.compile else next(
                         (c.reason for c in [*r.forward, r.backward] if c is not None and not c.passed), ""))[:70]])
    lines = [
        _table(f"SA-Pass: {s.submissions} submission(s), {len(sets)} shadow set(s)",
               ["problem", "submission", "compile", "forward", "backward", "SA-Pass", "soft", "name rule", "first failure"],
               rows),
        "",
        _table("summary", ["submissions", "compile rate", "SA-Pass", "SA-Pass_soft", "forward-all rate", "backward rate"],
               [[str(s.submissions), f"{s.compile_rate:.3f}", f"{s.sa_pass:.3f}", f"{s.sa_pass_soft:.3f}",
                 f"{s.forward_all_rate:.3f}", f"{s.backward_rate:.3f}"]]),
        f"compile results: {result.compiler}",
    ]
    if result.missing:
        lines.append(f"no submission (scored 0): {', '.join(result.missing)}")
    if result.skipped:
        lines.append(f"skipped (no shadow set): {', '.join(result.skipped)}")
    if result.model_adapted:
        lines.append(f"{result.model_adapted} submission(s) needed a MODEL-DRAFTED adapter (see their reports)")
    lines.append(f"reports: {out}/<problem>.json, {out}/summary.json; assembled files: {out}/files/")
    payload = result.model_dump(mode="json", exclude={"reports"})
    payload["out"] = str(out)
    payload["per_submission"] = [{"problem": r.problem, "submission": r.submission, **r.scores.model_dump(mode="json")}
                                 for r in result.reports]
    return CommandResult(ExitCode.OK, payload, "\n".join(lines))


# -- check -----------------------------------------------------------------------------------

def cmd_check(args: argparse.Namespace) -> CommandResult:
    from fyan.shadow.complete import check_completeness
    from fyan.shadow.shadowset import load_shadow_sets

    sets = load_shadow_sets(Path(args.shadows))
    compiler, why = _compiler(args)
    try:
        results = [check_completeness(s, compiler, unavailable=why) for s in sets.values()]
    finally:
        if compiler is not None:
            compiler.close()
    lines = []
    for r in results:
        lines.append(f"{r.problem}: {'complete' if r.complete else 'NOT complete'}")
        lines += [f"  [{'ok  ' if c.passed else 'FAIL'}] {c.check}: {c.reason}" for c in r.checks]
    lines.append(f"compile results: {compiler.description if compiler else why}")
    ok = all(r.complete for r in results)
    payload = {"complete": ok, "compiler": compiler.description if compiler else None, "problem": why or None,
               "sets": [r.model_dump(mode="json") for r in results]}
    return CommandResult(ExitCode.OK if ok else ExitCode.INCOMPLETE, payload, "\n".join(lines))


# -- draft -----------------------------------------------------------------------------------

def _draft_input(args: argparse.Namespace):
    from fyan.agents.shadow_draft import DraftInput

    if args.jsonl:
        path = Path(args.jsonl)
        try:
            lines = safefile.read_text(path).splitlines()
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e}") from None
        for n, line in enumerate(lines, start=1):
            try:
                row = json.loads(line) if line.strip() else None
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{n}: not JSON: {e.msg}") from None
            if row and row.get("name") == args.problem:
                statement = row.get("formal_statement", "").rstrip()
                if not statement:
                    raise InputError(f"{path}:{n}: row {args.problem} has no formal_statement")
                reference = statement + ("\n  sorry\n" if statement.endswith(":= by") else "\n")
                return DraftInput(problem=args.problem, target=args.target or args.problem, header=row.get("header", ""),
                                  reference=reference, informal=row.get("informal_prefix", ""),
                                  source=f"{path.name} row {n} ({row.get('split', '?')})")
        raise InputError(f"{path}: no row named {args.problem}")
    if not args.reference or not args.target:
        raise InputError("give --jsonl FILE, or --reference FILE.lean with --target NAME")
    ref = Path(args.reference)
    try:
        text = safefile.read_text(ref)
    except OSError as e:
        raise InputError(f"{ref}: cannot read: {e}") from None
    return DraftInput(problem=args.problem, target=args.target, reference=text, source=str(ref))


def cmd_draft(args: argparse.Namespace) -> CommandResult:
    from fyan.agents.shadow_draft import draft, write_result

    if not args.provider:
        raise InputError("drafting needs a model: --provider replay|record|anthropic|openai|openai-compatible")
    base = _draft_input(args)
    out = Path(args.out)
    caller = _caller(args, "shadow_draft", out / ".drafts" / base.problem / "calls")
    compiler, why = _compiler(args)
    try:
        result = draft(base, caller, compiler, unavailable=why)
    finally:
        if compiler is not None:
            compiler.close()
    path = write_result(result, out)
    lines = [f"{base.problem}: draft {'KEPT' if result.kept else 'REJECTED'} ({len(result.shadow_set.shadows)} shadows)"]
    lines += [f"  [{'ok  ' if c.passed else 'FAIL'}] {c.check}: {c.reason}" for c in result.completeness.checks]
    lines.append(f"{'written' if result.kept else 'rejected draft kept for inspection'}: {path}")
    lines.append(f"model calls: {caller.usage['calls']}, tokens {caller.usage['tokens_in']} in / "
                 f"{caller.usage['tokens_out']} out, {caller.usage['cost_usd']:.4f} USD")
    payload = {**result.model_dump(mode="json"), "usage": caller.usage}
    return CommandResult(ExitCode.OK if result.kept else ExitCode.INCOMPLETE, payload, "\n".join(lines))


# -- wiring ----------------------------------------------------------------------------------

SUBCOMMANDS = {"eval": cmd_eval, "check": cmd_check, "draft": cmd_draft}


def cmd_shadow(args: argparse.Namespace) -> CommandResult:
    return SUBCOMMANDS[args.shadow_command](args)


def add_subcommands(p: argparse.ArgumentParser, epilog: str) -> None:
    """Add the subcommands of ``fyan shadow`` to its parser ``p`` (``epilog``: their exit codes)."""
    fmt = argparse.RawDescriptionHelpFormatter
    ss = p.add_subparsers(dest="shadow_command", required=True, metavar="SUBCOMMAND")

    e = ss.add_parser("eval", help="score submissions against shadow sets (compile, forward, backward, SA-Pass)",
                      epilog=epilog, formatter_class=fmt)
    e.add_argument("--shadows", required=True, help="folder of <problem>/shadowset.toml|json")
    e.add_argument("--submissions", required=True, help="folder of <problem>.lean or <problem>/<name>.lean")
    e.add_argument("--out", default="shadow-eval", help="report folder (default %(default)s)")
    e.add_argument("--jobs", type=arguments.at_least(1, "--jobs"), default=2, help="submissions evaluated at once (default %(default)s)")
    e.add_argument("--allow-sorry-proofs", action="store_true",
                   help="statement-only benchmarks: a sorry in the candidate's proof does not fail it (one in its "
                   "statement still does)")
    e.add_argument("--allow-axiom", action="append", help="axiom allowed in the candidate (repeatable; default "
                   "propext, Classical.choice, Quot.sound)")
    e.add_argument("--adapter", action="store_true",
                   help="fallback: let the model draft an adapter when rule-based name adaptation fails (recorded)")
    _compile_args(e)
    _model_args(e, "only with --adapter")
    e.add_argument("--json", action="store_true", help="print the summary as JSON")

    c = ss.add_parser("check", help="completeness check of shadow sets (every checker compiles against the reference)",
                      epilog=epilog, formatter_class=fmt)
    c.add_argument("--shadows", required=True, help="folder of <problem>/shadowset.toml|json")
    _compile_args(c)
    c.add_argument("--json", action="store_true", help="print JSON")

    d = ss.add_parser("draft", help="ask a model for shadows and checkers; keep them only if the set is complete",
                      epilog=epilog, formatter_class=fmt)
    d.add_argument("--problem", required=True, help="problem id (folder name of the shadow set)")
    d.add_argument("--jsonl", help="statement dataset (rows: name, formal_statement, header, informal_prefix), "
                   "e.g. minif2f.jsonl")
    d.add_argument("--reference", help="Lean file with the reference declaration (instead of --jsonl)")
    d.add_argument("--target", help="the reference theorem's name (default: the problem id)")
    d.add_argument("--out", required=True, help="folder of shadow sets to write <problem>/shadowset.json into")
    _model_args(d, "required")
    _compile_args(d)
    d.add_argument("--json", action="store_true", help="print JSON")
