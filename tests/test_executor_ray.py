"""The Ray backend on a one-machine Ray cluster, from the suite's own command.

Outside a network namespace Ray binds the machine's external address, so the cases in
``tests/ray_cluster/cluster_cases.py`` run in a child pytest inside a private network namespace
with only loopback (``unshare -n``, then ``ip link set lo up``; Ray then uses 127.0.0.1), with
``RAY_USAGE_STATS_ENABLED=0``. The child runs once for this module (one cluster, ~15 s to
start); each case here reports one case of the child. Skipped, with the reason, when Ray is not
installed (``pip install -e '.[ray]'``; ``.ci/run`` installs it) or namespaces cannot be made.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import ROOT

CASES = [
    "test_example_on_ray_ends_as_on_local_and_builds_only_on_lean_nodes",
    "test_removing_a_node_during_a_run_loses_and_duplicates_nothing",
    "test_a_worker_that_cannot_import_its_inputs_fails_the_attempt_for_the_environment",
]
INNER = ROOT / "tests" / "ray_cluster" / "cluster_cases.py"


def _unavailable() -> str | None:
    if importlib.util.find_spec("ray") is None:
        return "ray is not installed (pip install -e '.[ray]'; .ci/run installs it)"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs `unshare` and `ip` to run Ray in a private network namespace"
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot make a private network namespace here (unshare -n: {probe.stderr.strip() or probe.returncode})"
    return None


@pytest.fixture(scope="module")
def child(tmp_path_factory):
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("ray-child")
    junit = out / "junit.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FYAN_", "FAKE_LAKE_", "RAY_"))}
    env.update(RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "instruments_site")]))
    inner = (f"ip link set lo up && exec {sys.executable} -m pytest -q -p no:cacheprovider "
             f"--junitxml={junit} --basetemp={out / 'tmp'} {INNER}")
    proc = subprocess.run(["unshare", "-n", "sh", "-c", inner], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    results: dict[str, str | None] = {}
    if junit.is_file():
        for case in ET.parse(junit).getroot().iter("testcase"):
            problem = case.find("failure")
            problem = problem if problem is not None else case.find("error")
            skipped = case.find("skipped")
            if problem is not None:
                results[case.get("name", "")] = (problem.get("message") or "") + "\n" + (problem.text or "")
            elif skipped is not None:
                results[case.get("name", "")] = "skipped: " + (skipped.get("message") or "")
            else:
                results[case.get("name", "")] = None
    return proc, results


def test_the_child_ran_exactly_these_cases(child):
    proc, results = child
    assert sorted(results) == sorted(CASES), proc.stdout[-4000:] + proc.stderr[-4000:]


@pytest.mark.parametrize("case", CASES)
def test_cluster_case(child, case):
    proc, results = child
    assert case in results, f"{case} did not run:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert results[case] is None, results[case]
