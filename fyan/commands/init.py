"""``fyan init``: create a project folder from a source document, write its ``fyan.toml`` and split
the document into theorem units (unless ``--no-ingest``); with ``--lean-project`` adopt a Lake package."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from fyan import configfile
from fyan.adopt.package import LakePackage, read_package
from fyan.adopt.render import adoption_text
from fyan.adopt.run import AdoptionUnavailable, adopt
from fyan.agents.preflight import endpoint_refusal
from fyan.agents.specify import model_specifier
from fyan.command_result import CommandResult
from fyan.errors import ConfigError, ExitCode, FyanError, InputError, ProjectError, UsageError
from fyan.adopt.blueprint_facet import generate_blueprint
from fyan.intake import DEFAULT_MAX_FILE_MIB, read_source
from fyan.intake.catalogue import Catalogue, format_warnings
from fyan.intake.leanarchitect import GeneratedFilesMissing
from fyan.lean.mathlib import LibraryChoice, choose_library, init_note
from fyan.progress import StartupProgress
from fyan.project import Project
from fyan.resources import data_dir
from fyan.specifier.ingest import ingest
from fyan.specifier.report import ingest_details, intake_report
from fyan.state.gateway import Gateway
from fyan.terminal import quoted


DESCRIPTION = """Create a project from a source document (TeX with its \\input tree, PDF or Markdown): the
folder, its fyan.toml, and the theorem units with their dependency DAG (the intake report says what
was found). Nothing is created when the document cannot be read."""


EXIT_CODES = {
    4: "bad input: the source document, a model server that does not answer, a folder that is not empty",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="new project folder")
    p.add_argument("--source", required=True,
                   help="the document: main TeX file (its \\input tree is copied too), a PDF, or a Markdown file")
    p.add_argument("--name", help="project name (default: the folder name)")
    p.add_argument("--no-ingest", action="store_true",
                   help="only create the folder and fyan.toml; the first `fyan run` ingests (to configure a model "
                   "Specifier or providers first)")
    p.add_argument("--unknown-references", choices=["error", "warn"],
                   help="a reference to a label defined nowhere in the document: warn (the default; listed in the "
                   "intake report and in its unit's findings, as LaTeX prints ?? and goes on) or stop (error); "
                   "written to the project's fyan.toml ([intake] unknown_references)")
    p.add_argument("--cycles", choices=["error", "break"],
                   help="dependency cycles among the references: demote the weakest edge of each to a mention, with "
                   "a warning naming it (break, the default; a cycle of \\uses alone still stops) or stop and list "
                   "them all (error); written to fyan.toml ([intake] cycles)")
    p.add_argument("--strict", action="store_true",
                   help="refuse what LaTeX only warns about: unknown references and dependency cycles stop intake "
                   "(the same as --unknown-references error --cycles error)")
    p.add_argument("--tolerant", action="store_true",
                   help="malformed math in a statement (unbalanced $, $$, \\(, \\[, braces) or malformed environments "
                   "(\\begin{proof} closed by \\end{definition}, a proof never closed), in TeX or in Markdown: warn for "
                   "each with its file and line and read on instead of stopping (a statement never closed ends at "
                   "the next statement or proof); written to fyan.toml ([intake] tolerant)")
    g = p.add_argument_group(
        "model (written to [agents.default] of fyan.toml; without --provider the project has no model yet and "
        "`fyan run` says how to choose one)")
    g.add_argument("--provider", choices=["anthropic", "openai", "openai-compatible", "command"],
                   help="anthropic (ANTHROPIC_API_KEY), openai (OPENAI_API_KEY), openai-compatible (a vLLM, "
                   "llama.cpp or Ollama server: --base-url), or command (a coding-agent CLI: --command)")
    g.add_argument("--model", help="the model's name, e.g. " + ", ".join(f"{m} ({k})" for k, m in EXAMPLE_MODELS.items())
                   + "; needed with every provider but command")
    g.add_argument("--base-url", help="endpoint of an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    g.add_argument("--command", dest="agent_command", help='the coding-agent CLI, as you would type it, e.g. "my-agent --print"')
    p.add_argument("--lean-project", metavar="FOLDER",
                   help="an existing Lake package (a leanblueprint project's) to adopt: its declarations named by "
                   "\\lean{...} are looked up in its compiled environment by the trusted inspector; proved ones make "
                   "their units complete by adoption, ones with sorry become the statements to prove; its files are "
                   "never changed (written to [adopt] package)")
    p.add_argument("--mathlib", metavar="TAG",
                   help="the Mathlib release tag the project's Lake package requires (default: the default pair of "
                   "Fyan's table, fyan/lean/mathlib.py); the lean-toolchain that tag names is pinned with it")
    p.add_argument("--core", action="store_true",
                   help="a Lake package with no dependency (core Lean only), for documents that need no Mathlib")
    p.add_argument("--json", action="store_true", help="print a JSON result")


class Payload(BaseModel):
    """``fyan init --json``: the project and its model, then the intake report (``ingested`` is
    false with ``--no-ingest``) and, with ``--lean-project``, the adoption."""

    model_config = ConfigDict(extra="allow")
    project: str
    provider: str
    model: str | None
    ingested: bool | None = None
    statements: int | None = None
    adoption: dict[str, Any] | None = None
    library: dict[str, Any] | None = None


def header() -> list[str]:
    """The comment lines at the top of a new ``fyan.toml``: where every key is explained, as a file
    of this installation (``config/fyan.example.toml`` of Fyan's repository, shipped in the wheel
    under ``fyan/_data/config/``: ``fyan.resources``)."""
    lines = ["Fyan project configuration. Every key, its default and its meaning:"]
    try:
        lines.append(f"{data_dir('config') / 'fyan.example.toml'} (this installation's copy of")
        lines.append("config/fyan.example.toml in Fyan's repository).")
    except FileNotFoundError:
        lines.append("config/fyan.example.toml in Fyan's repository.")
    return lines


#: the comment lines of ``[agents.default]`` when no model is chosen (its one key: provider = "none")
NO_MODEL_COMMENT = [
    "No model is configured yet: `fyan run` stops before any attempt and says so. Choose one",
    "(or re-create the project with `fyan init --provider ...`; see `fyan init --help`):",
    '  provider = "anthropic"          model = "claude-opus-4-1"     (export ANTHROPIC_API_KEY=...)',
    '  provider = "openai"             model = "gpt-5"               (export OPENAI_API_KEY=...)',
    '  provider = "openai-compatible"  model = "..."  base_url = "http://localhost:8000/v1"',
    '  provider = "command"            command = ["my-coding-agent", "--print"]',
]


#: model names ``fyan init --help`` shows as examples (priced in config/pricing.toml)
EXAMPLE_MODELS = {"anthropic": "claude-opus-4-1", "openai": "gpt-5", "openai-compatible": "qwen2.5-coder"}


KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def _agents_section(args: argparse.Namespace) -> configfile.Section:
    """The ``[agents.default]`` section ``fyan init`` writes (module docstring of preflight)."""
    if args.provider is None:
        return ("agents.default", NO_MODEL_COMMENT, {"provider": "none"})
    comments = []
    if args.provider in KEY_VARS:
        comments.append(f"the API key comes from {KEY_VARS[args.provider]} in the environment, never from this file")
    values: dict[str, Any] = {"provider": args.provider, "model": args.model or args.provider}
    if args.base_url:
        values["base_url"] = args.base_url
    if args.agent_command:
        values["command"] = shlex.split(args.agent_command)
    return ("agents.default", comments, values)


def config_text(args: argparse.Namespace, name: str, source: str, library: LibraryChoice | None,
                package: LakePackage | None, *, source_origin: Path | None = None) -> str:
    """The ``fyan.toml`` of a new project (written as data: ``fyan.configfile``): ``[project]``,
    ``[intake]`` from the intake options (and ``source_origin``: the folder the source was copied
    from, when its includes reach above the main file's folder), ``[lean]`` (the library chosen, or the toolchain an
    adopted package pins), ``[adopt]``, ``[agents.default]``."""
    intake: dict[str, Any] = {}
    unknown = args.unknown_references or ("error" if args.strict else None)
    if unknown:
        intake["unknown_references"] = unknown
    cycles = args.cycles or ("error" if args.strict else None)
    if cycles:
        intake["cycles"] = cycles
    if args.tolerant:
        intake["tolerant"] = True
    if source_origin is not None:
        intake["source_origin"] = str(source_origin)
    lean: dict[str, Any] = {}
    adopt: dict[str, Any] = {}
    if library is not None:
        lean = library.values()
    if package is not None:  # the package's own pin: the project's Lake package must build with it
        lean = {"toolchain": package.pin}
        adopt = {"package": str(package.folder), "package_name": package.name}
    return configfile.document(header(), [
        ("project", [], {"name": name, "source": source}), ("intake", [], intake), ("lean", [], lean),
        ("adopt", [], adopt), _agents_section(args),
    ])


def _check_init_model_args(args: argparse.Namespace) -> None:
    """Raise ``UsageError`` (exit 2) for a provider set-up that cannot work."""
    p = args.provider
    if p is None and (args.model or args.base_url or args.agent_command):
        raise UsageError("--model, --base-url and --command go with --provider",
                         hint="e.g. fyan init DIR --source FILE --provider anthropic --model claude-opus-4-1")
    if args.base_url and p != "openai-compatible":
        raise UsageError("--base-url is for --provider openai-compatible")
    if args.agent_command and p != "command":
        raise UsageError("--command is for --provider command")
    if p in EXAMPLE_MODELS and not args.model:
        raise UsageError(f"--provider {p} needs --model (e.g. --model {EXAMPLE_MODELS[p]}"
                         + ("; the name the server serves" if p == "openai-compatible" else "") + ")")
    if p == "openai-compatible" and not args.base_url:
        raise UsageError("--provider openai-compatible needs --base-url (e.g. http://localhost:8000/v1)")
    if p == "command":
        if not args.agent_command:
            raise UsageError('--provider command needs --command "program --flag ..." (the coding agent CLI)')
        try:
            shlex.split(args.agent_command)
        except ValueError as e:
            raise UsageError(f"--command: {e}") from None


def _init_hint(hint: str | None) -> str | None:
    """An intake hint for ``fyan init``: no fyan.toml exists yet to edit."""
    if hint and "fyan.toml" in hint and "--unknown-references" not in hint:
        return (hint + "; the project was not created: create it with `fyan init ... --no-ingest`, "
                "edit its fyan.toml, then `fyan run` (or set FYAN_INTAKE__<KEY> in the environment)")
    return hint


def _make_parents(target: Path) -> list[Path]:
    """Create the missing folders above ``target``; returns them (deepest last). Raises
    ``ProjectError`` when one cannot be created."""
    missing = []
    parent = target.absolute().parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    missing.reverse()
    for folder in missing:
        try:
            folder.mkdir()
        except OSError as e:
            for made in reversed(missing):
                try:
                    made.rmdir()
                except OSError:
                    pass
            raise ProjectError(f"{folder}: cannot create the folder: {e.strerror or e}",
                               hint="choose a project folder you can write to") from None
    return missing


def _remove_abandoned_inits(target: Path) -> list[Path]:
    """Remove the folders ``fyan init`` of ``target`` builds the project in
    (``.<name>.init-<pid>-*`` beside it) that a killed init left: those whose process is gone.
    Returns them."""
    removed = []
    for folder in target.resolve().parent.glob(f".{target.name}.init-*-*"):
        pid = folder.name[len(f".{target.name}.init-"):].split("-", 1)[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists() or not folder.is_dir():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def run(args: argparse.Namespace) -> CommandResult:
    _check_init_model_args(args)
    if args.provider == "openai-compatible":  # a server that is not there: said now, not by a run that waits

        refused = endpoint_refusal(args.base_url)
        if refused:
            raise ConfigError(f"nothing answers at --base-url {args.base_url}: {refused}; the project was not created",
                              hint="start the model server (vLLM: `vllm serve <model>`; llama.cpp: `llama-server`; "
                                   "Ollama: `ollama serve`, base URL http://localhost:11434/v1) or correct --base-url, "
                                   "then run the same command again")
    library = None
    if not args.lean_project:  # an adopted package keeps its own Mathlib (it comes through its requires)
        try:
            library = choose_library(args.mathlib, args.core)
        except ValueError as e:
            raise UsageError(str(e)) from None
    package = None
    if args.lean_project:  # a folder that is no Lake package fails before anything is created

        package = read_package(args.lean_project)
    target = Path(args.dir)
    source = Path(args.source)
    if target.exists() and not target.is_dir():
        raise ProjectError(f"{target}: is a file, not a folder; a project is a folder",
                           hint="choose a new folder for the project (a path that does not exist yet)")
    if target.exists() and any(target.iterdir()):
        raise ProjectError(f"{target}: the folder exists and is not empty", hint="choose a new folder for the project")
    try:
        limit = float(os.environ.get("FYAN_INTAKE__MAX_FILE_MIB", DEFAULT_MAX_FILE_MIB))
    except ValueError:
        raise InputError("FYAN_INTAKE__MAX_FILE_MIB is not a number", hint="give a size in MiB, e.g. 64") from None
    progress = StartupProgress(enabled=not args.json)
    made: list[Path] = []
    try:
        progress.phase(f"Reading {source}")
        catalogue, copied_from = _read(source, limit, args, package, progress)  # fails before anything is created
        made = _make_parents(target)
        name = args.name or target.resolve().name
        _remove_abandoned_inits(target)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.init-{os.getpid()}-", dir=target.resolve().parent))
        try:
            for rel in catalogue.files:  # each file read, at its place below the copied folder
                src = copied_from / rel
                dest = tmp / "source" / rel
                if ".." in Path(rel).parts or Path(rel).is_absolute():
                    raise InputError(f"{rel}: included from outside {copied_from}",
                                     hint="give the main file at the root of the source tree")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
            origin = copied_from if copied_from != source.resolve().parent else None  # includes reach above the main file's folder
            (tmp / "fyan.toml").write_text(config_text(args, name, f"source/{catalogue.main_file}", library, package,
                                                       source_origin=origin), encoding="utf-8")
            report = None
            if not args.no_ingest:
                progress.phase(f"Finding theorem units and dependencies in {len(catalogue.statements)} statements")
                project = Project.open(tmp)
                gateway = Gateway(project)
                try:  # the source as read above, now copied
                    report = ingest(project, gateway, catalogue, specifier=model_specifier(project, gateway))
                finally:
                    gateway.close()
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a project folder is not
            if target.exists():
                target.rmdir()
            os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    except FyanError as e:
        e.hint = _init_hint(e.hint)
        raise
    except OSError as e:
        raise ProjectError(f"{e.filename or target}: {e.strerror or e}", hint="nothing was created") from None
    finally:
        progress.done()
        if not target.exists():
            for folder in reversed(made):  # the folders made for a project that was not created
                try:
                    folder.rmdir()
                except OSError:
                    pass
    adoption = _init_adopt(target) if package is not None and report is not None else None
    if package is not None and report is None:  # --no-ingest: nothing to adopt for yet
        adoption = ({"adopted": False, "problem": "not ingested yet"},
                    f"Adoption of {package.folder} waits for the units: after the first `fyan run` ingests the "
                    f"source, run `fyan adopt {quoted(target)}` (before any attempt starts)")
    result = _init_result(args, target, catalogue, report)
    if library is not None:
        result.payload["library"] = {"mathlib": library.mathlib or None, "toolchain": library.toolchain}
        *head, last = result.text.rstrip("\n").split("\n")  # the next step stays the last line
        result.text = "\n".join([*head, init_note(library, quoted(target)), last])
    if adoption is not None:
        payload, text = adoption
        result.payload["adoption"] = payload
        result.text = result.text.rstrip("\n") + "\n" + text
    return result


def _read(source: Path, limit: float, args: argparse.Namespace, package, progress: StartupProgress
          ) -> tuple[Catalogue, Path]:
    """Read the document at ``source`` as LaTeX reads it, and the folder its files are copied from:
    the main file's folder, or, when its includes reach above it (a LeanArchitect blueprint's
    ``../../.lake/build/blueprint/…``), the nearest folder holding every file read (the document is
    then read again relative to it, so every provenance path is a path below the project's
    ``source/``). A LeanArchitect blueprint whose generated files are missing stops here (exit 4,
    naming the facets), unless ``--lean-project`` names the package they come from: Fyan then
    runs the facets there (``fyan.adopt.blueprint_facet``) and reads the result."""
    main_dir = source.resolve().parent
    try:
        catalogue = read_source(source, max_file_mib=limit, tolerant=args.tolerant)
    except GeneratedFilesMissing as e:
        wanted = e.package.resolve() if e.package is not None else None
        if package is None or (wanted is not None and wanted != package.folder.resolve()):
            if package is not None:
                e.hint = (f"the generated files come from {wanted}, not from --lean-project {package.folder}; "
                          + (e.hint or ""))
            raise
        progress.done()
        generate_blueprint(package.folder)
        progress.phase(f"Reading {source}")
        catalogue = read_source(source, max_file_mib=limit, tolerant=args.tolerant)
    outside = [rel for rel in catalogue.files if Path(rel).parts[:1] == ("..",)]
    if not outside or catalogue.format != "tex":
        return catalogue, main_dir
    base = Path(os.path.commonpath([main_dir, *((main_dir / rel).resolve() for rel in catalogue.files)]))
    return read_source(source, source_root=base, max_file_mib=limit, tolerant=args.tolerant), base


def _init_adopt(target: Path) -> tuple[dict, str]:
    """Adopt the ``[adopt] package`` of the project just created (``fyan.adopt.run.adopt``).
    No toolchain or a failed build does not undo the project: its units stay in the pipeline
    and the text says how to adopt later."""
    project = Project.open(target)
    gateway = Gateway(project)
    try:
        report = adopt(project, gateway)
    except AdoptionUnavailable as e:
        return ({"adopted": False, "problem": e.message},
                f"Adoption of {project.config.adopt.package} not done: {e.message}\n  {e.hint or ''}".rstrip())
    finally:
        gateway.close()
    return report.model_dump(mode="json"), adoption_text(report)


def _init_result(args: argparse.Namespace, target: Path, catalogue, report) -> CommandResult:
    model = {"provider": args.provider or "none", "model": (args.model or args.provider) if args.provider else None}
    if args.provider is None:
        nxt = (f"No model is configured yet: choose one in {quoted(target / 'fyan.toml')} ([agents.default]; "
               f"see `fyan init --help`), then: fyan run {quoted(target)}")
    else:
        nxt = f"Next: fyan run {quoted(target)}"
        var = KEY_VARS.get(args.provider)
        if var and not os.environ.get(var):
            nxt = f"{var} is not set in this shell: export it, then: fyan run {quoted(target)}"
    if report is None:
        return CommandResult(ExitCode.OK, {"project": str(target), "ingested": False, "statements": len(catalogue.statements),
                                           **model},
                             f"Created project {target} ({len(catalogue.statements)} theorem-like statements); not ingested yet.\n"
                             f"Edit {quoted(target / 'fyan.toml')} (providers, [intake] specifier), then: fyan run {quoted(target)}")
    if report.warnings and not args.json:  # every warning, on stderr (--json lists them under "warnings")
        print(format_warnings(report.warnings), end="", file=sys.stderr)
    text = (
        f"Created project {target} from {report.format.upper() if report.format == 'pdf' else report.format} "
        f"source: {report.statements} theorem-like statements in {len(report.files)} file(s), "
        f"{report.units} units, {report.edges} dependency edges between {report.pairs} pairs of units, "
        f"{report.layers} layer(s).\n"
        + intake_report(report)
        + ingest_details(report)
        + nxt
    )
    return CommandResult(ExitCode.OK, {"project": str(target), **model, **report.model_dump(mode="json")}, text)

