"""Test double of the toolchain's ``lean`` executable, for the plain-``lean`` build path.

No full Lean toolchain runs in CI. This stands in for ``lean`` as ``fyan.lean.compile`` calls it,
following the rows of ``docs/lean-contract.md`` ("Compiling a module") that the real core Lean
4.35.0 confirmed in ``tests/test_compile.py``:

* ``lean --version`` / ``--githash`` / ``--print-prefix`` (the prefix is the folder above the
  double's ``bin/``); ``lean --stats FILE``: its imports looked up on ``LEAN_PATH`` like a compile's, then one
  ``extension '<name>'`` line per registered persistent extension (``stats``: the registry real
  4.35.0 printed, ``tests/fixtures/lean-registry/``, what the inspector double reports, and what the
  scenario says an imported library registers), as real Lean lists them;
* ``lean -R <root> -o <olean> -i <ilean> --json [-D k=v …] <file>``: the module name is the
  file's path below ``-R``; each ``import`` is looked up in ``LEAN_PATH`` order (first folder
  holding it wins; ``Init``, ``Mathlib`` and the other toolchain/dependency libraries are not
  modelled), failing with Lean's messages when missing (``unknown module prefix 'X'`` when no
  folder has the first component, ``object file '…' of module X does not exist`` otherwise) or
  when the stand-in was written by another build (``failed to read file '…', incompatible
  header``); the output folder is not created (``failed to write '…'``, exit 1); an unknown
  ``-D`` option (outside ``KNOWN_OPTIONS``) is an error; messages are one JSON object per line
  with Lean's fields; a ``sorry`` (outside comments, unless ``set_option warn.sorry false``) is a
  ``hasSorry`` warning; nothing is written when an error was reported; on success the ``.olean``
  is a stand-in (JSON: the module, its source, the build's git hash) read by the inspector double
  (``fake_inspector.py``), and the ``.ilean`` a stub.

``lean --server [-D k=v …]`` is Lean's language server as ``fyan.lean.lsp`` speaks to it,
over the same JSON-RPC framing (``python-lsp-jsonrpc``), following the rows of
``docs/lean-contract.md`` ("The language server") that the real core Lean 4.35.0 confirmed in
``tests/test_lean_server.py``: ``initialize`` (then a ``client/registerCapability`` request, as the
watchdog sends), ``didOpen``/``didChange`` with the full text, then ``$/lean/fileProgress`` with
one processing range, ``$/lean/fileProgress`` with none (kind 2 ``fatalError`` when an import is
missing), then ``textDocument/publishDiagnostics`` of that version (the reporter's order when it
never blocked), ``textDocument/waitForDiagnostics`` answered after them, ``$/lean/plainGoal``
(null: the double has no tactic state) and ``$/lean/plainTermGoal`` at a ``sorry`` token (the
goal is a stand-in: ``⊢`` and the declaration's stated type), ``textDocument/hover`` (null),
``#check NAME`` lines answered from the scenario's ``constants`` (``_check_lines``),
``shutdown``/``exit``. The header is
"imported" (looked up on ``LEAN_PATH`` as a compile does) once per header, sleeping
``server.import_s``; diagnostics are the compile's (sorry warnings, missing imports) plus, for a
failing ``build`` scenario, its ``output`` lines ``error: <file>:<line>:<col>: <text>`` (the
module a ``build_only`` list names is the document's first ``namespace`` + ``.Basic``: the
document is one fixed file). ``server.header_error``: the header fails with that message (what a
module missing only from the server's view looks like). ``server.crash_file``: when that file exists, it is removed and the
server dies (SIGKILL) before answering the next elaboration. Each elaboration is logged as
``["lean", "--server", "elaborate", <module>]``.

A file of an SA-Pass module (``FyanShadow_…``) is answered from the recorded outcomes named by
``FYAN_FAKE_LEAN_OUTCOMES`` when set (``fake_lean_env.py``: the demo's authored expectations),
after its ``import FyanShadow_…`` lines (a checker importing the compiled candidate) are looked up
on ``LEAN_PATH`` as above.

Scenario overrides come from ``FYAN_FAKE_SCENARIO`` (``fake_lake.py``): ``build`` (``exit``,
``output`` with ``@MODULE@``/``@FILE@``, ``sleep``, ``signal``, ``write_olean`` false: exit as
told without writing the ``.olean``; ``times``: only the first so many compiles) and ``build_only`` (modules it
applies to), ``build_hook`` (a program run during the compile, in the source root, as
compile-time code of a candidate could), ``sorry_warnings`` (default true), ``lean_githash``
(what this build calls itself), ``lean_version``. Calls are appended to ``FYAN_FAKE_LOG`` and
each compilation to ``FYAN_FAKE_COMPILES`` (module, output root) when set.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_lake import LEAN_VERSION as VERSION  # noqa: E402  (the double's one toolchain version)
from fake_lake import behave, imports_of, limited, log, scenario  # noqa: E402

GITHASH = "f00dfeedf00dfeedf00dfeedf00dfeedf00dfeed"
#: ``-D`` options the double knows (Lean knows many more; an unknown one is an error, as in Lean)
KNOWN_OPTIONS = {"autoImplicit", "relaxedAutoImplicit", "maxHeartbeats", "maxRecDepth", "linter.all",
                 "warningAsError", "pp.all", "weak.linter.mathlibStandardSet"}
#: first components of the toolchain's and common dependencies' modules (not modelled)
LIBRARIES = ("Init", "Std", "Lean", "Lake", "Mathlib", "Batteries", "Aesop", "Qq", "Plausible", "ProofWidgets")


def githash(sc: dict) -> str:
    return sc.get("lean_githash", GITHASH)


def message(file: str, line: int, col: int, severity: str, data: str, kind: str = "[anonymous]",
            end: tuple[int, int] | None = None) -> str:
    return json.dumps({"caption": "", "data": data,
                       "endPos": {"column": end[1], "line": end[0]} if end else None, "fileName": file,
                       "isSilent": False, "keepFullRange": False, "kind": kind,
                       "pos": {"column": col, "line": line}, "severity": severity}, ensure_ascii=False)


def lean_path() -> list[Path]:
    return [Path(p) for p in os.environ.get("LEAN_PATH", "").split(os.pathsep) if p]


def find_import(module: str, file: str, sc: dict) -> str | None:
    """None when ``module`` is found on ``LEAN_PATH`` with this build's header, else the error
    message Lean prints (docs/lean-contract.md rows read on Lean 4.35.0)."""
    parts = module.split(".")
    rel = Path(*parts).with_suffix(".olean")
    folders = lean_path()
    hit = next((d / rel for d in folders if (d / rel).is_file()), None)
    if hit is None:
        if not any((d / parts[0]).is_dir() or (d / f"{parts[0]}.olean").is_file() for d in folders):
            entries = "\n".join(str(d) for d in folders)
            return (f"unknown module prefix '{parts[0]}'\n\nNo directory '{parts[0]}' or file '{parts[0]}.olean' "
                    f"in the search path entries:\n{entries}")
        first = next((d for d in folders if (d / parts[0]).is_dir()), folders[0])
        return f"object file '{first / rel}' of module {module} does not exist"
    try:
        data = json.loads(hit.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return f"failed to read file '{hit}', invalid header"
    if data.get("githash", GITHASH) != githash(sc):
        return f"failed to read file '{hit}', incompatible header"
    return None


def strip_comments(text: str) -> str:
    text = re.sub(r"/-.*?-/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    return "\n".join(line.split("--")[0] for line in text.splitlines())


def compile_file(args: list[str], sc: dict) -> int:
    root, olean, ilean, options, file = Path.cwd(), None, None, [], None
    it = iter(args)
    for a in it:
        if a in ("-R", "--root"):
            root = Path(next(it))
        elif a.startswith("--root="):
            root = Path(a.split("=", 1)[1])
        elif a == "-o":
            olean = Path(next(it))
        elif a == "-i":
            ilean = Path(next(it))
        elif a == "-D":
            options.append(next(it))
        elif a.startswith("-D"):
            options.append(a[2:])
        elif a == "--json":
            pass
        elif a.endswith(".lean"):
            file = Path(a)
    assert file is not None, "fake lean: no input file"
    shown = str(file)
    for opt in options:
        if "=" not in opt:
            print("error: invalid -D parameter, argument must contain '='", file=sys.stderr)
            return 1
        if opt.split("=", 1)[0] not in KNOWN_OPTIONS:
            print(message("<input>", 1, 0, "error", f"invalid -D parameter, unknown configuration option "
                                                    f"'{opt.split('=', 1)[0]}'"))
            return 1
    module = ".".join(file.resolve().relative_to(root.resolve()).with_suffix("").parts)
    if module.startswith("FyanShadow_") and os.environ.get("FYAN_FAKE_LEAN_OUTCOMES"):
        import fake_lean_env  # an SA-Pass file: its recorded outcome (fake_lean_env.py)

        for imp in imports_of(file.read_text(encoding="utf-8")):  # a checker imports the candidate's module
            problem = find_import(imp, shown, sc) if imp.startswith("FyanShadow_") else None
            if problem is not None:
                print(message(shown, 1, 0, "error", problem))
                return 1
        return fake_lean_env.compile_file(file, olean)
    spec = sc.get("build", {})
    if sc.get("build_only") and module not in sc["build_only"]:
        spec = {}
    spec = limited(spec, "build")
    behave(spec)
    if sc.get("build_hook") and (not sc.get("build_only") or module in sc["build_only"]):
        subprocess.run([sc["build_hook"]], check=False, cwd=root)
    text = file.read_text(encoding="utf-8")
    if "output" in spec:
        print(spec["output"].replace("@MODULE@", module).replace("@FILE@", shown))
        code = int(spec.get("exit", 0))
        if code == 0 and olean is not None and olean.parent.is_dir() and spec.get("write_olean", True):
            _write(olean, ilean, module, text, sc)
        return code
    for imp in imports_of(text):
        if imp.split(".")[0] in LIBRARIES:
            continue
        problem = find_import(imp, shown, sc)
        if problem is not None:
            print(message(shown, 1, 0, "error", problem))
            return 1
    warnings = []
    if sc.get("sorry_warnings", True) and "set_option warn.sorry false" not in text:
        for n, line in enumerate(strip_comments(text).splitlines(), start=1):
            m = re.search(r"\bsorry\b", line)
            if m:
                warnings.append(message(shown, n, m.start(), "warning", "declaration uses `sorry`", "hasSorry",
                                        (n, m.end())))
    for w in warnings:
        print(w)
    code = int(spec.get("exit", 0))
    if code == 0 and olean is not None:
        if not olean.parent.is_dir():
            print(f"failed to write '{olean}': failed to create file", file=sys.stderr)
            return 1
        _write(olean, ilean, module, text, sc)
    return code


def _write(olean: Path, ilean: Path | None, module: str, text: str, sc: dict) -> None:
    olean.write_text(json.dumps({"fake_olean": 1, "module": module, "source": text, "githash": githash(sc)}))
    if ilean is not None:
        ilean.write_text(json.dumps({"version": 1, "module": module}))
    compiled = os.environ.get("FYAN_FAKE_COMPILES")
    if compiled:
        try:
            with open(compiled, "a") as fh:
                fh.write(json.dumps({"module": module, "package": str(olean.parent.resolve())}) + "\n")
        except OSError:
            pass


_LAKE_ERROR = re.compile(r"^error: (?:\S+?):(\d+):(\d+): (.*)$")


def server_diagnostics(text: str, sc: dict) -> tuple[list[dict], bool, str]:
    """(LSP diagnostics, whether the header failed, the stand-in module name) of ``text``."""
    ns = re.search(r"(?m)^namespace\s+(\S+)", text)
    module = f"{ns.group(1)}.Basic" if ns else "Warm"
    out: list[dict] = []

    def diag(line: int, col: int, severity: int, message: str, end_col: int | None = None) -> dict:
        rng = {"start": {"line": line - 1, "character": col},
               "end": {"line": line - 1, "character": end_col if end_col is not None else col}}
        return {"range": rng, "fullRange": rng, "severity": severity, "message": message, "source": "Lean 4"}

    if sc.get("server", {}).get("header_error"):  # the header fails as a missing import makes it fail
        return [diag(1, 0, 1, sc["server"]["header_error"])], True, module
    for imp in imports_of(text):
        if imp.split(".")[0] in LIBRARIES:
            continue
        problem = find_import(imp, "Warm.lean", sc)
        if problem is not None:
            return [diag(1, 0, 1, problem)], True, module
    spec = sc.get("build", {})
    if sc.get("build_only") and module not in sc["build_only"]:
        spec = {}
    if int(spec.get("exit", 0)) != 0:
        found = False
        for line in str(spec.get("output", "")).splitlines():
            m = _LAKE_ERROR.match(line.strip())
            if m:
                out.append(diag(int(m.group(1)), int(m.group(2)), 1, m.group(3)))
                found = True
        if not found:
            out.append(diag(1, 0, 1, (str(spec.get("output", "")).strip().splitlines() or ["error"])[0]))
    out += _check_lines(text, sc, diag)
    if sc.get("sorry_warnings", True) and "set_option warn.sorry false" not in text:
        for n, line in enumerate(strip_comments(text).splitlines(), start=1):
            m = re.search(r"\bsorry\b", line)
            if m:
                out.append(diag(n, m.start(), 2, "declaration uses `sorry`", m.end()))
    return out, False, module


def _imported_declarations(modules: list[str]) -> set[str]:
    """Full names declared by the modules the header imports and what they import, read from
    the double's ``.olean`` files on ``LEAN_PATH`` (their recorded source, scanned as the fake
    inspector scans it)."""
    from fyan.lean.declarations import scan

    seen: set[str] = set()
    names: set[str] = set()
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        rel = Path(*module.split(".")).with_suffix(".olean")
        hit = next((d / rel for d in lean_path() if (d / rel).is_file()), None)
        try:
            source = json.loads(hit.read_text()).get("source", "") if hit is not None else ""
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        names |= {d.full_name for d in scan(source) if d.full_name}
        todo += imports_of(source)
    return names


def _check_lines(text: str, sc: dict, diag) -> list[dict]:
    """``#check NAME`` lines (the prover's ``lean_lookup`` probe), answered as the real core Lean
    4.35.0 answers them (docs/lean-contract.md, "The language server": ``#check`` of a constant):
    an information message at the line, the signature beginning with the *full* name, the name
    resolved through the ``open`` lines and the ``namespace`` above it; else the error ``Unknown
    identifier `NAME` ``. The environment's constants are the scenario's ``constants`` and the
    declarations of the imported modules (``_imported_declarations``)."""
    constants = set(sc.get("constants", [])) | _imported_declarations(imports_of(text))
    opened: list[str] = []
    out = []
    for n, line in enumerate(text.split("\n"), start=1):
        if m := re.match(r"^\s*(?:open|namespace)\s+(.+)$", line):
            opened += m.group(1).split()
            continue
        m = re.match(r"^#check\s+(\S+)\s*$", line)
        if not m:
            continue
        name = m.group(1)
        tried = [name[len("_root_."):]] if name.startswith("_root_.") else [name] + [f"{o}.{name}" for o in opened]
        full = next((c for c in tried if c in constants), None)
        if full is None:
            out.append(diag(n, 0, 1, f"Unknown identifier `{name}`", len(line)))
        else:
            out.append(diag(n, 0, 3, f"{full} : Prop", len("#check")))
    return out


def serve(args: list[str], sc: dict) -> int:
    """``lean --server`` (module docstring)."""
    import time

    from pylsp_jsonrpc.streams import JsonRpcStreamReader, JsonRpcStreamWriter

    writer = JsonRpcStreamWriter(sys.stdout.buffer)
    opts = sc.get("server", {})
    state: dict = {"header": None, "docs": {}}

    def send(method: str, params) -> None:
        writer.write({"jsonrpc": "2.0", "method": method, "params": params})

    def answer(msg_id, result) -> None:
        writer.write({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def elaborate(uri: str, version: int, text: str) -> None:
        crash = opts.get("crash_file")
        if crash and os.path.exists(crash):
            os.unlink(crash)
            os.kill(os.getpid(), signal.SIGKILL)
        header = "\n".join(imports_of(text))
        if header != state["header"]:
            state["header"] = header
            time.sleep(float(opts.get("import_s", 0)))
        lines = text.split("\n")
        end = {"line": len(lines), "character": 0}
        send("$/lean/fileProgress", {"textDocument": {"uri": uri, "version": version},
                                     "processing": [{"range": {"start": {"line": 0, "character": 0}, "end": end},
                                                     "kind": 1}]})
        diags, fatal, module = server_diagnostics(text, sc)
        log(["lean", "--server", "elaborate", module])
        time.sleep(float(opts.get("elaborate_s", 0)))
        send("$/lean/fileProgress", {"textDocument": {"uri": uri, "version": version}, "processing": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "kind": 2}]
            if fatal else []})
        send("textDocument/publishDiagnostics", {"uri": uri, "version": version, "diagnostics": diags})
        state["docs"][uri] = text

    def term_goal(uri: str, pos: dict):
        lines = state["docs"].get(uri, "").split("\n")
        line = lines[pos["line"]] if pos["line"] < len(lines) else ""
        if not line[pos["character"]:].startswith("sorry"):
            return None
        stated = re.search(r":\s*(.*?)\s*:=", line)
        return {"goal": "⊢ " + (stated.group(1) if stated else "?"),
                "range": {"start": pos, "end": {"line": pos["line"], "character": pos["character"] + 5}}}

    def handle(msg: dict) -> None:
        method, params, msg_id = msg.get("method"), msg.get("params") or {}, msg.get("id")
        if method is None:
            return  # a response to our request
        if method == "initialize":
            answer(msg_id, {"capabilities": {"textDocumentSync": {"openClose": True, "change": 1}},
                            "serverInfo": {"name": "Lean 4 Server (Fyan test double)", "version": VERSION}})
        elif method == "initialized":
            writer.write({"jsonrpc": "2.0", "id": "register-1", "method": "client/registerCapability",
                          "params": {"registrations": []}})
        elif method == "textDocument/didOpen":
            doc = params["textDocument"]
            elaborate(doc["uri"], doc["version"], doc["text"])
        elif method == "textDocument/didChange":
            doc = params["textDocument"]
            elaborate(doc["uri"], doc["version"], params["contentChanges"][-1]["text"])
        elif method == "textDocument/waitForDiagnostics":
            answer(msg_id, {})
        elif method == "$/lean/plainGoal":
            answer(msg_id, None)
        elif method == "$/lean/plainTermGoal":
            answer(msg_id, term_goal(params["textDocument"]["uri"], params["position"]))
        elif method == "textDocument/hover":
            answer(msg_id, None)  # no hover text: a lookup's module then comes from the declaration index
        elif method == "shutdown":
            answer(msg_id, None)
        elif method == "exit":
            sys.stdout.flush()
            os._exit(0)
        elif msg_id is not None:
            writer.write({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"no {method}"}})

    JsonRpcStreamReader(sys.stdin.buffer).listen(handle)
    return 0


#: the registry real Lean 4.35.0 printed (``tests/fixtures/lean-registry/lean-4.35.0.txt``, recorded
#: with ``lean --stats`` on the core tier; its first line names the source)
RECORDED_REGISTRY = Path(__file__).resolve().parents[1] / "fixtures" / "lean-registry" / "lean-4.35.0.txt"
#: the toolchain's own libraries: imported from its prefix, not looked up on ``LEAN_PATH``
TOOLCHAIN_LIBRARIES = ("Init", "Std", "Lean", "Lake")


def stats(args: list[str], sc: dict) -> int:
    """``lean --stats FILE`` (docs/lean-contract.md, the row of ``lean --stats``): the file's
    imports are looked up on ``LEAN_PATH`` as a compile's are (``find_import``; the toolchain's
    own libraries are not), a missing one failing as Lean fails; then one ``extension '<name>'``
    line per registered persistent extension: the recorded registry of real Lean 4.35.0, the
    extensions the inspector double can report, and, per imported library, the names the
    scenario's ``registry_imported`` (library → names) says its modules register when loaded
    (what Mathlib's ``initialize`` declarations add), then ``registry_extra``."""
    from fake_inspector import REGISTRY

    file = next((a for a in args if not a.startswith("-")), None)
    text = Path(file).read_text(encoding="utf-8") if file else ""
    imports = re.findall(r"(?m)^import\s+([\w.]+)", strip_comments(text))
    registered = [line for line in RECORDED_REGISTRY.read_text(encoding="utf-8").splitlines()[1:] if line]
    registered += [n for n in REGISTRY if n not in registered]
    by_library = sc.get("registry_imported", {})
    for module in imports:
        library = module.split(".")[0]
        if library in TOOLCHAIN_LIBRARIES:
            continue
        error = find_import(module, file or "", sc)
        if error is not None:
            print(f"{file}:1:0: error: {error}")
            return 1
        registered += [n for n in by_library.get(library, []) if n not in registered]
    for name in [*registered, *sc.get("registry_extra", [])]:
        print(f"extension '{name}'")
        print("  number of imported entries: 0")
    return 0


def main(argv: list[str]) -> int:
    log(["lean", *argv])
    sc = scenario()
    if argv[:1] == ["--server"]:
        return serve(argv[1:], sc)
    if argv[:1] in (["--version"], ["-v"]):
        print(f"Lean (version {sc.get('lean_version', VERSION)}, x86_64-unknown-linux-gnu, commit {githash(sc)[:12]}, "
              "Release) [Fyan test double]")
        return 0
    if argv[:1] in (["--githash"], ["-g"]):
        print(githash(sc))
        return 0
    if argv[:1] == ["--stats"]:
        return stats(argv[1:], sc)
    if argv[:1] == ["--print-prefix"]:
        print(Path(__file__).resolve().parent if os.environ.get("FAKE_LEAN_PREFIX") is None
              else os.environ["FAKE_LEAN_PREFIX"])
        return 0
    return compile_file(argv, sc)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raise SystemExit(main(sys.argv[1:]))
