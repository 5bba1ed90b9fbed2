"""``fyan selftest`` compiles Fyan's honest controls and holds them to the gate's policy.

The gate decides what a unit's modules may register from the policy by effect
(``fyan.lean.extensions``: one row per environment extension, ``fyan.lean.policy``). A gate that
refuses honest work is as broken as one that admits a cheat, so before any case of the corpus
runs, the selftest compiles Fyan's own honest control modules (the manifest's ``[[learn]]``
entries, ``tests/cheats/learn/*.lean``: namespaces, documented and ``noncomputable``
definitions, structures with ``extends``, enumerations and trees with ``deriving``, mutual
inductives, instances and instance arguments, ``export``, ``@[match_pattern]``,
``@[elab_as_elim]``, ``@[ext]``, well-founded recursion, ``where``, ``variable``/``section``,
``@[simp]`` lemmas, proofs by term and by ``decide``, ``simp``, ``omega``, ``induction``) with
plain ``lean`` exactly as units are compiled (``fyan.lean.compile``, the options of Fyan's Lake
template), runs the trusted inspector on them, and applies the gate's policy to each
(``module_findings`` with the configured ``[lean] extension_allowlist``): every control must pass.
The names of the extensions they write are recorded, and those no row of the policy classifies are
listed (``Learned.unclassified``).

For a project (``fyan selftest <project>``) the toolchain's registry is listed in the project's
own Lake package (``package``: its dependencies' folders on the search path, their modules
imported as a unit imports them, ``[lean] extra_imports``), so the extensions Mathlib, Batteries,
Aesop, ... register are listed with Lean's; and when the package requires Mathlib (``[lean]
extra_imports`` names it), the manifest's ``[[learn_mathlib]]`` controls (``@[simp]``,
``@[to_additive]``, ``@[simps]``, ``@[ext]``, ``@[fun_prop]``, ``@[gcongr]``, a ``noncomputable
def`` on ``ℝ``, a ``Finset`` sum, an instance on an own structure) are compiled in that package
and held to the policy the same way.

Notation, macros and ``module`` files are not controls: notation is refused for candidates, and
Fyan never writes a ``module`` file. A control that does not compile, that the inspector cannot
read, or that the policy refuses (an axiom, ``sorry``, an extension no row classifies, ...) makes
learning fail: the selftest then does not pass, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fyan.config import LeanSection
from fyan.trust import corpus

LIBRARY = "FyanControls"


@dataclass
class Learned:
    """What learning gave: ``extensions`` (raw names, as the inspector reports them), per control
    module the names it wrote, or ``problem`` (why nothing was learned)."""

    extensions: list[str] = field(default_factory=list)
    by_module: dict[str, list[str]] = field(default_factory=dict)
    #: the ``[[learn_mathlib]]`` controls compiled in the project's package (empty: not asked)
    library_modules: list[str] = field(default_factory=list)
    #: extensions the controls wrote that no row of the policy classifies
    unclassified: list[str] = field(default_factory=list)
    #: every persistent extension the toolchain registers with the project's dependencies
    #: imported (``registered_extensions``), and why it could not be listed
    registry: list[str] = field(default_factory=list)
    registry_problem: str | None = None
    problem: str | None = None

    @property
    def unclassified_registered(self) -> list[str]:
        """Extensions of the toolchain and of the dependencies that no row of the policy classifies
        (a unit writing one is refused until ``[lean] extension_allowlist`` names it)."""
        from fyan.lean.extensions import unclassified

        return unclassified(set(self.registry) | set(self.extensions))


@dataclass(frozen=True)
class Control:
    id: str
    file: str
    text: str

    @property
    def module(self) -> str:
        return f"{LIBRARY}.{Path(self.file).stem}"


def controls(folder: Path | None = None, section: str = "learn") -> list[Control]:
    """The manifest's ``[[learn]]`` entries (``section="learn_mathlib"``: the controls compiled in a
    package that requires Mathlib), in order."""
    folder = folder or corpus.cases_dir()
    return [Control(e["id"], e["file"], (folder / e["file"]).read_text(encoding="utf-8"))
            for e in corpus.load_manifest(folder).get(section, [])]


def requires_mathlib(config: LeanSection) -> bool:
    """Whether the project's units import Mathlib (``[lean] extra_imports``, which ``fyan init``
    fills for a Mathlib project): then its package must admit the Mathlib controls."""
    from fyan.lean.mathlib import MATHLIB_IMPORT

    return any(m == MATHLIB_IMPORT or m.startswith(MATHLIB_IMPORT + ".") for m in config.extra_imports)


def learn_extensions(toolchain, pin: str, config: LeanSection, inspector, work: Path, log_dir: Path, *,
                     package: Path | None = None) -> Learned:
    """Compile the controls in ``work`` (a scratch Lake package for ``pin``, with the Lake
    template's options), inspect them and collect the extensions they write (module docstring).
    ``package``: the project's Lake package (``lean/``), where the registry is listed and, when the
    project requires Mathlib, the Mathlib controls are compiled. Never raises for a toolchain
    problem."""
    from string import Template

    from fyan.lean.compile import LeanSetupError, resolve
    from fyan.lean.extensions import unclassified
    from fyan.resources import data_dir

    ctl = controls()
    if not ctl:
        return Learned(problem="the corpus has no [[learn]] controls: nothing to learn the honest extensions from")
    work.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    template = (data_dir("lake-template") / "lakefile.toml").read_text(encoding="utf-8")
    (work / "lakefile.toml").write_text(Template(template).substitute(lib=LIBRARY), encoding="utf-8")
    (work / "lean-toolchain").write_text(pin.strip() + "\n", encoding="utf-8")
    # the scratch package requires nothing: the project's imports (Mathlib) are not its to build
    core = config.model_copy(update={"extra_imports": []})
    try:
        setup = resolve(toolchain, work, core, log_dir=log_dir)
    except LeanSetupError as e:
        return Learned(problem=f"cannot compile Fyan's honest control modules with this toolchain: {e}")
    out = Learned()
    problem = _learn_modules(toolchain, setup, core, inspector, work, log_dir, ctl, "", out)
    if problem is not None:
        return Learned(problem=problem)
    # the registry (and the library controls) in the project's own package: the extensions its
    # dependencies register are loaded as they are for a unit's compile, not in a scratch package
    env_setup = setup
    if package is not None and not any((package / n).is_file() for n in ("lakefile.toml", "lakefile.lean")):
        if requires_mathlib(config):
            return Learned(problem=f"the project requires Mathlib but has no Lake package in {package} yet, so the "
                                   "Mathlib controls cannot be compiled there; set it up first (`fyan setup "
                                   "<project>`), then run the selftest again")
        package = None  # a core project not set up yet: its units see the toolchain alone
    if package is not None:
        try:
            env_setup = resolve(toolchain, package, config, log_dir=log_dir)
        except LeanSetupError as e:
            return Learned(problem=f"the project's Lake package {package} cannot be used with this toolchain ({e}); "
                                   f"set it up first (`fyan setup <project>`), then run the selftest again")
        library = controls(section="learn_mathlib") if requires_mathlib(config) else []
        if library:
            problem = _learn_modules(toolchain, env_setup, config, inspector, work / "library", log_dir, library,
                                     "library-", out)
            if problem is not None:
                return Learned(problem=problem)
            out.library_modules = [c.module for c in library]
    out.extensions = sorted({n for names in out.by_module.values() for n in names})
    out.unclassified = unclassified(out.extensions)
    out.registry, out.registry_problem = registered_extensions(env_setup, work, config, log_dir,
                                                               imports=["Init", *config.extra_imports])
    return out


def _learn_modules(toolchain, setup, config: LeanSection, inspector, work: Path, log_dir: Path,
                   ctl: list[Control], tag: str, out: Learned) -> str | None:
    """Compile ``ctl`` with ``setup`` (sources and outputs under ``work``, the dependency folders of
    ``setup`` searched after them), run the inspector on them and hold each to the gate's policy
    (``module_findings``, the configured allow-list); record the extensions each wrote in
    ``out.by_module``. Returns why learning fails (a control that does not compile, cannot be
    read or is refused), else None."""
    from fyan.lean.compile import compile_module, module_path
    from fyan.lean.inspector import module_findings, run_inspector

    lib = work / "lib"
    modules = [c.module for c in ctl]
    for c in ctl:
        path = module_path(work / "src", c.module, ".lean")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(c.text, encoding="utf-8")
    for m in modules:
        build = work / "build" / m
        built = compile_module(setup, source_root=work / "src", module=m, out_root=build, search_path=[lib],
                               config=config, log_dir=log_dir, name=f"learn-{tag}{m}")
        if not built.ok:
            return (f"Fyan's honest control {m} does not compile with this toolchain ({built.reason}; "
                    f"log {built.log_file})")
        for produced in module_path(build, m, "").parent.iterdir():
            dest = module_path(lib, m, "").parent / produced.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(produced.read_bytes())
    seen = run_inspector(inspector, toolchain, work, config=config, out_dir=log_dir, name=f"learn-{tag}inspect",
                         modules=modules, lean_env=setup.environment([lib]))
    if not seen.ok or seen.report is None:
        return f"the inspector could not read Fyan's honest control modules: {seen.problem}"
    for m in modules:
        report = seen.report.module(m)
        assert report is not None  # run_inspector refuses a report without every module
        bad = module_findings(report, extra_allow=frozenset(config.extension_allowlist))
        if bad:
            return (f"the gate's policy refuses Fyan's honest control {m} on this toolchain "
                    f"({'; '.join(bad[:3])}): the gate would refuse honest work")
        out.by_module[m] = sorted(e.name for e in report.extensions)
    return None


def registered_extensions(setup, work: Path, config: LeanSection, log_dir: Path, *,
                          imports: list[str]) -> tuple[list[str], str | None]:
    """Every persistent environment extension ``setup``'s ``lean`` registers once ``imports`` are
    imported (Lean's own, and those the imported libraries register when they are loaded, as
    Mathlib's attributes are): ``lean --stats`` on a scratch file of those imports prints
    ``extension '<name>'`` for each (``fyan.lean.extensions.registered_extensions``). Runs confined
    like a compile. Returns ``(names, None)`` or ``([], why)``; never raises."""
    from fyan.lean.compile import compile_confinement
    from fyan.lean.extensions import registered_extensions as parse
    from fyan.sandbox.runner import run_process, tool_environment

    src = work / "registry"
    try:
        src.mkdir(parents=True, exist_ok=True)
        # without Init among the imports the probe is a `prelude` file (else Lean imports Init anyway)
        header = "" if "Init" in imports else "prelude\n"
        (src / "FyanRegistry.lean").write_text(header + "".join(f"import {m}\n" for m in imports if m != "Init"),
                                               encoding="utf-8")
    except OSError as e:
        return [], f"cannot write the registry probe in {src}: {e}"
    confinement = compile_confinement(setup, source_root=src, out_root=src, search_path=[],
                                      readable=config.sandbox_readable)
    proc = run_process([str(setup.lean), "--stats", str(src / "FyanRegistry.lean")], cwd=src,
                       timeout_s=config.build_timeout, memory_mb=config.memory_limit_mb, sandbox=config.sandbox,
                       confinement=confinement, env=tool_environment(setup.environment([]), pass_env=config.pass_env),
                       log_path=log_dir / "registry.log", lean_kind="build")
    names = parse(proc.output)
    if not proc.ok or not names:
        return [], (f"`lean --stats` importing {', '.join(imports)} listed no extension ({proc.describe()}; log "
                    f"{log_dir / 'registry.log'})")
    return names, None


def learned_now(toolchain, pin: str, config: LeanSection, inspector, log_dir: Path) -> tuple[frozenset[str] | None, str]:
    """The extensions Fyan's honest controls write on ``toolchain``, checked now for a gate that
    trusts the toolchain unproven (``[lean] trust_without_selftest``): without a selftest record
    nothing shows that the policy admits honest modules on it (an extension of a newer Lean that no
    row classifies would refuse every unit). Checked once per toolchain version line and Fyan
    (``fyan.trust.record.current_identity``: its version, inspector and controls) and kept in
    Fyan's data folder (``learned/<key>.json``, beside the selftest records; never in a workspace).
    Returns ``(extensions, "")`` or ``(None, why)`` when the controls cannot be compiled, inspected
    or admitted (the gate then fails closed as an environment problem). Never raises."""
    import hashlib
    import json
    import tempfile

    from fyan.trust.record import current_identity, data_root, toolchain_key

    key = toolchain_key(toolchain)
    tag = hashlib.sha256(toolchain.version.encode()).hexdigest()[:12]
    cache = data_root() / "learned" / f"{key}-{tag}.json"
    # a check made by another Fyan (another policy, other controls) proves nothing now
    identity = current_identity()
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        if (data.get("toolchain") == toolchain.version and data.get("identity") == identity
                and isinstance(data.get("extensions"), list)):
            return frozenset(n for n in data["extensions"] if isinstance(n, str)), ""
    except (OSError, ValueError):
        pass
    with tempfile.TemporaryDirectory(prefix="fyan-learn-") as tmp:
        learned = learn_extensions(toolchain, pin, config, inspector, Path(tmp) / "learn", log_dir / "learn")
    if learned.problem is not None:
        return None, learned.problem
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"toolchain": toolchain.version, "identity": identity,
                                     "extensions": learned.extensions}) + "\n", encoding="utf-8")
    except OSError:
        pass
    return frozenset(learned.extensions), ""
