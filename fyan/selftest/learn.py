"""``fyan selftest`` learns which environment extensions honest modules write.

Every compiled module writes entries into extensions whose names change from one Lean version to
the next (``modPkgExt`` is ``Lean.modPkgExt`` or ``_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt``;
``namespacesExt`` became private; newer Lean adds ``exportedAxiomsExt`` and the linter log), so no
list written into Fyan can be right for every toolchain. Instead, before any case of the corpus
runs, the selftest compiles Fyan's own honest control modules (the manifest's ``[[learn]]``
entries, ``tests/cheats/learn/*.lean``: namespaces, documented definitions, structures, instances,
a class, an ``abbrev``, a ``@[simp]`` lemma, recursion, proofs by term, ``decide``, ``simp``,
``omega``, ``induction``) with plain ``lean`` exactly as units are compiled
(``fyan.lean.compile``, the options of Fyan's Lake template), runs the trusted inspector on them, and records the name of every extension they write. The gate's allow-list is
then exactly those names plus ``[lean] extension_allowlist`` (``fyan.lean.policy``); a candidate
writing into any other extension is refused, named.

Notation, macros and ``module`` files are not controls: notation is refused for candidates, and
Fyan never writes a ``module`` file. A control that does not compile, that the inspector cannot
read, or that itself breaks a declaration rule (an axiom, ``sorry``, ...) makes learning fail:
the selftest then does not pass, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fyan.config import LeanSection
from fyan.selftest import corpus

LIBRARY = "FyanControls"


@dataclass
class Learned:
    """What learning gave: ``extensions`` (raw names, as the inspector reports them), per control
    module the names it wrote, or ``problem`` (why nothing was learned)."""

    extensions: list[str] = field(default_factory=list)
    by_module: dict[str, list[str]] = field(default_factory=dict)
    problem: str | None = None


@dataclass(frozen=True)
class Control:
    id: str
    file: str
    text: str

    @property
    def module(self) -> str:
        return f"{LIBRARY}.{Path(self.file).stem}"


def controls(folder: Path | None = None) -> list[Control]:
    """The manifest's ``[[learn]]`` entries, in order."""
    folder = folder or corpus.cases_dir()
    return [Control(e["id"], e["file"], (folder / e["file"]).read_text(encoding="utf-8"))
            for e in corpus.load_manifest(folder).get("learn", [])]


def learn_extensions(toolchain, pin: str, config: LeanSection, inspector, work: Path, log_dir: Path) -> Learned:
    """Compile the controls in ``work`` (a scratch Lake package for ``pin``, with the Lake
    template's options), inspect them and collect the extensions they write (module docstring).
    Never raises for a toolchain problem."""
    from string import Template

    from fyan.lean.compile import LeanSetupError, compile_module, module_path, resolve
    from fyan.lean.inspector import module_findings, run_inspector
    from fyan.resources import data_dir

    ctl = controls()
    if not ctl:
        return Learned(problem="the corpus has no [[learn]] controls: nothing to learn the honest extensions from")
    work.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    template = (data_dir("lake-template") / "lakefile.toml").read_text(encoding="utf-8")
    (work / "lakefile.toml").write_text(Template(template).substitute(lib=LIBRARY), encoding="utf-8")
    (work / "lean-toolchain").write_text(pin.strip() + "\n", encoding="utf-8")
    for c in ctl:
        path = module_path(work / "src", c.module, ".lean")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(c.text, encoding="utf-8")
    try:
        setup = resolve(toolchain, work, config, log_dir=log_dir)
    except LeanSetupError as e:
        return Learned(problem=f"cannot compile Fyan's honest control modules with this toolchain: {e}")
    lib = work / "lib"
    modules = [c.module for c in ctl]
    for m in modules:
        out = work / "build" / m
        built = compile_module(setup, source_root=work / "src", module=m, out_root=out, search_path=[lib],
                               config=config, log_dir=log_dir, name=f"learn-{m}")
        if not built.ok:
            return Learned(problem=f"Fyan's honest control {m} does not compile with this toolchain ({built.reason}; "
                                   f"log {built.log_file})")
        for produced in module_path(out, m, "").parent.iterdir():
            dest = module_path(lib, m, "").parent / produced.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(produced.read_bytes())
    seen = run_inspector(inspector, toolchain, work, config=config, out_dir=log_dir, name="learn-inspect",
                         modules=modules, lean_env=setup.environment([lib]))
    if not seen.ok or seen.report is None:
        return Learned(problem=f"the inspector could not read Fyan's honest control modules: {seen.problem}")
    out = Learned()
    names: set[str] = set()
    for m in modules:
        report = seen.report.module(m)
        assert report is not None  # run_inspector refuses a report without every module
        bad = [f for f in module_findings(report, learned=frozenset(e.name for e in report.extensions))
               if "registers" not in f]
        if bad:
            return Learned(problem=f"Fyan's honest control {m} breaks a declaration rule on this toolchain "
                                   f"({'; '.join(bad[:3])}): nothing is learned from it")
        out.by_module[m] = sorted(e.name for e in report.extensions)
        names |= set(out.by_module[m])
    out.extensions = sorted(names)
    return out


def learned_now(toolchain, pin: str, config: LeanSection, inspector, log_dir: Path) -> tuple[frozenset[str] | None, str]:
    """The extensions Fyan's honest controls write on ``toolchain``, learned now for a gate that
    trusts the toolchain unproven (``[lean] trust_without_selftest``): without a selftest record
    nothing says what an honest module writes, and refusing every extension would refuse every
    honest unit. Learned once per toolchain version line and kept in Fyan's data folder
    (``learned/<key>.json``, beside the selftest records; never in a workspace). Returns
    ``(extensions, "")`` or ``(None, why)`` when the controls cannot be compiled or inspected (the
    gate then fails closed as an environment problem). Never raises."""
    import hashlib
    import json
    import tempfile

    from fyan.selftest.trust import data_root, toolchain_key

    key = toolchain_key(toolchain)
    tag = hashlib.sha256(toolchain.version.encode()).hexdigest()[:12]
    cache = data_root() / "learned" / f"{key}-{tag}.json"
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data.get("toolchain") == toolchain.version and isinstance(data.get("extensions"), list):
            return frozenset(n for n in data["extensions"] if isinstance(n, str)), ""
    except (OSError, ValueError):
        pass
    with tempfile.TemporaryDirectory(prefix="fyan-learn-") as tmp:
        learned = learn_extensions(toolchain, pin, config, inspector, Path(tmp) / "learn", log_dir / "learn")
    if learned.problem is not None:
        return None, learned.problem
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"toolchain": toolchain.version, "extensions": learned.extensions}) + "\n",
                         encoding="utf-8")
    except OSError:
        pass
    return frozenset(learned.extensions), ""
