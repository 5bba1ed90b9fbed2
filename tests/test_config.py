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
    assert "lean.timout: unknown key" in text
    assert "scheduler.parallelism: Input should be greater than or equal to 1" in text


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
