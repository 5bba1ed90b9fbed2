"""From a fresh clone, the README's commands work.

The repository is cloned (``git clone`` of this checkout's committed state) into a folder with
nothing beside it — no ``shared/`` — and the README's own commands run there, as a new user
types them:

* the two quick-start commands. Their set-up part (``python3 -m venv .venv && .venv/bin/pip
  install -q -e '.[test]'``) would only download again what this test's interpreter already has,
  so it is checked instead (the line is the documented one; the ``test`` extra, the ``fyan``
  entry point and the files the wheel includes exist in the clone) and ``.venv/bin/python`` /
  ``.venv/bin/fyan`` are small shims that run this interpreter on the *clone's* code. The rest
  of each command runs literally: the example run must end as the README shows; the test
  command is run on every test module's collection and on the tests that read the copied
  samples and corpus (the whole suite runs in CI anyway);
* every ``fyan init`` / ``fyan run`` line of the guide's "Using it on your own document"
  (``docs/your-document.md``) and "Sources" (``docs/intake.md``) pages that names a file in the
  repository, and the guide's script examples (``python scripts/...``).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import ModelsEndpoint, user_documentation

SETUP = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'"


def sh_blocks(readme: str, heading: str) -> list[str]:
    """The ```sh blocks of the README section that starts with ``heading``."""
    section = readme.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def page_blocks(clone: Path, page: str) -> list[str]:
    """Every ```sh block of a page of the documentation site (``docs/<page>``)."""
    return re.findall(r"```sh\n(.*?)```", (clone / "docs" / page).read_text(), re.S)


def commands(block: str) -> list[str]:
    """One command per line, comments dropped."""
    out = []
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout (or no git): nothing to clone")
    dest = tmp_path_factory.mktemp("fresh") / "fyan"
    subprocess.run(["git", "-c", "safe.directory=*", "clone", "--quiet", str(ROOT), str(dest)], check=True, timeout=300)
    assert not (dest.parent / "shared").exists() and not (dest / ".venv").exists()
    bin_dir = dest / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, run in (("python", f'"{sys.executable}"'), ("fyan", f'"{sys.executable}" -m fyan')):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nPYTHONPATH="{dest}" exec {run} "$@"\n')
        shim.chmod(0o755)
    return dest


def shell(clone: Path, command: str, tmp_path: Path, **env_extra: str) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": f"{clone / '.venv' / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "PYTHONPATH": str(clone), **env_extra}
    return subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=600)


def test_the_set_up_line_is_the_documented_one_and_can_install(clone):
    readme = (clone / "README.md").read_text()
    example, tests = (commands(b)[0] for b in sh_blocks(readme, "## Quick start"))
    assert example.startswith(SETUP + " && ") and tests.startswith(SETUP + " && ")
    project = tomllib.loads((clone / "pyproject.toml").read_text())
    assert "test" in project["project"]["optional-dependencies"]
    assert project["project"]["scripts"]["fyan"] == "fyan.cli:main"
    for src in project["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]:
        assert (clone / src).exists(), src  # the wheel's data files are in the clone
    assert (clone / "fyan" / "dashboard" / "static" / "vendor" / "cytoscape.min.js").is_file()


def test_the_example_runs_from_a_fresh_clone_and_ends_as_the_readme_says(clone, tmp_path):
    readme = (clone / "README.md").read_text()
    example = commands(sh_blocks(readme, "## Quick start")[0])[0][len(SETUP) + 4:]
    proc = shell(clone, example, tmp_path)  # no Lean toolchain on this PATH
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    shown = re.search(r"The\s+run says so once, with the remedy:\n\n```\n(.*?)```", readme, re.S).group(1).splitlines()
    out = proc.stdout.splitlines()
    timing = re.compile(r"\d+ stage attempts, [\d.]+s")
    [start] = [i for i, line in enumerate(out) if line.startswith(shown[0].split(":")[0] + ": ")]
    assert timing.sub("", out[start]) == timing.sub("", shown[0])
    assert out[start + 1:start + len(shown)] == shown[1:]  # the rest exactly as the README shows it
    assert "Traceback" not in proc.stderr


def test_the_test_command_finds_everything_it_needs_in_the_clone(clone, tmp_path):
    readme = (clone / "README.md").read_text()
    command = commands(sh_blocks(readme, "## Quick start")[1])[0][len(SETUP) + 4:]
    assert command == ".venv/bin/python -m pytest -q"
    proc = shell(clone, command + " --collect-only -p no:cacheprovider", tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"\d+ tests collected", proc.stdout)
    # the tests that read the copied Lean samples and corpus (they once needed a sibling shared/)
    proc = shell(clone, command + " -p no:cacheprovider tests/test_lean_adapter.py tests/test_audit_proofnet.py", tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_the_guide_commands_on_files_of_the_repository_work(clone, tmp_path):
    lines = [c for b in page_blocks(clone, "your-document.md") for c in commands(b)]
    inits = [c for c in lines if c.startswith("fyan init") and "tests/fixtures/" in c]
    assert len(inits) == 4  # one line per provider
    for n, line in enumerate(inits):
        argv = shlex.split(line)
        argv[2] = f"{tmp_path}/book-{n}"
        with ModelsEndpoint() as server:  # the line's OpenAI-compatible server, on a free port here
            argv = [server.url if a == "http://localhost:8000/v1" else a for a in argv]
            proc = shell(clone, shlex.join(argv), tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "Created project" in proc.stdout
    # the run stops before any attempt, with one message: no key in this environment
    proc = shell(clone, f"fyan run {tmp_path}/book-0", tmp_path)
    assert proc.returncode == 4 and "ANTHROPIC_API_KEY is not set" in proc.stderr and "nothing was run" in proc.stderr
    proc = shell(clone, f"fyan status {tmp_path}/book-0 | head -3", tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    pdf = [c for b in page_blocks(clone, "intake.md") for c in commands(b) if ".pdf" in c]
    argv = shlex.split(pdf[0])
    argv[2] = f"{tmp_path}/notes"
    proc = shell(clone, shlex.join(argv), tmp_path)
    assert proc.returncode == 0 and "from PDF source" in proc.stdout, proc.stderr
    scripts = [c for page in sorted((clone / "docs").glob("*.md")) for b in page_blocks(clone, page.name)
               for c in commands(b) if c.startswith("python scripts/dag_quality.py")]
    assert scripts and all("../" not in c for c in scripts)
    for c in scripts:
        proc = shell(clone, c.replace("python ", ".venv/bin/python ", 1), tmp_path)
        assert proc.returncode == 0 and "F1" in proc.stdout, proc.stderr[-2000:]


def test_no_readme_page_or_script_points_outside_the_repository(clone):
    readme = user_documentation(clone)  # the README and every page of docs/
    assert "../shared" not in readme and "/work/" not in readme
    for script in (clone / "scripts").glob("*.py"):
        text = script.read_text()
        assert "../shared" not in text and '"shared"' not in text and "/work/" not in text, script.name
    env_paths = re.findall(r"tests/fixtures/[\w/.-]+", readme)
    assert env_paths and all((clone / p.rstrip(".,)")).exists() for p in env_paths), env_paths
