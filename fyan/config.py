"""Typed configuration: built-in defaults < project ``fyan.toml`` < environment.

Every key is declared here with its default, its unit and its meaning; ``config/fyan.example.toml``
is the annotated copy users read (a test keeps the two equal). Environment overrides use the
prefix ``FYAN_`` and ``__`` between sections, for example ``FYAN_LEAN__LAKE=/opt/elan/bin/lake``
or ``FYAN_SCHEDULER__PARALLELISM=4``. API keys are never part of the configuration: providers
read them from the environment variables their SDKs document.

Errors: ``load_config`` raises ``ConfigError`` naming, for each offending value, where it came
from (the file and its key, or the environment variable) and, for an unknown key, the nearest
known one.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from fyan.errors import ConfigError
from fyan.stages import post_task_names, stage_specs

#: Everything that may call a model, each configurable under ``[agents.stages.<name>]``: the
#: Specifier, the stages with an agent and the post-completion tasks (``fyan.stages``), the critic.
STAGE_NAMES = ("specify", *(s.name for s in stage_specs() if s.agent), "critic", *post_task_names())


def toml_string(s: str) -> str:
    """``s`` as a TOML basic string, escaped by tomlkit (JSON's escapes are not all TOML's: JSON
    leaves DEL raw, which TOML refuses). Files are written as data: ``fyan.configfile``."""
    import tomlkit

    return tomlkit.string(s).as_string()


#: A Lean module or library name Fyan writes into Lean source: dot-separated identifiers
#: (ASCII letters, digits, `_`, `'`; not starting with a digit).
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_']*(?:\.[A-Za-z_][A-Za-z0-9_']*)*$")


_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_variable_names(value: list[str]) -> list[str]:
    bad = [v for v in value if not _VARIABLE.match(v)]
    if bad:
        raise ValueError(f"not environment variable names: {bad} (letters, digits and _, not starting with a digit)")
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProjectSection(_Section):
    name: str = Field(description="Project name, shown in status output.")
    source: str = Field(description="Main source document, relative to the project folder.")
    lean_lib: str = Field(
        default="",
        description="Lean library (root module) name of the project's Lake package; "
        "derived from the project name when empty.",
    )

    @field_validator("lean_lib")
    @classmethod
    def _lib_name(cls, value: str) -> str:
        if value and not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", value):
            raise ValueError(f"{value!r} is not a Lean library name (a letter, then letters, digits and _)")
        return value


class IntakeSection(_Section):
    unit_kinds: list[str] = Field(
        default=[
            "theorem",
            "lemma",
            "proposition",
            "corollary",
            "claim",
            "conjecture",
            "definition",
        ],
        description="Statement kinds (canonical names) that become theorem units. Other "
        "theorem-like environments (problem, example, remark, ...) are catalogued, not units.",
    )
    unknown_references: Literal["error", "warn"] = Field(
        default="warn",
        description="What a reference from a statement or proof to a label defined nowhere "
        "in the document does: be reported as a warning, in the intake report and in its unit's findings "
        "(warn, the default: LaTeX prints ?? and goes on), or stop intake (error, `fyan init --strict`).",
    )
    term_edges: bool = Field(
        default=True,
        description="In a document without \\uses: add a dependency edge from a statement to an earlier "
        "definition whose defined term (definition markup: \\emph, \\textbf, {\\it ...}, ...) or title it "
        "uses, unless other edges already imply it or it would close a cycle.",
    )
    notation_edges: bool = Field(
        default=True,
        description="In a document without \\uses: add a dependency edge from a statement to an earlier "
        "definition whose notation it uses (a symbol the definition introduces: X := ..., 'we write $X$ for', "
        "'denote by $X$', a document macro it owns), unless other edges already imply it or it would close a "
        "cycle. Bare letters, numbers and standard operators give no edge.",
    )
    cycles: Literal["error", "break"] = Field(
        default="break",
        description="Cycles among the dependency edges of the document: demote the weakest edge of each to a "
        "mention, with a warning naming it (break, the default; order of trust: \\uses, then a reference in a "
        "proof, then one in a statement, then a mention; a cycle of \\uses edges alone still stops intake), or "
        "stop intake and report them all (error, `fyan init --strict`).",
    )
    tolerant: bool = Field(
        default=False,
        description="Malformed math in a statement (unbalanced $, $$, \\(, \\[, braces) and malformed environments "
        "(a proof closed by \\end{definition}, a proof never closed), in TeX and in Markdown with LaTeX in it: stop "
        "intake with every fault listed (false), or warn for each and read on (true): a statement with bad math "
        "up to its own \\end, a misnamed \\end closing the open environment, one never closed up to the next "
        "statement or proof.",
    )
    max_file_mib: float = Field(
        default=32.0, gt=0, description="Largest source file intake reads, MiB (each file of a TeX tree)."
    )
    source_origin: str = Field(
        default="",
        description="The folder source/ was copied from (absolute; \"\" = the main file's folder), written by "
        "`fyan init` when the document's includes reach above its main file (a LeanArchitect blueprint's "
        "../../.lake/build/blueprint/...): an absolute \\input path below it is read from source/, never from there.",
    )
    specifier: Literal["deterministic", "model"] = Field(
        default="deterministic",
        description="deterministic: one unit per statement, edges from references; model: the "
        "specify agent also groups statements and proposes edges (checked by code), and a "
        "validation pass compares each problem.tex with its source.",
    )


class StageAgent(_Section):
    provider: Literal["replay", "record", "anthropic", "openai", "openai-compatible", "command", "none"] = Field(
        default="replay",
        description="replay | record | anthropic | openai | openai-compatible | command; none = no model "
        "configured yet (`fyan run` stops before any attempt and says how to choose one).",
    )
    model: str = Field(default="example-authored", description="Model name sent to the provider (and priced by config/pricing.toml).")
    base_url: str | None = Field(default=None, description="Endpoint of an OpenAI-compatible server.")
    max_tokens: int = Field(default=8192, gt=0, description="Reply budget, tokens.")
    temperature: float | None = Field(
        default=None, ge=0.0, le=2.0,
        description="Sampling temperature; unset = the provider's default (OpenAI reasoning models accept no other).",
    )
    structured_output: Literal["schema", "json", "prompt"] = Field(
        default="schema",
        description="How a structured reply is asked for: the API's schema mode, its JSON mode, or the prompt "
        "alone. Replies are validated with pydantic in every case.",
    )
    record_provider: Literal["anthropic", "openai", "openai-compatible"] | None = Field(
        default=None, description="With provider = 'record': the live provider to record from."
    )
    command: list[str] = Field(
        default=[], description="With provider = 'command': the CLI to run in the unit workspace (prompt on stdin)."
    )
    network: bool = Field(
        default=False, description="With provider = 'command': let the confined CLI use the network (it needs it to "
        "reach a hosted model); off = no network inside the sandbox."
    )
    sandbox_readable: list[str] = Field(
        default=[], description="With provider = 'command': paths the confined CLI may read although they are hidden "
        "(your home and the project folder are), e.g. its installation or configuration (~ allowed)."
    )
    sandbox_writable: list[str] = Field(
        default=[], description="With provider = 'command': paths outside the workspace the confined CLI may write "
        "(e.g. its own state folder; ~ allowed). Never the project folder."
    )
    pass_env: list[str] = Field(
        default=[], description="With provider = 'command': variables of Fyan's environment the confined CLI gets "
        "besides PATH, HOME, LANG, TMPDIR and FYAN_* (e.g. [\"ANTHROPIC_API_KEY\"]); nothing else passes."
    )
    timeout: float = Field(default=1800.0, gt=0, description="Seconds per call (command agent: the kill deadline).")
    tools: bool | None = Field(
        default=None, description="Formalizer: offer the prover tools through the API's tool calls ([prover] "
        "budgets). Unset = where the provider supports them (anthropic, openai); true also for openai-compatible "
        "(a server that takes `tools`) and replay/record of a tool conversation; false = never.",
    )

    @field_validator("pass_env")
    @classmethod
    def _variable_names(cls, value: list[str]) -> list[str]:
        return _check_variable_names(value)


class AgentsSection(_Section):
    replay_file: str = Field(
        default="replay/cassette.jsonl",
        description="Record/replay cassette, relative to the project folder.",
    )
    form_repairs: int = Field(
        default=2, ge=0, description="Form repairs allowed for a reply that does not validate."
    )
    prove_iterations: int = Field(
        default=3, ge=1, description="Formalizer plan-prove-review iterations per attempt."
    )
    review_rounds: int = Field(
        default=1, ge=0, description="Reasoner revisions after a review pass that refutes a step."
    )
    specify_rounds: int = Field(
        default=2, ge=0, description="Specifier regenerations after critical findings on problem.tex."
    )
    post_completion: bool = Field(
        default=True, description="Run the Curator (skills/) and the Auditor (review.md) after a unit completes."
    )
    call_attempts: int = Field(
        default=3, ge=1,
        description="Tries of one model call on a transient failure (connection, timeout, 429, 5xx, overloaded) "
        "before the provider counts as unavailable.",
    )
    outage_wait_initial: float = Field(
        default=10.0, gt=0,
        description="Seconds before the first new try of an unavailable provider; doubles after each outage.",
    )
    outage_wait_max: float = Field(
        default=300.0, gt=0, description="Longest wait between tries of an unavailable provider, seconds."
    )
    default: StageAgent = StageAgent()
    stages: dict[str, StageAgent] = Field(default_factory=dict)

    @field_validator("stages")
    @classmethod
    def _known_stages(cls, value: dict[str, StageAgent]) -> dict[str, StageAgent]:
        unknown = sorted(set(value) - set(STAGE_NAMES))
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; known: {list(STAGE_NAMES)}")
        return value

    def for_stage(self, stage: str) -> StageAgent:
        """The agent configuration of ``stage`` (falls back to ``default``)."""
        return self.stages.get(stage, self.default)


class ProverSection(_Section):
    """The Formalizer's tool loop (``fyan.agents.tool_loop``, docs/prover-tools.md): budgets per attempt."""

    tool_calls: int = Field(default=30, ge=0, description="Tool calls per Formalizer attempt (the environment's "
                            "failures are not counted).")
    tokens: int = Field(default=400_000, gt=0, description="Tokens (input + output) of the tool loop's model calls "
                        "per Formalizer attempt.")
    wall_time: float = Field(default=1800.0, gt=0, description="Seconds of the tool loop per Formalizer attempt "
                             "(time lost to the environment's failures not counted).")
    tool_timeout: float = Field(default=120.0, gt=0, description="Seconds one tool call may take; then it is a "
                                "timeout, the environment's failure.")
    environment_failures: int = Field(default=5, ge=1, description="Tool rounds the environment may fail (timeout, "
                                      "Lean server down) before the attempt stops as the environment's failure "
                                      "(charged to no attempt budget).")
    declarations: str = Field(default="", description="A `fyan-declarations/1` list (relative to the project) that "
                              "search_declarations indexes when the project has no index of its own.")


class LeanSection(_Section):
    lake: str = Field(default="", description="Path to `lake`; empty = PATH, then ~/.elan/bin.")
    toolchain: str = Field(
        default="leanprover/lean4:v4.34.1", description="Content of the Lake package's lean-toolchain "
        "(fyan init writes the toolchain of the Mathlib tag it pins: fyan.lean.mathlib.DEFAULT)."
    )
    mathlib: str = Field(
        default="", description="The Mathlib release tag the project's Lake package requires (\"\" = none: core "
        "Lean only). Pinned together with toolchain (the lean-toolchain that tag names); fyan init writes both, "
        "`fyan upgrade --mathlib TAG` moves both."
    )
    build_timeout: float = Field(default=900.0, gt=0, description="Seconds per `lake` call.")
    memory_limit_mb: int = Field(default=8192, gt=0, description="Address-space limit per build, MiB.")
    environment_retries: int = Field(
        default=2, ge=0,
        description="How often a gate whose Lean processes failed for the environment's reasons (a crash, an "
        "out-of-memory kill, a missing binary, an inspector crash) is run again in the same attempt, with "
        "exponential backoff; such failures never count against the unit's gate attempts.",
    )
    environment_backoff_s: float = Field(
        default=5.0, ge=0,
        description="Seconds before the first retry of such a gate; doubled for each further retry (at most 300).",
    )
    max_file_mb: int = Field(
        default=64, gt=0,
        description="Largest file Fyan reads or copies from a workspace, attempt, unit or submission folder, "
        "MiB; a larger one (or a FIFO, device, link or folder in a file's place) is refused, never read "
        "(fyan.sandbox.safefile).",
    )
    memory_budget_mb: int | None = Field(
        default=None, gt=0,
        description="MiB that Lean processes (builds, inspector, kernel replay, shadow compiles) may use together; "
        "each is charged the peak memory recorded for its kind and unit, else memory_limit_mb; one larger than the "
        "budget runs alone. Unset: 75% of this machine's RAM. Separate from [scheduler] parallelism (agent slots).",
    )
    warm_servers: int = Field(
        default=2, ge=0,
        description="Warm Lean language servers (`lean --server`) the Formalizer's iterations may keep running, "
        "each admitted through memory_budget_mb; 0 turns them off (every iteration compiles cold). The completion "
        "gate never uses them.",
    )
    warm_idle_s: float = Field(default=600.0, gt=0, description="Seconds an idle warm server is kept before it is ended.")
    sandbox: Literal["require", "auto", "off"] = Field(
        default="require",
        description="How model-written code (Lean builds of candidates, command agents) is confined: "
        "require: in bubblewrap, refusing to run without it; auto: bubblewrap when usable, else unconfined "
        "(reported); off: never confined (stated by status and every gate report).",
    )
    sandbox_readable: list[str] = Field(
        default=[], description="Folders confined Lean builds may read although the sandbox hides them (your "
        "home and the project are hidden; ~/.elan and the toolchain's own folder are readable), e.g. a toolchain "
        "installed elsewhere in your home (~ allowed)."
    )
    pass_env: list[str] = Field(
        default=["ELAN_HOME"], description="Variables of Fyan's environment that Lean processes (builds, compiles, "
        "the inspector, kernel replay) get besides PATH, HOME, LANG, TMPDIR and FYAN_*; nothing else passes."
    )
    axiom_allowlist: list[str] = Field(
        default=["propext", "Classical.choice", "Quot.sound"],
        description="Axioms a complete unit may depend on. sorryAx, Lean.ofReduceBool, Lean.trustCompiler and "
        "*._native.* are refused here (they can never be acceptable).",
    )
    kernel_allow: list[str] = Field(
        default=[], description="Kernel-evaluated constants (Lean.reduceBool, Lean.reduceNat: the kernel runs "
        "compiled code and believes it) a complete unit may reach. Empty by default: reaching one is refused like "
        "Lean.ofReduceBool.",
    )
    extension_allowlist: list[str] = Field(
        default=[], description="Environment extensions no row of Fyan's policy by effect classifies whose "
        "entries a unit's modules may register (by name, as the gate report and `fyan selftest` print them; "
        "each admission is named in the gate report). Never one the policy refuses or whose name shows a "
        "dangerous kind (syntax, macros, elaborators, compiler attributes, ...)."
    )
    extra_imports: list[str] = Field(
        default=[], description="Modules every unit file imports (for example Mathlib)."
    )
    inspector_dir: str = Field(
        default="", description="Where the trusted inspector is compiled and kept, one folder per toolchain pin "
        "(\"\" = $XDG_CACHE_HOME/fyan/inspector, else ~/.cache/fyan/inspector). Keep it out of every workspace."
    )
    trust_without_selftest: bool = Field(
        default=False, description="Let the completion gate mark units complete with a toolchain that has no "
        "passing `fyan selftest` for this Fyan version and inspector. Every gate report then says "
        "the gate was not proven on this toolchain. Prefer running `fyan selftest --toolchain <pin>`."
    )
    comparator: str = Field(
        default="", description="Path to leanprover/comparator (\"\" = look for `comparator` on PATH). When found, "
        "the gate requires it to accept each unit."
    )

    @field_validator("toolchain")
    @classmethod
    def _comparable_pin(cls, value: str) -> str:
        from fyan.lean.toolchain import pin_version

        if pin_version(value) is None:
            raise ValueError(f"{value!r} names no Lean version the gate can check the toolchain against; pin a "
                             "release (leanprover/lean4:v4.34.1, v4.34.1 or 4.34.1) or a nightly "
                             "(leanprover/lean4:nightly-2025-06-01)")
        return value

    @field_validator("pass_env")
    @classmethod
    def _variable_names(cls, value: list[str]) -> list[str]:
        return _check_variable_names(value)

    @field_validator("axiom_allowlist")
    @classmethod
    def _acceptable_axioms(cls, value: list[str]) -> list[str]:
        from fyan.lean.policy import refused_allowlist_entries

        bad = refused_allowlist_entries(value)
        if bad:
            raise ValueError("these can never be accepted: " + "; ".join(bad))
        return value

    @field_validator("extension_allowlist")
    @classmethod
    def _admissible_extensions(cls, value: list[str]) -> list[str]:
        from fyan.lean.policy import refused_extension_allowlist_entries

        bad = refused_extension_allowlist_entries(value)
        if bad:
            raise ValueError("these extensions can never be admitted: " + "; ".join(bad))
        return value

    @field_validator("mathlib")
    @classmethod
    def _mathlib_tag(cls, value: str) -> str:
        from fyan.lean.mathlib import pair_for

        if value:
            pair_for(value)  # raises ValueError for a revision that is no release tag
        return value

    @field_validator("kernel_allow")
    @classmethod
    def _kernel_evaluated_names(cls, value: list[str]) -> list[str]:
        from fyan.lean.policy import KERNEL_EVALUATED

        bad = [n for n in value if n not in KERNEL_EVALUATED]
        if bad:
            raise ValueError(f"not kernel-evaluated constants: {bad} (known: {sorted(KERNEL_EVALUATED)})")
        return value

    @field_validator("extra_imports")
    @classmethod
    def _module_names(cls, value: list[str]) -> list[str]:
        bad = [m for m in value if not _MODULE.match(m)]
        if bad:
            raise ValueError(f"not Lean module names: {bad} (letters, digits, _ and ' in dot-separated parts)")
        return value


class AdoptSection(_Section):
    """An existing Lake package the project adopts (``fyan adopt``)."""

    package: str = Field(default="", description="Folder of the adopted Lake package (absolute; \"\" = none). "
                         "Its files are never changed; the project's package requires it, and confined Lean builds "
                         "may read it (added to [lean] sandbox_readable).")
    package_name: str = Field(default="", description="Its Lake package name (from its lakefile).")


class AuditSection(_Section):
    threshold: int = Field(default=2, ge=1, le=3, description="Minimum grade that freezes a statement (at least 1: "
                           "a row resting on a claim code cannot check grades 0 and must stay below it).")
    grade1_policy: Literal["repair", "bridge"] = Field(
        default="repair",
        description="Statements graded 1 (at least 1, below the threshold) go back to the Planner "
        "(repair) or are frozen with a bridge obligation `<root>_faithful : S0` (bridge).",
    )
    form_repairs: int = Field(
        default=2, ge=0, le=3,
        description="Form repairs the semantic judge gets for a reply that fails the validator "
        "(at most 3); then the audit attempt is a rejection.",
    )


class SchedulerSection(_Section):
    parallelism: int = Field(default=2, ge=1, description="Stage attempts running at once.")
    attempts_per_stage: int = Field(
        default=3, ge=1, description="Failed attempts of one stage before the unit is blocked."
    )
    max_replans: int = Field(
        default=3, ge=0,
        description="Re-plans per unit the Formalizer's checked verdicts may cause (a planned lemma refuted, "
        "or a step too hard: fyan.replan); the next checked verdict blocks the unit for a human.",
    )


class StagnationSection(_Section):
    """When a unit stops making progress, a critic (a model) reviews it; its advice reaches the
    unit's next attempt through the guidance channel. Critics never edit files."""

    enabled: bool = Field(default=True, description="Schedule critic reviews of stagnating units.")
    window: int = Field(
        default=2, ge=2,
        description="Consecutive failed attempts that show no progress (same positive sorry count, "
        "same blocker, or no edit to the proof) before a review.",
    )
    max_reviews: int = Field(default=2, ge=0, description="Critic reviews per unit at most.")


class ExecutorSection(_Section):
    """Where stage attempts and gate builds run (``fyan.executor``, docs/design.md)."""

    backend: Literal["local", "ray"] = Field(
        default="local",
        description="local: threads of the process running `fyan run`/`fyan daemon`; ray: Ray tasks on the "
        "nodes of a Ray cluster (needs `pip install 'fyan[ray]'`).",
    )
    address: str = Field(
        default="auto",
        description="With backend = 'ray': the cluster to join: 'auto' (the cluster `ray start` started on this "
        "machine), 'host:port' of its head, 'ray://host:port' (Ray Client), or 'local' (a private one-machine Ray "
        "started for this run).",
    )
    task_cpus: float = Field(default=1.0, gt=0, description="CPUs each task declares to Ray (fractions allowed).")
    agent_memory_mb: int = Field(
        default=1024, gt=0,
        description="Memory (MiB) an agent-only task (reason, audit) declares to Ray; tasks with Lean builds declare "
        "[lean] memory_limit_mb.",
    )

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        import re

        if value in ("auto", "local") or re.fullmatch(r"ray://[^\s/:]+:\d+", value) \
                or re.fullmatch(r"[^\s/:]+:\d+", value):
            return value
        raise ValueError(f"{value!r} is not 'auto', 'local', 'host:port' or 'ray://host:port'")


class RefuteSection(_Section):
    """Refute before proving (``fyan.refute``, docs/refutation.md): counterexample searches a review
    proposes, and small-instance checks of frozen statements, run confined by Fyan."""

    threshold: int = Field(
        default=2, ge=1,
        description="Executed refutations standing against one proof (plan) that force its revision; the reason "
        "stage's check refuses a proof with this many.",
    )
    per_review: int = Field(default=3, ge=0, description="Counterexample searches run per review at most (0: none).")
    timeout_s: float = Field(default=20.0, gt=0, le=600, description="Seconds per confined run of a search.")
    memory_mb: int = Field(default=1024, ge=64, description="Address-space limit of a python search, MiB.")
    max_cases: int = Field(default=200000, ge=1, description="Largest finite domain a python search may enumerate.")
    frozen_check: bool = Field(
        default=True, description="Before proving, try to refute each frozen statement on small instances (a Lean "
        "`decide` check Fyan writes where the binders are Bool, Fin n or bounded natural numbers).",
    )
    frozen_bound: int = Field(
        default=6, ge=1, le=64, description="Natural-number binders of a frozen statement are tried below this bound.",
    )


class DashboardSection(_Section):
    port: int = Field(default=8765, ge=0, le=65535, description="Port of the local dashboard (0: any free port).")


class FyanConfig(BaseSettings):
    """The whole configuration of one project."""

    model_config = SettingsConfigDict(
        env_prefix="FYAN_", env_nested_delimiter="__", extra="forbid", case_sensitive=False
    )

    project: ProjectSection
    intake: IntakeSection = IntakeSection()
    agents: AgentsSection = AgentsSection()
    lean: LeanSection = LeanSection()
    prover: ProverSection = ProverSection()
    audit: AuditSection = AuditSection()
    adopt: AdoptSection = AdoptSection()
    scheduler: SchedulerSection = SchedulerSection()
    stagnation: StagnationSection = StagnationSection()
    dashboard: DashboardSection = DashboardSection()
    executor: ExecutorSection = ExecutorSection()
    refute: RefuteSection = RefuteSection()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # environment wins over the file (passed as init kwargs); no dotenv, no secrets dir
        return (env_settings, init_settings)

    @model_validator(mode="after")
    def _adopted_package_readable(self) -> FyanConfig:
        """Confined Lean builds must read the adopted Lake package (``[adopt] package``, required by
        the project's package; the sandbox hides the home folder it usually lives in): it is added
        to ``[lean] sandbox_readable`` (read-only)."""
        if self.adopt.package and self.adopt.package not in self.lean.sandbox_readable:
            self.lean.sandbox_readable = [*self.lean.sandbox_readable, self.adopt.package]
        return self

    @property
    def lean_lib(self) -> str:
        return self.project.lean_lib or lean_lib_name(self.project.name)


def config_snapshot(config: FyanConfig) -> dict[str, Any]:
    """The effective configuration (file and environment applied) as plain data, for a task
    that runs elsewhere (``fyan.executor``)."""
    return config.model_dump(mode="json")


def config_from_snapshot(data: dict[str, Any]) -> FyanConfig:
    """The configuration ``config_snapshot`` gave, validated section by section and *not*
    re-read from this machine's environment (the head's settings win; a worker's own settings
    are applied explicitly by the executor). Raises ``pydantic.ValidationError``."""
    sections = {name: field.annotation.model_validate(data[name])
                for name, field in FyanConfig.model_fields.items() if name in data}
    return FyanConfig.model_construct(**sections)


def lean_lib_name(project_name: str) -> str:
    """CamelCase Lean library name from a project name (``taste-number-theory`` →
    ``TasteNumberTheory``); prefixed with ``Fyan`` if it would not start with a letter."""
    parts = [p for p in "".join(c if c.isalnum() else " " for c in project_name).split() if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts) or "Project"
    return name if name[0].isalpha() and name.isascii() else "Fyan" + name


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The section model that holds the key at ``loc`` (a pydantic error location without its
    last item), walking ``FyanConfig``'s fields; a ``dict[str, Model]`` field (``[agents.stages]``)
    takes one key. None when ``loc`` leads nowhere known."""
    import typing

    model: Any = FyanConfig
    i = 0
    while i < len(loc):
        fields = getattr(model, "model_fields", None)
        if not fields or loc[i] not in fields:
            return None
        annotation = fields[loc[i]].annotation
        if typing.get_origin(annotation) is dict:
            annotation = typing.get_args(annotation)[1]
            i += 1  # the dict's key (a stage name)
        model = annotation
        i += 1
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def known_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the configuration accepts next to the key at ``loc`` (its section's keys)."""
    model = _model_at(tuple(loc[:-1]))
    return list(model.model_fields) if model is not None else []


def nearest_key(loc: tuple[Any, ...]) -> str | None:
    """The known key nearest to the unknown last item of ``loc``, or None: by ``difflib``'s
    ratio against the whole key (at least 0.6: ``paralelism`` → ``parallelism``) or, a little
    stricter, against one of its ``_``-separated words (at least 0.8: ``timout`` →
    ``build_timeout``)."""
    import difflib

    name = str(loc[-1]).lower()
    best, score = None, 0.0
    for key in known_keys(loc):
        whole = difflib.SequenceMatcher(None, name, key).ratio()
        part = max((difflib.SequenceMatcher(None, name, w).ratio() for w in key.split("_")), default=0.0)
        s = whole if whole >= 0.6 else (part - 0.01 if part >= 0.8 else 0.0)
        if s > score:
            best, score = key, s
    return best


def env_source(loc: tuple[Any, ...], environ: Mapping[str, str] | None = None) -> str | None:
    """The environment variable that set the value at ``loc``, or None: the longest
    ``FYAN_<SECTION>__<KEY>`` (matched without case, as pydantic-settings reads them) that is a
    prefix of ``loc`` (``FYAN_AGENTS__DEFAULT`` may carry a whole table as JSON)."""
    import os

    env = os.environ if environ is None else environ
    names = {k.upper(): k for k in env}
    for n in range(len(loc), 0, -1):
        name = "FYAN_" + "__".join(str(x) for x in loc[:n]).upper()
        if name in names:
            return names[name]
    return None


def _table_key(loc: tuple[Any, ...]) -> str:
    """``[scheduler] parallelism`` for ``("scheduler", "parallelism")``, ``project`` for a
    missing section."""
    parts = [str(x) for x in loc]
    if len(parts) == 1:
        return f"[{parts[0]}]"
    return f"[{'.'.join(parts[:-1])}] {parts[-1]}"


def _format_validation_error(path: Path, err: ValidationError, data: dict[str, Any] | None = None,
                             environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The message and hint of a ``ConfigError`` for ``err``: each problem names where its value
    came from — an environment variable (``FYAN_SCHEDULER__PARALLELISM='x'``), or the file and
    its table and key (``fyan.toml, [scheduler] parallelism``) — an unknown key names the nearest
    known one,
    and the hint says what to change, in the user's own file or environment."""
    import os

    env = os.environ if environ is None else environ
    lines: list[str] = []
    from_env: list[str] = []
    from_file = False
    unknown_sections: set[str] = set()
    for e in err.errors():
        loc = tuple(e["loc"])
        msg = e["msg"]
        var = env_source(loc, env)
        key = ".".join(str(x) for x in loc)
        if var is not None and e["type"] != "missing":  # the environment wins over the file
            value = env[var] if len(env[var]) <= 60 else env[var][:57] + "..."
            where = f"{key} (from the environment variable {var}={value!r})"
            from_env.append(var)
        else:
            where = f"{key} (in {path.name}, {_table_key(loc)})"
            from_file = True
        if e["type"] == "extra_forbidden":
            near = nearest_key(loc)
            msg = "unknown key" + (f"; did you mean {near!r}?" if near else "")
            unknown_sections.add(".".join(str(x) for x in loc[:-1]))
        elif e["type"] == "missing":
            msg = "required key is missing"
        lines.append(f"  {where}: {msg}")
    if from_file and not from_env:
        head = f"{path}: invalid configuration"
    elif from_env and not from_file:
        head = "invalid configuration in the environment (FYAN_* variables override fyan.toml)"
    else:
        head = f"invalid configuration in {path} and in the environment"
    hints = []
    if from_file:
        hints.append(f"edit {path}")
    if from_env:
        hints.append("fix or unset " + ", ".join(dict.fromkeys(from_env)))
    for section in sorted(unknown_sections):
        keys = known_keys((*section.split("."), "?") if section else ("?",))
        if keys:
            hints.append(f"the keys of {'[' + section + ']' if section else 'the top level'} are: {', '.join(keys)}")
    return head + "\n" + "\n".join(lines), "; ".join(hints)


def load_config(path: Path) -> FyanConfig:
    """Read a project's ``fyan.toml`` (``path``) and apply environment overrides.

    Raises ``ConfigError`` when the file is missing, is not TOML (with line and column), or
    has an unknown or ill-typed key (each named with its dotted path).
    """
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: configuration file not found", hint="create the project with `fyan init`"
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    try:
        return FyanConfig(**data)
    except ValidationError as e:
        message, hint = _format_validation_error(path, e, data)
        raise ConfigError(message, hint=hint) from None
    except SettingsError as e:  # an environment variable pydantic-settings could not decode
        raise _env_decode_error(str(e)) from None


def _env_decode_error(text: str, environ: Mapping[str, str] | None = None) -> ConfigError:
    """A ``ConfigError`` for pydantic-settings' ``error parsing value for field "lean" from source
    "EnvSettingsSource"``: the ``FYAN_LEAN*`` variables set, by name and value. A list or a table
    must be given as JSON there."""
    import os

    env = os.environ if environ is None else environ
    m = re.search(r'field "(\w+)"', text)
    section = (m.group(1) if m else "").upper()
    names = [k for k in env if k.upper() == f"FYAN_{section}" or k.upper().startswith(f"FYAN_{section}__")]
    shown = ", ".join(f"{k}={env[k][:60]!r}" for k in names) or f"FYAN_{section}__*"
    return ConfigError(f"invalid configuration in the environment: {shown} does not decode ({text})",
                       hint='a list or a table is given as JSON (e.g. FYAN_LEAN__PASS_ENV=\'["HOME_CACHE"]\'); '
                            "fix or unset " + (", ".join(names) or "the variable"))
