"""Typed configuration: built-in defaults < project ``fyan.toml`` < environment.

Every key is declared here with its default, its unit and its meaning; ``config/fyan.example.toml``
is the annotated copy users read (a test keeps the two equal). Environment overrides use the
prefix ``FYAN_`` and ``__`` between sections, for example ``FYAN_LEAN__LAKE=/opt/elan/bin/lake``
or ``FYAN_SCHEDULER__PARALLELISM=4``. API keys are never part of the configuration: providers
read them from the environment variables their SDKs document.

Errors: ``load_config`` raises ``ConfigError`` naming the file and the offending key.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from fyan.errors import ConfigError

STAGE_NAMES = ("specify", "reason", "plan", "audit", "prove", "critic", "curate", "review")


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
        default="error",
        description="What a reference from a statement or proof to a label defined nowhere "
        "in the document does: stop intake, or be reported as a warning.",
    )
    term_edges: bool = Field(
        default=True,
        description="Add a dependency edge from a statement to an earlier definition whose "
        "defined term (bold or emphasised in the definition) or title it mentions, unless "
        "other edges already imply it.",
    )
    max_file_mib: float = Field(
        default=32.0, gt=0, description="Largest source file intake reads, MiB (each file of a TeX tree)."
    )
    specifier: Literal["deterministic", "model"] = Field(
        default="deterministic",
        description="deterministic: one unit per statement, edges from references; model: the "
        "specify agent also groups statements and proposes edges (checked by code), and a "
        "validation pass compares each problem.tex with its source.",
    )


class StageAgent(_Section):
    provider: Literal["replay", "record", "anthropic", "openai", "openai-compatible", "command"] = "replay"
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
    timeout: float = Field(default=1800.0, gt=0, description="Seconds per call (command agent: the kill deadline).")


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


class LeanSection(_Section):
    lake: str = Field(default="", description="Path to `lake`; empty = PATH, then ~/.elan/bin.")
    toolchain: str = Field(
        default="leanprover/lean4:v4.31.0", description="Content of the Lake package's lean-toolchain."
    )
    build_timeout: float = Field(default=900.0, gt=0, description="Seconds per `lake` call.")
    memory_limit_mb: int = Field(default=8192, gt=0, description="Address-space limit per build, MiB.")
    sandbox: Literal["auto", "require", "off"] = Field(
        default="auto",
        description="auto: use bubblewrap when present, warn otherwise; require: refuse to build "
        "without it; off: never sandbox.",
    )
    axiom_allowlist: list[str] = Field(default=["propext", "Classical.choice", "Quot.sound"])
    extra_imports: list[str] = Field(
        default=[], description="Modules every unit file imports (for example Mathlib)."
    )


class AuditSection(_Section):
    threshold: int = Field(default=2, ge=0, le=3, description="Minimum grade that freezes a statement.")
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
    """Where stage attempts and gate builds run (``fyan.executor``, DESIGN.md §9)."""

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
    audit: AuditSection = AuditSection()
    scheduler: SchedulerSection = SchedulerSection()
    stagnation: StagnationSection = StagnationSection()
    dashboard: DashboardSection = DashboardSection()
    executor: ExecutorSection = ExecutorSection()

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
    sections = {name: field.annotation.model_validate(data[name])  # type: ignore[union-attr]
                for name, field in FyanConfig.model_fields.items() if name in data}
    return FyanConfig.model_construct(**sections)


def lean_lib_name(project_name: str) -> str:
    """CamelCase Lean library name from a project name (``taste-number-theory`` →
    ``TasteNumberTheory``); prefixed with ``Fyan`` if it would not start with a letter."""
    parts = [p for p in "".join(c if c.isalnum() else " " for c in project_name).split() if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts) or "Project"
    return name if name[0].isalpha() and name.isascii() else "Fyan" + name


def _format_validation_error(path: Path, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key is missing"
        lines.append(f"  {loc}: {msg}")
    return f"{path}: invalid configuration\n" + "\n".join(lines)


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
        raise ConfigError(
            _format_validation_error(path, e),
            hint="see config/fyan.example.toml for every key and its default",
        ) from None
