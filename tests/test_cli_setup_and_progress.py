"""Setting up and running a project from the command line: a runnable project from your own
document, one clear message when no model is set up, no traceback for any mistake, literal text,
progress, status that tells the truth, and pasteable paths and hints.

Everything runs the real ``fyan`` command line (``main``, or the installed module in a
subprocess where a terminal pipe matters). No model is called: the runs stop before any
attempt (that is what is tested), or use the example's replayed responses.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from fyan.agents.providers.breaker import Outage
from fyan.cli import main
from fyan.orchestrator.live import LiveState
from fyan.progress import RunProgress, StartupProgress
from fyan.state.gateway import CheckOutcome, Gateway
from fyan.state.models import Stage
from fyan.state.store import Store
from fyan.terminal import table_text
from tests.conftest import CORPUS, EXAMPLE, ROOT
from tests.helpers import CHAIN_TEX, ModelsEndpoint, make_project

SOURCE = CORPUS / "notes" / "ernst_ibl_intro_to_proof" / "TasteNumberTheory.tex"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def no_runs(project_dir: Path) -> bool:
    db = project_dir / ".fyan" / "state.db"
    return not db.exists() or Store(db).runs() == []


# -- fyan init makes a runnable project ---------------------------------------------------------

@pytest.mark.parametrize("argv,agent", [
    (["--provider", "anthropic", "--model", "claude-opus-4-1"], {"provider": "anthropic", "model": "claude-opus-4-1"}),
    (["--provider", "openai", "--model", "gpt-5"], {"provider": "openai", "model": "gpt-5"}),
    (["--provider", "openai-compatible", "--model", "qwen2.5-coder", "--base-url", "http://localhost:8000/v1"],
     {"provider": "openai-compatible", "model": "qwen2.5-coder", "base_url": "http://localhost:8000/v1"}),
    (["--provider", "command", "--command", "my-agent --print 'two words'"],
     {"provider": "command", "command": ["my-agent", "--print", "two words"]}),
])
def test_init_writes_the_model_it_is_given(tmp_path, capsys, monkeypatch, argv, agent):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    target = tmp_path / "my paper"
    with ModelsEndpoint() as server:  # init checks that an OpenAI-compatible server is there
        argv = [server.url if a == "http://localhost:8000/v1" else a for a in argv]
        agent = {k: server.url if v == "http://localhost:8000/v1" else v for k, v in agent.items()}
        code, out, err = run_cli(capsys, "init", str(target), "--source", str(SOURCE), *argv)
    assert code == 0, err
    config = tomllib.loads((target / "fyan.toml").read_text())
    assert {k: config["agents"]["default"][k] for k in agent} == agent
    if agent["provider"] in ("anthropic", "openai"):
        var = f"{agent['provider'].upper()}_API_KEY"
        assert f"{var} is not set in this shell: export it, then: fyan run '{target}'" in out
        assert "API_KEY" not in (target / "fyan.toml").read_text().replace(f"from {var} in the environment", "")
    elif agent["provider"] == "openai-compatible":
        assert out.rstrip().endswith(f"Next: fyan run '{target}'")  # a path with a space, quoted


@pytest.mark.parametrize("argv,message", [
    (["--provider", "anthropic"], "--provider anthropic needs --model"),
    (["--provider", "openai-compatible", "--model", "m"], "--provider openai-compatible needs --base-url"),
    (["--provider", "command"], "--provider command needs --command"),
    (["--model", "gpt-5"], "--model, --base-url and --command go with --provider"),
    (["--provider", "anthropic", "--model", "m", "--base-url", "http://x"], "--base-url is for --provider openai-compatible"),
    (["--provider", "command", "--command", "agent 'unclosed"], "--command: No closing quotation"),
])
def test_init_refuses_a_model_set_up_that_cannot_work(tmp_path, capsys, argv, message):
    code, out, err = run_cli(capsys, "init", str(tmp_path / "p"), "--source", str(SOURCE), *argv)
    assert code == 2 and message in err and not (tmp_path / "p").exists()


def test_a_project_without_a_model_stops_before_any_attempt_with_one_message(tmp_path, capsys):
    target = tmp_path / "p"
    code, out, err = run_cli(capsys, "init", str(target), "--source", str(SOURCE))
    assert code == 0 and "No model is configured yet" in out and 'provider = "none"' in (target / "fyan.toml").read_text()
    code, out, err = run_cli(capsys, "run", str(target))
    assert code == 4 and out == ""
    assert err.count("\n") == 2 and "no model is configured" in err and "nothing was run" in err
    assert 'provider = "anthropic"' in err  # says what to set, and how
    assert no_runs(target)
    code, out, err = run_cli(capsys, "run", str(target), "--json")
    assert code == 4 and json.loads(out)["exit_code"] == 4 and err == ""
    code, out, err = run_cli(capsys, "daemon", "start", str(target))  # the same answer, no daemon started
    assert code == 4 and "no model is configured" in err and not (target / ".fyan" / "daemon.log").exists()


def test_a_missing_key_or_program_stops_before_any_attempt(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    target = tmp_path / "p"
    assert run_cli(capsys, "init", str(target), "--source", str(SOURCE), "--provider", "anthropic",
                   "--model", "claude-opus-4-1")[0] == 0
    code, out, err = run_cli(capsys, "run", str(target))
    assert code == 4 and "ANTHROPIC_API_KEY is not set" in err and "nothing was run" in err and no_runs(target)
    target2 = tmp_path / "q"
    assert run_cli(capsys, "init", str(target2), "--source", str(SOURCE), "--provider", "command",
                   "--command", "fyan-no-such-agent --print")[0] == 0
    code, out, err = run_cli(capsys, "run", str(target2))
    assert code == 4 and "'fyan-no-such-agent' is not on PATH" in err and no_runs(target2)


def test_a_missing_or_malformed_cassette_is_bad_input_before_any_attempt(example, capsys):
    cassette = example / "replay" / "cassette.jsonl"
    lines = cassette.read_text().splitlines()
    cassette.unlink()
    code, out, err = run_cli(capsys, "run", str(example))
    assert code == 4 and f"the replay cassette {cassette} does not exist" in err and no_runs(example)
    bad = json.loads(lines[2])
    del bad["key"]
    cassette.write_text("\n".join([lines[0], lines[1], json.dumps(bad), "{not json"]) + "\n")
    code, out, err = run_cli(capsys, "run", str(example))
    assert code == 4 and f"{cassette}:3: not a valid cassette entry: field 'key' is missing" in err
    assert "validation error for CassetteEntry" not in err and no_runs(example)
    cassette.write_text("\n".join([lines[0], "{not json"]) + "\n")
    code, out, err = run_cli(capsys, "run", str(example))
    assert code == 4 and f"{cassette}:2: not a valid cassette entry: not JSON" in err


# -- no traceback reaches a user ------------------------------------------------------------------

def test_init_creates_missing_parents_and_removes_them_when_it_fails(tmp_path, capsys):
    target = tmp_path / "a" / "b" / "proj"
    code, out, err = run_cli(capsys, "init", str(target), "--source", str(SOURCE))
    assert code == 0 and (target / "fyan.toml").is_file()
    bad = tmp_path / "empty.tex"
    bad.write_text("\\begin{remark}Nothing here is a unit.\\end{remark}\n")
    code, out, err = run_cli(capsys, "init", str(tmp_path / "x" / "y" / "proj"), "--source", str(bad))
    assert code == 4 and not (tmp_path / "x").exists()  # nothing left behind
    # the hint does not send the user to a fyan.toml that was never created
    assert "--no-ingest" in err and "the project was not created" in err and "Traceback" not in err
    code, out, err = run_cli(capsys, "init", str(tmp_path / "x" / "y" / "proj"), "--source", str(bad), "--json")
    assert code == 4 and json.loads(out)["exit_code"] == 4 and "Reading" not in err


def test_an_internal_error_is_one_line_and_a_crash_report(tmp_path, capsys, monkeypatch, example):
    import fyan.commands.status

    secret = "the document's own text: Let n be an integer"

    def broken(args):
        local_text = secret  # a local variable a rich traceback would print  # noqa: F841
        raise KeyError(secret)

    monkeypatch.setattr(fyan.commands.status, "run", broken)
    code, out, err = run_cli(capsys, "status", str(example))
    assert code == 1 and out == "" and secret not in err and "Traceback" not in err
    assert err.splitlines()[0] == "fyan: error: internal error (KeyError); this is a bug in Fyan"
    report = Path(re.search(r"the details are in (\S+);", err).group(1))
    assert report.parent == example / ".fyan" / "logs" and "Traceback" in report.read_text()
    assert secret in report.read_text() and "local_text" not in report.read_text()  # no locals, even there
    code, out, err = run_cli(capsys, "status", str(example), "--json")
    payload = json.loads(out)  # stdout stays JSON
    assert code == 1 and payload["exit_code"] == 1 and Path(payload["log"]).is_file() and secret not in out


def test_a_closed_pipe_ends_quietly(example, capsys):
    assert main(["run", str(example), "--json"]) in (3, 0)
    capsys.readouterr()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for argv in (["status", str(example)], ["status", str(example), "--json"], ["--help"]):
        proc = subprocess.run(["bash", "-o", "pipefail", "-c",
                               f'"{sys.executable}" -m fyan {" ".join(argv)} | head -1'],
                              env=env, capture_output=True, text=True, timeout=60)
        assert proc.stderr == "" and len(proc.stdout.splitlines()) == 1, (argv, proc.stderr)


@pytest.mark.parametrize("argv", [
    ["run", "{p}", "--parallelism", "-1"], ["run", "{p}", "--parallelism", "0"], ["run", "{p}", "--parallelism", "two"],
    ["resume", "{p}", "--parallelism", "0"], ["daemon", "start", "{p}", "--parallelism", "-1"],
    ["daemon", "start", "{p}", "--port", "70000"], ["daemon", "stop", "{p}", "--timeout", "-5"],
    ["shadow", "eval", "--shadows", "s", "--submissions", "s", "--replay", "r", "--jobs", "0"],
])
def test_numbers_that_cannot_work_are_refused_on_the_command_line(tmp_path, capsys, argv):
    project = make_project(tmp_path / "p")
    with pytest.raises(SystemExit) as e:
        main([a.format(p=project.paths.root) for a in argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "must be" in err and "Traceback" not in err
    assert no_runs(project.paths.root)


# -- text is data, never markup ----------------------------------------------------------------

MARKUP = "set [lean] lake in fyan.toml; [bold]x[/bold] :smile: x ∈ [0, 1]"


def test_text_from_documents_models_and_tools_is_printed_literally(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # a wide terminal: the reason cell is not folded
    project = make_project(tmp_path / "p", tex=CHAIN_TEX)
    checks = {s: (lambda ctx: CheckOutcome(False, MARKUP)) for s in Stage}
    gw = Gateway(project, checks)
    from fyan.specifier.ingest import ingest

    ingest(project, gw)
    for _ in range(3):
        run = gw.begin("def-a", Stage.REASON, 3)
        (project.paths.root / run.attempt_dir / "proof.md").write_text("p")
        gw.finish(run)
    gw.close()
    code, out, err = run_cli(capsys, "status", str(project.paths.root))
    assert f"last: {MARKUP}" in out  # the unit's own failure, literally
    assert MARKUP in table_text("t", ["a"], [[MARKUP]], width=200)
    stream = io.StringIO()
    progress = RunProgress(enabled=True, stream=stream, tty=False)
    from fyan.orchestrator.engine import StepEvent

    progress(StepEvent("def-a", Stage.GATE, "failed", MARKUP + " " + "y" * 400), {})
    progress.close()
    assert MARKUP + " " + "y" * 400 in stream.getvalue()  # literal, and never cut


# -- progress you can see ----------------------------------------------------------------------

def test_a_run_that_is_not_on_a_terminal_prints_a_heartbeat(monkeypatch):
    now = time.time()
    stream = io.StringIO()
    outage = Outage("anthropic", since=now - 60, next_try=now + 40, failures=2, error="ConnectError")
    progress = RunProgress(enabled=True, stream=stream, tty=False, heartbeat_s=0.3)
    progress.live = lambda: LiveState(running=[("kl-div", "reason", now - 65), ("gibbs", "plan", now - 3)],
                                      counts={"complete": 3, "ready": 2, "running": 2}, outages=[outage],
                                      started=now - 125, waiting=2)
    time.sleep(1.2)
    progress.close()
    beats = [line for line in stream.getvalue().splitlines() if "running 2:" in line]
    assert len(beats) >= 2, stream.getvalue()
    assert re.search(r"running 2: kl-div \(reason 1:0\d\), gibbs \(plan 0:0\d\); 3/7 complete, 2 ready, 2 running; "
                     r"2 unit\(s\) wait for their provider; anthropic unavailable since \d\d:\d\d, next try in \d+ s; "
                     r"elapsed 2:0\d$", beats[0]), beats[0]
    assert "FYAN_HEARTBEAT_S" in (ROOT / "docs" / "your-document.md").read_text()


def test_an_idle_daemon_does_not_fill_its_log_with_heartbeats():
    stream = io.StringIO()
    progress = RunProgress(enabled=True, stream=stream, tty=False, heartbeat_s=0.2)
    progress.live = lambda: LiveState(counts={"complete": 3})
    time.sleep(0.8)
    progress.close()
    assert stream.getvalue() == ""


def test_init_shows_its_phases_when_they_take_a_while(tmp_path):
    stream = io.StringIO()
    p = StartupProgress(enabled=True, stream=stream, delay_s=0.1)
    p.phase("Reading quick.tex")
    p.phase("Reading big.pdf")
    time.sleep(0.4)
    p.phase("Finding theorem units and dependencies in 500 statements")
    time.sleep(0.4)
    p.done()
    assert stream.getvalue().splitlines() == ["Reading big.pdf ...",
                                              "Finding theorem units and dependencies in 500 statements ..."]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FYAN_HEARTBEAT_S": "0.001"}  # every phase "takes a while"
    proc = subprocess.run([sys.executable, "-m", "fyan", "init", str(tmp_path / "p"), "--source", str(SOURCE)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr.splitlines()[0] == f"Reading {SOURCE} ..."
    proc = subprocess.run([sys.executable, "-m", "fyan", "init", str(tmp_path / "q"), "--source", str(SOURCE)],
                          env={**env, "FYAN_HEARTBEAT_S": "30"}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == ""  # a quick init says nothing more


def test_piped_run_output_shows_each_attempt_as_it_starts(example):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(example.parent)}
    env.pop("FYAN_LEAN__LAKE", None)
    proc = subprocess.run([sys.executable, "-m", "fyan", "run", str(example)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(re.match(r"\d\d:\d\d:\d\d  reason definition-1 +started$", line) for line in lines)
    assert any(line.endswith("failed — Lean toolchain not found: install elan (curl https://elan.lean-lang.org/"
                             "elan-init.sh -sSf | sh) and run `elan default stable`, or set [lean] lake in fyan.toml")
               for line in lines)
    assert "Without a Lean toolchain this is the expected end" in proc.stdout


# -- status tells the truth; runs restricted to units --------------------------------------------

def test_a_restricted_run_leaves_the_other_units_as_they_were(example, no_lake, capsys):
    assert main(["run", str(example), "--json"]) == 3
    capsys.readouterr()
    before = {u["id"]: u["status"] for u in json.loads(run_cli(capsys, "status", str(example), "--json")[1])["units"]}
    assert set(before.values()) == {"failed", "waiting"}
    assert main(["run", str(example), "--unit", "definition-1", "--json"]) == 3
    capsys.readouterr()
    after = {u["id"]: u["status"] for u in json.loads(run_cli(capsys, "status", str(example), "--json")[1])["units"]}
    assert after == before  # def-divides did not flip to ready: no run covered it


def test_an_unknown_unit_is_refused_before_anything_is_ingested(example, capsys):
    code, out, err = run_cli(capsys, "run", str(example), "--unit", "no-such-unit")
    assert code == 2 and "unknown unit(s): no-such-unit; nothing was run" in err
    assert not (example / ".fyan" / "state.db").exists() and not (example / "units").exists()


def test_status_groups_blocked_units_by_cause_and_says_the_remedy_once(example, no_lake, capsys):
    assert main(["run", str(example), "--json"]) == 3
    capsys.readouterr()
    code, out, err = run_cli(capsys, "status", str(example))
    remedy = "install elan (curl https://elan.lean-lang.org/elan-init.sh -sSf | sh)"
    assert out.count(remedy) == 1  # once, not on every row
    assert "2 failed: Lean toolchain not found → " + remedy in out
    assert "definition-1, def-divides (gate); 9 unit(s) wait on them" in out
    assert "No Fyan run is working on taste-number-theory." in out


# -- smaller items: restricted runs, unknown units, remedies, pasteable paths --------------------------------------------------------------

def test_export_blueprint_says_where_leanblueprint_must_run(example, no_lake, capsys, tmp_path):
    assert main(["run", str(example), "--json"]) == 3
    capsys.readouterr()
    code, out, err = run_cli(capsys, "export", "blueprint", str(example))
    assert code == 0 and f"cd {example} && leanblueprint web" in out
    elsewhere = tmp_path / "some where"
    code, out, err = run_cli(capsys, "export", "blueprint", str(example), "--out", str(elsewhere))
    assert code == 0 and f"put '{elsewhere}' at <folder>/blueprint/src, then cd <folder> && leanblueprint web" in out
    code, out, err = run_cli(capsys, "export", "blueprint", str(example), "--out", str(tmp_path / "w" / "blueprint" / "src"))
    assert f"cd {tmp_path / 'w'} && leanblueprint web" in out


def test_every_command_fyan_prints_for_a_path_with_a_space_can_be_pasted(tmp_path, capsys, no_lake):
    target = tmp_path / "my paper"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces"))
    code, out, err = run_cli(capsys, "run", str(target))
    assert code == 3 and f"Details: fyan status '{target}'" in out
    code, out, err = run_cli(capsys, "gate", str(target), "no-such-unit")
    assert f"`fyan status '{target}'`" in err
    code, out, err = run_cli(capsys, "run", str(target), "--unit", "nope")
    assert f"`fyan status '{target}'`" in err
    fresh = tmp_path / "new paper"
    shutil.copytree(EXAMPLE, fresh, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces"))
    code, out, err = run_cli(capsys, "status", str(fresh))
    assert out.strip().endswith(f"Next: fyan run '{fresh}'")
    code, out, err = run_cli(capsys, "export", "blueprint", str(fresh))
    assert f"`fyan run '{fresh}'` first" in err


def test_files_the_example_refers_to_exist():
    text = (EXAMPLE / "fyan.toml").read_text()
    for rel in re.findall(r"(?<![\w/<>.-])[\w.-][\w/.-]*\.(?:md|jsonl|json|tex)\b", text):
        assert (EXAMPLE / rel).exists() or (EXAMPLE / "replay" / rel).exists(), rel


def test_command_modules_sit_below_the_cli_and_the_dashboard_does_not_import_the_daemon():
    code = ("import sys, fyan.commands._shadow, fyan.dashboard.server; "
            "assert 'fyan.cli' not in sys.modules, 'shadow.commands imports the CLI'; "
            "assert 'fyan.daemon' not in sys.modules, 'the dashboard imports the daemon'")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
