"""Configuration loading, errors and overrides."""

from __future__ import annotations

import tomllib

import pytest

from fyan.config import FyanConfig, load_config
from fyan.errors import ConfigError
from tests.conftest import ROOT


def test_example_file_documents_exactly_the_defaults():
    data = tomllib.loads((ROOT / "config" / "fyan.example.toml").read_text())
    example = FyanConfig(**data)
    defaults = FyanConfig(project=data["project"])
    assert example.model_dump() == defaults.model_dump()


def test_unknown_key_and_bad_value_are_named(tmp_path):
    path = tmp_path / "fyan.toml"
    path.write_text('[project]\nname = "x"\nsource = "s.tex"\n[lean]\ntimout = 3\n[scheduler]\nparallelism = 0\n')
    with pytest.raises(ConfigError) as e:
        load_config(path)
    text = str(e.value)
    assert "lean.timout (in fyan.toml, [lean] timout): unknown key; did you mean 'build_timeout'?" in text
    assert "scheduler.parallelism (in fyan.toml, [scheduler] parallelism): Input should be greater than or equal to 1" in text
    assert "fyan.example.toml" not in text  # a path in Fyan's repository, not in the user's project


def test_broken_toml_and_missing_file(tmp_path):
    path = tmp_path / "fyan.toml"
    path.write_text("[project\nname = 1\n")
    with pytest.raises(ConfigError, match=r"fyan\.toml: not valid TOML: .*line 1"):
        load_config(path)
    with pytest.raises(ConfigError, match="configuration file not found"):
        load_config(tmp_path / "missing.toml")


def test_environment_overrides_the_file(tmp_path, monkeypatch):
    path = tmp_path / "fyan.toml"
    path.write_text('[project]\nname = "x"\nsource = "s.tex"\n[lean]\nlake = "/from/file"\n')
    monkeypatch.setenv("FYAN_LEAN__LAKE", "/from/env")
    monkeypatch.setenv("FYAN_SCHEDULER__PARALLELISM", "4")
    cfg = load_config(path)
    assert cfg.lean.lake == "/from/env" and cfg.scheduler.parallelism == 4
    assert cfg.lean_lib == "X"


@pytest.mark.parametrize("lean, fragment", [
    ('axiom_allowlist = ["propext", "sorryAx"]', "sorryAx (sorry: an unfinished proof)"),
    ('axiom_allowlist = ["Lean.ofReduceBool"]', "Lean.ofReduceBool (native_decide"),
    ('axiom_allowlist = ["Lean.trustCompiler"]', "Lean.trustCompiler (native_decide"),
    ('axiom_allowlist = ["P.t._native.native_decide.ax_1_1"]', "native_decide/bv_decide axiom"),
    ('axiom_allowlist = ["*._native.*"]', "*._native.* (native_decide/bv_decide axiom"),
    ('toolchain = "stable"', "names no Lean version the gate can check"),
    ('toolchain = "leanprover/lean4-pr-releases:pr-release-1"', "names no Lean version"),
    ('extra_imports = ["Mathlib\\n#eval 1"]', "not Lean module names"),
])
def test_settings_that_could_never_be_safe_are_refused_when_the_configuration_loads(tmp_path, lean, fragment):
    """Finding 8: an allow-list entry that can never be acceptable (or a pin the gate cannot
    check) is refused with the key named, not silently ignored."""
    path = tmp_path / "fyan.toml"
    path.write_text(f'[project]\nname = "x"\nsource = "s.tex"\n[lean]\n{lean}\n')
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert fragment in str(e.value) and "lean." in str(e.value)


def test_every_spelling_of_a_pin_loads_and_the_sandbox_requires_bubblewrap_by_default(tmp_path):
    for pin in ("leanprover/lean4:v4.19.0-rc2", "v4.19.0-rc2", "4.19.0-rc2", "leanprover/lean4:nightly-2025-06-01"):
        path = tmp_path / "fyan.toml"
        path.write_text(f'[project]\nname = "x"\nsource = "s.tex"\n[lean]\ntoolchain = "{pin}"\n')
        assert load_config(path).lean.toolchain == pin
    assert FyanConfig(project={"name": "x", "source": "s"}).lean.sandbox == "require"
    with pytest.raises(Exception, match="not a Lean library name"):
        FyanConfig(project={"name": "x", "source": "s", "lean_lib": "Bad\nimport X"})


# -- where a bad value came from ---------------------------------------------------------------

def _project(tmp_path, body: str = ""):
    path = tmp_path / "fyan.toml"
    path.write_text('[project]\nname = "x"\nsource = "s.tex"\n' + body)
    return path


@pytest.mark.parametrize("var, value, key", [
    ("FYAN_SCHEDULER__PARALLELISM", "many", "scheduler.parallelism"),
    ("FYAN_DASHBOARD__PORT", "http", "dashboard.port"),
    ("fyan_audit__threshold", "high", "audit.threshold"),  # read without case, named as set
])
def test_a_bad_environment_value_is_blamed_on_the_variable_not_the_file(tmp_path, monkeypatch, var, value, key):
    path = _project(tmp_path)
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as e:
        load_config(path)
    text = str(e.value)
    assert text.startswith("invalid configuration in the environment (FYAN_* variables override fyan.toml)")
    assert f"{key} (from the environment variable {var}={value!r})" in text
    assert "fyan.toml: invalid configuration" not in text and e.value.hint == f"fix or unset {var}"


def test_the_environment_wins_so_it_is_blamed_even_when_the_file_sets_the_key(tmp_path, monkeypatch):
    path = _project(tmp_path, "[scheduler]\nparallelism = 2\n")
    monkeypatch.setenv("FYAN_SCHEDULER__PARALLELISM", "0")
    with pytest.raises(ConfigError, match=r"FYAN_SCHEDULER__PARALLELISM='0'"):
        load_config(path)


def test_file_and_environment_errors_are_each_named(tmp_path, monkeypatch):
    path = _project(tmp_path, "[dashboard]\nprot = 8080\n")
    monkeypatch.setenv("FYAN_SCHEDULER__ATTEMPTS_PER_STAGE", "x")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    text = str(e.value)
    assert text.startswith(f"invalid configuration in {path} and in the environment")
    assert "dashboard.prot (in fyan.toml, [dashboard] prot): unknown key; did you mean 'port'?" in text
    assert "FYAN_SCHEDULER__ATTEMPTS_PER_STAGE='x'" in text
    assert e.value.hint.startswith(f"edit {path}; fix or unset FYAN_SCHEDULER__ATTEMPTS_PER_STAGE")


@pytest.mark.parametrize("body, near", [
    ("[scheduler]\nparalelism = 3\n", "parallelism"),
    ("[lean]\nlkae = 'x'\n", "lake"),
    ("[agents.stages.prove]\nmodle = 'm'\n", "model"),  # a table under a dict of stages
    ("[schedular]\nparallelism = 3\n", "scheduler"),  # a misspelt section
])
def test_an_unknown_key_names_the_nearest_known_one(tmp_path, body, near):
    with pytest.raises(ConfigError) as e:
        load_config(_project(tmp_path, body))
    assert f"unknown key; did you mean {near!r}?" in str(e.value)
    assert "the keys of" in e.value.hint and near in e.value.hint


def test_an_unknown_key_far_from_every_known_one_gets_no_guess(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config(_project(tmp_path, "[scheduler]\nzzzzqqq = 3\n"))
    assert "zzzzqqq (in fyan.toml, [scheduler] zzzzqqq): unknown key\n" in str(e.value) + "\n"
    assert "did you mean" not in str(e.value)


def test_an_environment_value_that_does_not_decode_is_a_configuration_error(tmp_path, monkeypatch):
    """A list given as plain text: pydantic-settings cannot decode it (not a validation error)."""
    monkeypatch.setenv("FYAN_LEAN__PASS_ENV", "HOME_CACHE")
    with pytest.raises(ConfigError) as e:
        load_config(_project(tmp_path))
    assert "FYAN_LEAN__PASS_ENV='HOME_CACHE' does not decode" in str(e.value)
    assert "given as JSON" in e.value.hint
