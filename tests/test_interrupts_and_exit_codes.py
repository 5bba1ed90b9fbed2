"""Interrupts and exit codes, and what the first commands say (no false notes).

* an interrupted first ingest (a real ``fyan run`` killed with SIGKILL while it ingests) is
  recorded as such, and ``status``, ``status --json``, ``resume --dry-run`` and the dashboard's
  data say so with what to do next; the next run ingests;
* the suite itself skips, with the reason, every test that needs bubblewrap where it is missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fyan.cli import main
from tests.conftest import ROOT
from tests.helpers import user_documentation


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def fyan_held_at(point: str, *argv: str) -> subprocess.Popen:
    """A real ``fyan`` process stopped at ``point`` (``fyan.state.faults``: it says so on stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FYAN_TEST_HOLD_AT": point}
    proc = subprocess.Popen([sys.executable, "-m", "fyan", *argv], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:  # ends when the process does
        seen.append(line)
        if line.startswith(f"fyan: test hold at {point} "):
            return proc
    proc.wait()
    pytest.fail(f"fyan {' '.join(argv)} never reached {point} (exit {proc.returncode}):\n{''.join(seen)}")


# -- an interrupted first ingest ----------------------------------------------------------------

def test_kill_9_during_the_first_ingest_is_recorded_and_every_view_says_so(example, no_lake, capsys):
    proc = fyan_held_at("ingest:started", "run", str(example))
    proc.kill()  # SIGKILL: no handler, no cleanup
    assert proc.wait() == -signal.SIGKILL
    proc.stderr.close()

    code, out, _ = cli(capsys, "status", str(example))
    assert code == 3, out  # not "0 and a title over an empty table"
    assert "the first ingest of source/" in out and "was interrupted" in out and f"pid {proc.pid}" in out
    assert "no unit was recorded" in out and f"Next: fyan run {example}" in out
    code, out, _ = cli(capsys, "status", str(example), "--json")
    state = json.loads(out)
    assert code == 3 and state["ingested"] is False and state["units"] == []
    assert state["ingest"]["state"] == "interrupted" and state["ingest"]["pid"] == proc.pid
    assert state["ingest"]["next"] == f"fyan run {example}"

    code, out, _ = cli(capsys, "resume", str(example), "--dry-run")
    assert code == 0 and "was interrupted" in out and "reads the source again" in out, out
    assert "nothing is ready" not in out
    code, out, _ = cli(capsys, "resume", str(example), "--dry-run", "--json")
    assert json.loads(out)["plan"]["ingest"]["state"] == "interrupted"

    code, out, _ = cli(capsys, "daemon", "status", str(example))
    assert code == 0 and "was interrupted" in out

    from starlette.testclient import TestClient

    from fyan.dashboard.server import build_app
    from fyan.project import Project

    client = TestClient(build_app(Project.open(example), "token"), base_url="http://127.0.0.1")
    data = client.get("/api/state").json()
    assert data["ingested"] is False and data["ingest"]["state"] == "interrupted"
    page = client.get("/").text
    assert "id=ingest-state class=interrupted" in page and "was interrupted" in page

    code, out, _ = cli(capsys, "run", str(example))  # the next run ingests, as if nothing had happened
    assert code == 3 and "Ingested source/" in out and "11 units" in out, out
    code, out, _ = cli(capsys, "status", str(example), "--json")
    state = json.loads(out)
    assert state["ingested"] is True and state["ingest"] == {"state": "ingested"} and len(state["units"]) == 11


def test_kill_9_during_fyan_init_leaves_no_project_and_the_next_init_tidies_up(tmp_path, capsys):
    from tests.conftest import EXAMPLE

    source = str(EXAMPLE / "source" / "TasteNumberTheory.tex")
    target = tmp_path / "paper"
    proc = fyan_held_at("ingest:started", "init", str(target), "--source", source)
    proc.kill()
    assert proc.wait() == -signal.SIGKILL
    proc.stderr.close()
    assert not target.exists()  # init builds the project beside it and moves it in place at the end
    [left] = tmp_path.glob(".paper.init-*")
    code, out, err = cli(capsys, "status", str(target))
    assert code == 4 and "no such folder" in err
    code, out, err = cli(capsys, "init", str(target), "--source", source)
    assert code == 0 and "11 units" in out, err
    assert not left.exists() and list(tmp_path.glob(".paper.init-*")) == []


def test_an_ingest_that_fails_on_bad_input_is_not_reported_as_interrupted(tmp_path, capsys):
    from fyan.errors import InputError
    from fyan.specifier.ingest import ingest
    from fyan.state.gateway import Gateway
    from tests.helpers import make_project

    # an unknown reference stops intake only with [intake] unknown_references = "error" (`--strict`)
    project = make_project(tmp_path / "p", "\\begin{theorem}\\label{a} see \\ref{nowhere}\\end{theorem}\n",
                           '[intake]\nunknown_references = "error"\n')
    root = project.paths.root
    gateway = Gateway(project)
    with pytest.raises(InputError):
        ingest(project, gateway)
    kinds = [e.kind for e in gateway.store.events(limit=10)]
    gateway.close()
    assert "ingest_started" in kinds and "ingest_abandoned" in kinds
    code, out, _ = cli(capsys, "status", str(root), "--json")
    assert code == 0 and json.loads(out)["ingest"]["state"] == "not_ingested"


def test_status_of_a_project_made_with_no_ingest_says_what_to_do(tmp_path, capsys):
    from tests.conftest import EXAMPLE

    code, _, _ = cli(capsys, "init", str(tmp_path / "p"), "--source", str(EXAMPLE / "source" / "TasteNumberTheory.tex"),
                     "--no-ingest")
    assert code == 0
    code, out, _ = cli(capsys, "status", str(tmp_path / "p"))
    assert code == 0 and "not ingested yet" in out and f"Next: fyan run {tmp_path / 'p'}" in out


# -- the suite on a machine without bubblewrap --------------------------------------------------

#: tests that run a command agent or model-written code confined (``sandbox = "require"``)
BWRAP_TESTS = [
    "tests/test_providers.py::test_command_agent_runs_in_the_workspace_and_returns_its_file_changes",
    "tests/test_providers.py::test_command_agent_is_killed_at_the_timeout",
    "tests/test_providers.py::test_command_agent_failure",
    "tests/test_stages.py::test_formalizer_command_agent_edits_the_workspace_file",
    "tests/test_sandbox.py::test_bwrap_that_cannot_create_namespaces_is_detected",  # a double: runs anyway
]


def test_without_bubblewrap_the_tests_that_need_it_skip_with_the_reason(tmp_path):
    """The README's test command on a machine without bubblewrap: a ``PATH`` whose folders hold
    everything but ``bwrap``, and ``tests/without_bwrap.py`` for the tests that set ``PATH``."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for folder in dict.fromkeys(os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin", "/bin"]):
        if not folder or not Path(folder).is_dir():
            continue
        for entry in Path(folder).iterdir():
            if entry.name != "bwrap" and not (bare / entry.name).exists():
                (bare / entry.name).symlink_to(entry)
    env = {**os.environ, "PATH": str(bare), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "-p", "tests.without_bwrap", *BWRAP_TESTS], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 4 and all("no usable bubblewrap here: bubblewrap (bwrap) is not installed" in line
                                     for line in skipped), proc.stdout
    assert "4 skipped" in proc.stdout and "1 passed" in proc.stdout


# -- exit codes: one code and one message for an interrupt; unknown unit ids are 2 --------------

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("point", ["run:starting", "ingest:started"], ids=["starting", "ingesting"])
def test_an_interrupt_exits_128_plus_the_signal_with_one_message(example, no_lake, sig, point):
    """Ctrl-C (SIGINT) and SIGTERM while ``fyan run`` starts up or ingests; during attempts:
    tests/test_stop_paths.py::test_every_stop_path_ends_the_running_agents (same code, same words)."""
    proc = fyan_held_at(point, "run", str(example))
    proc.send_signal(sig)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 128 + sig, err  # 130 and 143, as shells report them
    name = signal.Signals(sig).name
    assert err.splitlines() == [f"fyan: stopped by {name}",
                                "  hint: what was done is kept (attempts in progress are recorded as interrupted); "
                                f"`fyan resume {example}` continues"], err


def test_every_interrupt_code_is_in_the_help():
    from fyan.cli import EPILOG

    assert "130  interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM" in EPILOG
    guide = (ROOT / "docs" / "your-document.md").read_text(encoding="utf-8")
    assert "130 interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM" in " ".join(guide.split())


def _unit_id_commands() -> list[tuple[str, list[str]]]:
    """Every command of ``fyan`` that takes a unit id, found in the parser itself: (command, argv
    naming the unit ``nope``)."""
    import argparse

    from fyan.cli import build_parser

    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    found = []
    for name, parser in sub.choices.items():
        for action in parser._actions:
            if action.dest == "unit":
                argv = [name, "{dir}", "nope"] if not action.option_strings else [name, "{dir}", "--unit", "nope"]
                if name == "mcp":  # `fyan mcp prover DIR UNIT`: the mode comes first
                    argv = [name, "prover", "{dir}", "nope"]
                found.append((name, argv + (["--dry-run"] if name == "resume" else [])))
    return found


def test_unit_id_commands_are_found():
    assert {name for name, _ in _unit_id_commands()} == {"run", "resume", "gate", "verify", "audit", "status", "mcp"}


@pytest.mark.parametrize("ingested", [True, False], ids=["ingested", "not-ingested"])
def test_an_unknown_unit_id_exits_2_in_every_command(example, no_lake, capsys, ingested):
    if ingested:
        from fyan.agents.specify import model_specifier
        from fyan.project import Project
        from fyan.specifier.ingest import ingest
        from fyan.state.gateway import Gateway

        project = Project.open(example)
        gateway = Gateway(project)
        ingest(project, gateway, specifier=model_specifier(project, gateway))  # the example's replayed Specifier
        gateway.close()
    for name, argv in _unit_id_commands():
        code, out, err = cli(capsys, *(a.replace("{dir}", str(example)) for a in argv))
        assert code == 2, (name, out, err)  # what the help says of an unknown unit id
        assert "nope" in err and "fyan status" in err, (name, err)
        code, out, _ = cli(capsys, *(a.replace("{dir}", str(example)) for a in argv), "--json")
        assert code == 2 and json.loads(out)["exit_code"] == 2, (name, out)


# -- an OpenAI-compatible server that is not there -----------------------------------------------

def test_init_refuses_an_openai_compatible_url_where_nothing_listens(tmp_path, capsys):
    from tests.conftest import EXAMPLE
    from tests.helpers import ModelsEndpoint, refused_url

    url = refused_url()
    source = str(EXAMPLE / "source" / "TasteNumberTheory.tex")
    for extra in ([], ["--no-ingest"]):
        code, out, err = cli(capsys, "init", str(tmp_path / "p"), "--source", source, "--provider",
                             "openai-compatible", "--base-url", url, "--model", "m", *extra)
        assert code == 4, out + err  # a configuration error, said at once (not "Next: fyan run")
        assert f"nothing answers at --base-url {url}: {url}/models: " in err and "refused" in err.lower(), err
        assert "the project was not created" in err and not (tmp_path / "p").exists()
    with ModelsEndpoint() as server:
        code, out, err = cli(capsys, "init", str(tmp_path / "p"), "--source", source, "--provider",
                             "openai-compatible", "--base-url", server.url, "--model", "m")
    assert code == 0 and out.rstrip().endswith(f"Next: fyan run {tmp_path / 'p'}"), err


def test_run_refuses_an_openai_compatible_url_where_nothing_listens_and_starts_when_one_does(
        example, no_lake, capsys, monkeypatch):
    """Refused before anything runs; a server that was there at the start and then stops is an
    outage the run waits out (tests/test_outages.py: the daemon across refused connections)."""
    from fyan.agents.preflight import check_endpoints
    from fyan.project import Project
    from tests.helpers import ModelsEndpoint, refused_url

    url = refused_url()
    toml = (example / "fyan.toml").read_text()
    (example / "fyan.toml").write_text(toml.replace('provider = "replay"', f'provider = "openai-compatible"\n'
                                                                             f'base_url = "{url}"'))
    for argv in (["run", str(example)], ["resume", str(example)], ["run", str(example), "--json"]):
        code, out, err = cli(capsys, *argv)
        assert code == 4, (argv, out, err)
        said = json.loads(out)["error"] if "--json" in argv else err
        assert f'nothing answers at base_url = "{url}"' in said and "nothing was run" in said, said
        assert not (example / ".fyan" / "state.db").exists()  # nothing ingested, nothing run
    with ModelsEndpoint() as server:  # there at the start: the run goes on (the check passes)
        (example / "fyan.toml").write_text(toml.replace('provider = "replay"', f'provider = "openai-compatible"\n'
                                                                                 f'base_url = "{server.url}"'))
        check_endpoints(Project.open(example), ingested=False)


# -- wording: say what is true ------------------------------------------------------------------

def test_doctor_says_a_project_has_no_model_instead_of_naming_one(tmp_path, capsys):
    from tests.helpers import make_project

    project = make_project(tmp_path / "p", extra_toml='[agents.default]\nprovider = "none"\n')
    code = main(["doctor", str(project.paths.root)])
    out = capsys.readouterr().out
    assert code == 3 and '[FAIL] no model configured (provider = "none") for reason, plan' in out
    assert "example-authored" not in out and "provider none" not in out
    main(["doctor", str(project.paths.root), "--json"])
    [p] = json.loads(capsys.readouterr().out)["providers"]
    assert p["provider"] == "none" and p["model"] is None


@pytest.mark.parametrize("setting", ["off", "auto", "require"])
def test_doctor_never_advises_the_sandbox_setting_already_made(tmp_path, capsys, monkeypatch, setting):
    from tests.helpers import make_project

    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))  # a machine without bubblewrap
    project = make_project(tmp_path / "p", extra_toml=f'[lean]\nsandbox = "{setting}"\n')
    main(["doctor", str(project.paths.root), "--json"])
    sandbox = json.loads(capsys.readouterr().out)["sandbox"]
    assert sandbox["available"] is False and sandbox["detail"].startswith("bubblewrap (bwrap) is not installed")
    advice = 'set [lean] sandbox = "off"'
    assert (advice in sandbox["detail"]) is (setting == "require"), sandbox["detail"]
    if setting != "require":
        assert "UNCONFINED" in sandbox["detail"] and "install bubblewrap" in sandbox["detail"]


TXT_HEADINGS = "Theorem 1. Every even number is even.\nProof. Trivial.\n\nLemma 2. By Theorem 1, two is even.\n"


@pytest.mark.parametrize("name", ["notes.txt", "notes", "notes.text"])
def test_a_file_whose_name_says_no_format_is_said_to_be_read_as_tex(tmp_path, capsys, name):
    source = tmp_path / name
    source.write_text(TXT_HEADINGS)
    code, out, err = cli(capsys, "init", str(tmp_path / "p"), "--source", str(source))
    assert code == 0, err
    assert f"{name} is read as TeX (" in err and "rename it .md to read it as Markdown" in err  # a warning
    source.write_text("Some notes \\emph{about} numbers.\n\nRemark 1. Every even number is even.\n")
    code, out, err = cli(capsys, "init", str(tmp_path / "q"), "--source", str(source))
    assert code == 4 and "no statement of a unit kind" in err and f"hint: {name} is read as TeX (" in err, err
    assert "environment names" not in err
    md = tmp_path / "notes.md"
    md.write_text(TXT_HEADINGS)
    code, out, err = cli(capsys, "init", str(tmp_path / "r"), "--source", str(md))
    assert code == 0 and "read as" not in err  # a name that says its format: nothing to say


def test_a_project_path_that_is_a_file_is_called_a_file(tmp_path, capsys):
    from tests.conftest import EXAMPLE

    afile = tmp_path / "paper"
    afile.write_text("x")
    code, out, err = cli(capsys, "init", str(afile), "--source", str(EXAMPLE / "source" / "TasteNumberTheory.tex"))
    assert code == 4 and f"{afile}: is a file, not a folder" in err and "not empty" not in err
    for argv in (["status", str(afile)], ["run", str(afile)], ["gate", str(afile), "u"], ["doctor", str(afile)]):
        code, out, err = cli(capsys, *argv)
        assert code == 4 and f"{afile}: is a file, not a project folder" in err and "no such folder" not in err, argv


def test_a_busy_dashboard_port_is_said_not_silently_changed(example, no_lake):
    import socket

    from fyan.dashboard.server import make_server
    from fyan.daemon import Daemon, DaemonOptions
    from fyan.project import Project

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        server, sock, url, _ = make_server(Project.open(example), port)
        moved = sock.getsockname()[1]
        sock.close()
        assert url == f"http://127.0.0.1:{moved}/" and moved != port
        assert server.port_note.startswith(f"port {port} is not free on 127.0.0.1")
        assert f"serving on port {moved} instead" in server.port_note
        daemon = Daemon(example, DaemonOptions(dashboard=True, dashboard_port=port))  # a run with its dashboard
        daemon.serve()
        moved = daemon.dashboard_url.rsplit(":", 1)[1].strip("/")
        assert daemon.dashboard_note.startswith(f"port {port} is not free") and f"on port {moved} instead" in \
            daemon.dashboard_note
        assert any(f"dashboard: port {port} is not free" in n for n in daemon.notes)
    finally:
        busy.close()


def test_the_documentation_names_the_models_the_program_names():
    """Every model name in Fyan's own texts (``init --help``, the fyan.toml of a project without
    a model, hints) is the one the README or the documentation site (docs/) uses, and priced in config/pricing.toml."""
    import re
    import tomllib

    pattern = re.compile(r"\b(?:claude|gpt|qwen)[\w.-]*\d[\w.-]*\b")
    program = {m for path in (ROOT / "fyan").rglob("*.py") for m in pattern.findall(path.read_text(encoding="utf-8"))}
    documented = set(pattern.findall(user_documentation(ROOT)))
    assert program == documented, (program, documented)
    priced = set(tomllib.loads((ROOT / "config" / "pricing.toml").read_text(encoding="utf-8"))["models"])
    assert {m for m in program if not m.startswith("qwen")} <= priced  # a local model costs nothing


def test_the_guide_gives_the_pfr_figures_fyan_init_prints(tmp_path, capsys):
    from tests.conftest import ROOT as root

    pfr = root / "tests" / "fixtures" / "corpus" / "blueprints" / "pfr.content.flat.tex"
    code, out, _ = cli(capsys, "init", str(tmp_path / "pfr"), "--source", str(pfr), "--json")
    report = json.loads(out)
    assert code == 0 and report["units"] == 218
    line = f"`fyan init` prints {report['edges']} dependency edges between {report['pairs']} pairs of units"
    assert line in " ".join((root / "docs" / "daemon.md").read_text(encoding="utf-8").split()), line
    code, out, _ = cli(capsys, "status", str(tmp_path / "pfr"), "--json")
    assert sum(len(u["depends_on"]) for u in json.loads(out)["units"]) == report["pairs"]  # the graph's arrows
