"""Instance ownership from the keys Lean stores (``fyan.lean.policy.foreign_meaning_findings``), on
real Lean 4.35.0 (the core tier, tests/lean_core.py): prelude modules declaring instances are
compiled by the real ``lean``, the keys each instance entry of ``Lean.Meta.instanceExtension`` holds
are read from the ``.olean`` (tests/olean_reader.py), and

* the inspector double's keys (``tests/fakes/instance_keys.py``: beta, ``let``, projections of
  constructors, matches on constructors, reducible definitions, arrows by their domain) are held
  against them, instance by instance;
* the policy, applied to the real keys and the class's ``outParam`` positions real Lean stored in
  ``Lean.classExtension``, refuses the erased-ownership family and admits honest own instances.

What this tier cannot show: the trusted inspector reading the same entries (it needs ``Init``);
``fyan selftest`` runs the cheats ``erased_*_instance``/``out_param_instance`` through it."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from fyan.lean import policy
from tests.fakes import instance_keys
from tests.lean_prelude import HONEST_BASE
from tests.olean_reader import load, name

pytestmark = pytest.mark.lean_core

#: instance → (its type as written, refused?)
CASES = {
    "lambdaLE": ("LE ((fun (_ : Tag) => N) Tag.mk)", True),
    "letLE": ("LE (let _t := Tag.mk; N)", True),
    "optLE": ("LE (optParam N (Tag.zero Tag.mk))", True),
    "nAddTag": ("HAdd N N Tag", True),
    "projLE": ("LE (Box.val (Box.mk N))", True),
    "matchLE": ("LE (match Tag.mk with | Tag.mk => N)", True),
    "dropLE": ("LE (Drop Tag.mk)", True),
    "ignoreLE": ("LE (Ignore N Tag)", True),
    "fnLE": ("LE (N → Tag)", True),
    "fnIgnoreLE": ("LE (N → Ignore N Tag)", True),
    "tagFnWrapLE": ("LE TagFn", False),
    "tagLE": ("LE Tag", False),
    "pairLE": ("LE Pair", False),
    "tagAddN": ("HAdd Tag N N", False),
    "tagFnLE": ("LE (Tag → N)", False),
}

SOURCE = """prelude
import Base
namespace Ctl
inductive Tag where
  | mk : Tag
def Tag.zero (_ : Tag) : N := N.zero
structure Box where
  val : Type
@[reducible] def Drop (_ : Tag) : Type := N
abbrev Ignore (α : Type) (_ : Type) : Type := α
structure S where
  x : N
abbrev Pair := Prod S N
structure TagFn where
  f : N → Tag
""" + "".join(f"instance {n} : {t} := ⟨fun _ _ => {'Tag.mk' if t.endswith('Tag') else 'N.zero'}⟩\n"
              if t.startswith("HAdd") else f"instance {n} : {t} := ⟨fun _ _ => Eq N.zero N.zero⟩\n"
              for n, (t, _) in CASES.items()) + "end Ctl\n"

#: ``DiscrTree.Key`` constructors as real 4.35.0 lays them out in an ``.olean`` (observed: ``const``
#: is constructor 4 with the name and the arity; ``star`` the boxed 0, ``other`` the boxed 1,
#: ``arrow`` the boxed 5)
BOXED = {0: "star", 1: "other", 5: "arrow"}


def _compile(lean, folder, stem, text):
    (folder / f"{stem}.lean").write_text(text)
    proc = subprocess.run([str(lean), "-R", str(folder), "-o", str(folder / f"{stem}.olean"), "--json",
                           str(folder / f"{stem}.lean")], capture_output=True, text=True, timeout=120, cwd=folder,
                          env={"LEAN_PATH": str(folder), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return folder / f"{stem}.olean"


def _entries(olean, extension):
    root = load(olean)[0]
    return next((e[2][1] for e in root[2][4] if name(e[2][0]) == extension), [])


def _key(k, own_module):
    if k[0] == "box":
        return {"kind": BOXED[k[1]], "name": "", "module": "", "arity": 1 if BOXED[k[1]] == "arrow" else 0}
    assert k[1] == 4, f"a key kind this test does not read: {k}"
    n = name(k[2][0])
    return {"kind": "const", "name": n, "module": own_module if n.startswith("Ctl.") else "Base", "arity": k[2][1][1]}


@pytest.fixture(scope="module")
def stored(core_lean, tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    base = _compile(core_lean, folder, "Base", HONEST_BASE)
    olean = _compile(core_lean, folder, "Keys", SOURCE)
    out = {}
    for entry in _entries(olean, "Lean.Meta.instanceExtension"):
        ie = entry[2][0]
        out[name(ie[2][3][2][0]).removeprefix("Ctl.")] = [_key(k, "Ctl.Keys") for k in ie[2][0]]
    classes = {name(e[2][0]): [p[1] for p in e[2][1]] for e in _entries(base, "Lean.classExtension")}
    assert classes["HAdd"] == [2] and classes["LE"] == [], classes
    return out, classes


def _double_scope():
    own = {"Tag": "Ctl.Tag", "Tag.mk": "Ctl.Tag.mk", "Tag.zero": "Ctl.Tag.zero", "Box": "Ctl.Box", "Box.mk": "Ctl.Box.mk",
           "Box.val": "Ctl.Box.val", "Drop": "Ctl.Drop", "Ignore": "Ctl.Ignore", "S": "Ctl.S", "Pair": "Ctl.Pair",
           "TagFn": "Ctl.TagFn"}
    return instance_keys.Scope(reducible={"Ctl.Drop": (["_x"], "N"), "Ctl.Ignore": (["α", "_y"], "α"),
                                          "Ctl.Pair": ([], "Prod S N")},
                               structures={"Ctl.Box": ["val"], "Ctl.S": ["x"], "Ctl.TagFn": ["f"]},
                               constructors={"Ctl.Box.mk": "Ctl.Box", "Ctl.Tag.mk": "Ctl.Tag", "Ctl.S.mk": "Ctl.S"},
                               resolve=lambda n: own.get(n, n))


@pytest.mark.parametrize("instance", sorted(CASES))
def test_the_double_keys_an_instance_as_real_lean_stores_it(stored, instance):
    real, _ = stored
    double = instance_keys.keys(CASES[instance][0], _double_scope())
    assert [(k["kind"], k["name"], k["arity"]) for k in double] == [
        (k["kind"], k["name"], k["arity"]) for k in real[instance]]


@pytest.mark.parametrize("instance", sorted(CASES))
def test_ownership_is_decided_from_the_stored_keys(stored, instance):
    real, classes = stored
    keys = real[instance]
    reg = SimpleNamespace(kind="instance", declaration=f"Ctl.{instance}", scoped=False,
                          keys=[SimpleNamespace(**k) for k in keys], out_params=classes.get(keys[0]["name"], []))
    found = policy.foreign_meaning_findings(SimpleNamespace(registrations=[reg]), "Ctl")
    refused = CASES[instance][1]
    assert bool(found) == refused, found
    if refused:
        assert found[0].startswith(f"Ctl.{instance}: an instance about N, which Ctl does not own")


def test_a_function_type_is_keyed_by_its_domain_so_an_own_codomain_cannot_be_told_from_a_foreign_one(stored):
    """Real 4.35.0 stores ``LE (N → Tag)`` and ``LE (N → Ignore N Tag)`` (a foreign ``LE (N → N)``)
    under the same keys — the class, ``arrow``, the domain — so ownership cannot be read from them
    and both are refused, with the remedy an own wrapper structure (``LE TagFn``, admitted) gives."""
    real, classes = stored
    assert real["fnLE"] == real["fnIgnoreLE"]
    assert [k["kind"] for k in real["fnLE"]] == ["const", "arrow", "const"]
    reg = SimpleNamespace(kind="instance", declaration="Ctl.fnLE", scoped=False,
                          keys=[SimpleNamespace(**k) for k in real["fnLE"]], out_params=[])
    found = policy.foreign_meaning_findings(SimpleNamespace(registrations=[reg]), "Ctl")
    assert "to do: state it on an own structure wrapping the function" in found[0]
    tag = SimpleNamespace(kind="instance", declaration="Ctl.tagLE", scoped=False,
                          keys=[SimpleNamespace(**k) for k in real["nAddTag"]], out_params=classes["HAdd"])
    assert "to do: state it on an own type, or declare it" in policy.foreign_meaning_findings(
        SimpleNamespace(registrations=[tag]), "Ctl")[0]
