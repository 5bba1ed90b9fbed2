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
