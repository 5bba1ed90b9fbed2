"""The command registry (``fyan.commands``): one module per command, loaded only when it runs;
the same specs drive the command line and ``fyan.api``; every ``--json`` payload has a
published, versioned schema."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from fyan import api
from fyan.cli import build_parser, main
from fyan.command_result import CommandResult, ErrorPayload
from fyan.commands import COMMANDS, load
from tests.helpers import make_project

ROOT = Path(__file__).resolve().parents[1]
NO_MODEL = '[agents.default]\nprovider = "none"\n'


def test_the_shipped_schemas_are_the_payload_models():
    """``fyan/schemas/*.json`` is what the ``Payload`` models say (regenerate with
    ``scripts/payload_schemas.py``), one per command and one for errors, each versioned."""
    shipped = {p.stem for p in api.SCHEMA_DIR.glob("*.json")}
    assert shipped == {c.name for c in COMMANDS} | {"error"}
    for name in shipped:
        schema = api.payload_schema(name)
        assert schema == api.generated_schema(name), f"{name}: run scripts/payload_schemas.py"
        assert schema["version"] >= 1 and schema["$id"].endswith(f":{name}:v{schema['version']}")


def test_help_imports_no_command_module():
    code = ("import sys\nfrom fyan.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print([m for m in sys.modules if m.startswith('fyan.')])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    loaded = eval(proc.stdout.strip().splitlines()[-1])
    assert "usage: fyan" in proc.stdout
    assert [m for m in loaded if m.startswith("fyan.commands.") and m != "fyan.commands._shared"] == []
    assert not [m for m in loaded if m.split(".")[1] in ("orchestrator", "state", "lean", "gates", "agents")], loaded


def test_cli_is_wiring_only():
    assert len((ROOT / "fyan" / "cli.py").read_text().splitlines()) < 300


@pytest.mark.parametrize("spec", COMMANDS, ids=[c.name for c in COMMANDS])
def test_every_command_help_says_what_it_does_and_its_own_exit_codes(spec, capsys):
    with pytest.raises(SystemExit):
        main([spec.name, "--help"])
    text = capsys.readouterr().out
    module = load(spec.name)
    first = text.split("\n\n")[1]  # after the usage line: the description
    assert first.split()[:3] == module.DESCRIPTION.split()[:3]
    codes = text[text.index("exit codes:"):]
    for code in module.EXIT_CODES:
        assert f"  {code} " in codes
    assert len(codes.splitlines()) <= len(module.EXIT_CODES) + 3  # not the whole table of every command


def test_the_full_parser_has_every_command():
    import argparse

    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(sub.choices) == [c.name for c in COMMANDS]


def test_an_unknown_unit_exits_2_before_the_model_is_checked(tmp_path, capsys):
    """Without a model, ``fyan run --unit nope`` used to say "no model is configured" (exit 4);
    the unknown unit is the first thing wrong with the command line."""
    project = make_project(tmp_path / "p", extra_toml=NO_MODEL)
    for argv in (["run", str(project.paths.root), "--unit", "nope"],
                 ["resume", str(project.paths.root), "--unit", "nope"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "nope" in err and "model" not in err, err
    assert main(["run", str(project.paths.root)]) == 4  # with no unit asked for, the missing model


def test_api_runs_the_command_and_returns_its_result(tmp_path):
    project = make_project(tmp_path / "p")
    result = api.status(project.paths.root)
    assert isinstance(result, CommandResult) and result.code == 0
    assert load("status").Payload.model_validate(result.payload).project == "t"
    plan = api.resume(project.paths.root, dry_run=True)
    load("resume").Payload.model_validate(plan.payload)
    assert plan.payload["dry_run"] is True
    with pytest.raises(TypeError, match="no option 'colour'"):
        api.call("status", project=project.paths.root, colour=True)
    with pytest.raises(TypeError, match="needs unit"):
        api.call("gate", project=project.paths.root)
    assert set(api.__all__) <= set(dir(api))


def test_error_payloads_follow_their_schema(tmp_path, capsys):
    assert main(["status", str(tmp_path / "missing"), "--json"]) == 4
    ErrorPayload.model_validate(json.loads(capsys.readouterr().out))


def test_dashboard_json_prints_one_object_at_start_and_one_at_stop(tmp_path):
    project = make_project(tmp_path / "p")
    proc = subprocess.Popen([sys.executable, "-m", "fyan", "dashboard", str(project.paths.root), "--port", "0", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        start = json.loads(proc.stdout.readline())
        assert start["event"] == "serving" and start["url"].startswith("http://127.0.0.1:") and start["token"]
        deadline = time.monotonic() + 60
        while True:  # stop it once it answers (a signal before the server runs is an interrupt, exit 130)
            try:
                urllib.request.urlopen(start["url"], timeout=5).read()
                break
            except OSError:
                assert time.monotonic() < deadline, "the dashboard never answered"
                time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        rest = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    stop = json.loads(rest)  # the rest of stdout is one JSON object: Ctrl-C stops it, as it stops every command
    assert stop["signal"] == "SIGINT" and stop["exit_code"] == proc.returncode == 130, rest
