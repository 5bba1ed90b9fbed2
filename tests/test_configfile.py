"""``fyan.toml`` is written as data (``fyan.configfile``, tomlkit): any string value written by
``fyan init``, ``fyan adopt`` or ``fyan upgrade`` reads back equal through ``tomllib`` (the reader
``fyan.config`` uses), comments a person wrote are kept, and ``fyan init`` writes a header that
names a file of this installation and, with ``--lean-project``, the package's toolchain pin."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from fyan.adopt.package import LakePackage
from fyan.commands.init import config_text
from fyan.configfile import document, set_keys
from fyan.lean.mathlib import choose_library
from fyan.orchestrator.upgrade import set_lean_keys

#: every Unicode scalar value (surrogates cannot be encoded, in TOML or UTF-8)
TEXT = st.text(st.characters(exclude_categories=("Cs",)))
KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,10}", fullmatch=True)

HAND_WRITTEN = """# my project: keep this comment
[project]
name = "mine"   # and this one
source = "source/main.tex"

[lean]
# the pin we agreed on
toolchain = "leanprover/lean4:v4.30.0"
"""


def init_args(**kw) -> argparse.Namespace:
    values = {"unknown_references": None, "strict": False, "cycles": None, "tolerant": False, "provider": None,
              "model": None, "base_url": None, "agent_command": None}
    values.update(kw)
    return argparse.Namespace(**values)


@settings(max_examples=200, deadline=None)
@given(name=TEXT, source=TEXT, command=st.lists(TEXT, max_size=4))
def test_any_string_fyan_init_writes_reads_back_equal(name, source, command):
    """Quotes, backslashes, newlines, DEL and other control characters included (a TOML basic string
    may hold none of them raw)."""
    args = init_args(provider="command", agent_command=None)
    text = config_text(args, name, source, choose_library(), None)
    data = tomllib.loads(text)
    assert data["project"] == {"name": name, "source": source}
    text = document([], [("agents.default", [], {"provider": "command", "command": command})])
    assert tomllib.loads(text)["agents"]["default"]["command"] == command


@settings(max_examples=200, deadline=None)
@given(values=st.dictionaries(KEYS, TEXT, max_size=4), table=st.sampled_from(["lean", "adopt", "agents.default"]))
def test_keys_set_in_a_hand_written_file_read_back_and_its_comments_stay(values, table):
    text = set_keys(HAND_WRITTEN, table, values)
    data = tomllib.loads(text)
    node = data
    for part in table.split("."):
        node = node[part]
    assert {k: node[k] for k in values} == values
    for comment in ("# my project: keep this comment", "# and this one", "# the pin we agreed on"):
        assert comment in text
    assert data["project"] == {"name": "mine", "source": "source/main.tex"}
    if table == "lean" and "toolchain" not in values:
        assert node["toolchain"] == "leanprover/lean4:v4.30.0"


@settings(max_examples=100, deadline=None)
@given(toolchain=TEXT, mathlib=TEXT)
def test_fyan_upgrade_sets_any_pin_and_keeps_the_rest(toolchain, mathlib):
    text = set_lean_keys(HAND_WRITTEN, {"toolchain": toolchain, "mathlib": mathlib})
    assert tomllib.loads(text)["lean"] == {"toolchain": toolchain, "mathlib": mathlib}
    assert "# the pin we agreed on" in text
    added = set_lean_keys('[project]\nname = "x"\nsource = "s.tex"\n', {"toolchain": toolchain})
    assert tomllib.loads(added)["lean"] == {"toolchain": toolchain}


def test_the_header_names_a_file_of_this_installation():
    text = config_text(init_args(), "p", "source/a.tex", choose_library(), None)
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    named = re.search(r"(/\S+fyan\.example\.toml)", header)
    assert named is not None, header
    assert Path(named.group(1)).is_file()
    assert tomllib.loads(Path(named.group(1)).read_text(encoding="utf-8"))["lean"]  # the documented keys


def test_init_with_a_lean_project_writes_the_packages_toolchain_pin(tmp_path):
    package = LakePackage(folder=tmp_path / 'pkg "quoted"', name="tiny", libs=["Tiny"], pin="leanprover/lean4:v4.31.0")
    data = tomllib.loads(config_text(init_args(), "p", "source/a.tex", None, package))
    assert data["lean"] == {"toolchain": "leanprover/lean4:v4.31.0"}
    assert data["adopt"] == {"package": str(tmp_path / 'pkg "quoted"'), "package_name": "tiny"}
    assert "mathlib" not in data["lean"]  # an adopted package brings its own Mathlib through its requires
    plain = tomllib.loads(config_text(init_args(), "p", "source/a.tex", choose_library(), None))
    assert plain["lean"]["toolchain"] == choose_library().toolchain and "adopt" not in plain


def test_no_model_section_keeps_its_guidance_as_comments():
    text = config_text(init_args(), "p", "source/a.tex", choose_library(), None)
    assert tomllib.loads(text)["agents"]["default"] == {"provider": "none"}
    assert '#   provider = "anthropic"' in text and "No model is configured yet" in text
