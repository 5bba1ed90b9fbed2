"""Fyan's counterexample harness: runs *inside* the sandbox, as ``python -I -S -B harness.py``.

This file is Fyan's program, copied next to a model's ``predicate.py`` in the run folder; it is
written for the standard library only (``-S``: no site packages). What it does:

1. reads ``spec.json`` (written by Fyan: the variables and their value lists, in order);
2. forks. The *child* closes its stdin, installs an audit hook (``sys.addaudithook``: it cannot be
   removed) that ends the child (exit 70) at any attempt to write outside the run folder, to open
   anything under ``/proc`` (however the path is spelled), to open a socket, to start a process or to
   load native code (including an import of a module that does either without an event of its own,
   ``NO_EVENT_MODULES``), then compiles and runs ``predicate.py`` and
   calls ``predicate(**values)`` on each input of the product of the value lists, in order, writing
   one frame per outcome to a pipe (``F i``: returned ``False`` at input ``i``; ``D n``: all ``n``
   held; ``R i msg``: raised; ``N i type``: returned something not a ``bool``; ``S msg``: does not
   compile; ``L msg``: raised while loading; ``V kind detail``: a forbidden action);
3. the *parent* never runs the model's code: it reads a fresh nonce from stdin (after the fork, so
   the child never had it), reads the child's frames, waits for it, and prints one line
   ``FYAN-REFUTE <nonce> <json>`` with the verdict; the witness is the parent's own input ``i``,
   never values the child wrote. A line the program prints cannot carry the nonce.

The sandbox (``fyan.sandbox.runner``: read-only file system except the run folder, no network) holds
whatever the hook misses; the hook turns the attempt into a named verdict.
"""

import itertools
import json
import os
import sys
from typing import Any

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
PATH_EVENTS = ("os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.replace", "os.symlink", "os.link",
               "os.truncate", "os.chmod", "os.chown", "os.utime", "os.chflags", "os.mkfifo", "os.mknod",
               "shutil.rmtree", "shutil.move", "shutil.copyfile", "shutil.copytree")
PROCESS_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                  "os.forkpty", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function",
                  "os.kill", "os.killpg", "os.startfile", "webbrowser.open", "_posixsubprocess")
#: modules that start processes or load native code *without* an audit event of their own
#: (``_posixsubprocess.fork_exec`` raises none, and ``multiprocessing`` spawns through it; ``_ctypes``
#: and the test extensions call C directly): importing one is the attempt (the ``import`` event)
NO_EVENT_MODULES = ("_posixsubprocess", "multiprocessing", "_multiprocessing", "concurrent.futures.process",
                    "_ctypes", "ctypes", "_testcapi", "_testinternalcapi", "_testmultiphase", "_testsinglephase",
                    "_xxsubinterpreters", "_interpreters", "_xxinterpchannels", "_interpchannels", "_interpqueues")


def leave(code=0):
    """End the child, its printed output flushed first (``os._exit`` skips Python's own flush)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the program may have closed or replaced them
            pass
    os._exit(code)


def child(folder, names, lists, out):
    os.close(0)
    os.open(os.devnull, os.O_RDONLY)  # fd 0 again, now /dev/null

    def send(line):
        os.write(out, (line.replace("\n", " ")[:2000] + "\n").encode("utf-8", "replace"))

    def inside(path):
        try:
            real = os.path.realpath(os.path.join(folder, os.fsdecode(path)))
        except (TypeError, ValueError):
            return False
        return real == folder or real.startswith(folder + os.sep)

    def stop(kind, detail):
        send("V %s %s" % (kind, detail))
        leave(70)

    def in_proc(path):
        """Whether ``path`` (as the program gave it: ``//proc``, ``/./proc``, ``../../proc``) is
        ``/proc`` or below, resolved from the run folder."""
        try:
            real = os.path.realpath(os.path.join(folder, os.fsdecode(path)))
        except (TypeError, ValueError):
            return True
        return real == "/proc" or real.startswith("/proc/")

    def hook(event, args):
        if event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            if path is None or isinstance(path, int):
                return
            if in_proc(path):  # another process's fds or memory (the parent's nonce)
                stop("process", "opened %s" % os.fsdecode(path))
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS)
            if writing and not inside(path):
                stop("write", "opened %s for writing" % os.fsdecode(path))
        elif event in PATH_EVENTS:
            for arg in args:
                if isinstance(arg, (str, bytes)) and not inside(arg):
                    stop("write", "%s on %s" % (event, os.fsdecode(arg)))
        elif event == "import" and args and isinstance(args[0], str) and (
                args[0] in NO_EVENT_MODULES or args[0].split(".")[0] in NO_EVENT_MODULES):
            stop("process", "imported %s" % args[0])
        elif event.startswith("socket."):
            stop("network", event)
        elif event in PROCESS_EVENTS or event.startswith("os.exec") or event.startswith("os.spawn"):
            stop("process", event)

    sys.addaudithook(hook)
    try:
        with open(os.path.join(folder, "predicate.py"), encoding="utf-8") as f:
            source = f.read()
        code = compile(source, "predicate.py", "exec")
    except SyntaxError as e:
        send("S line %s: %s" % (e.lineno, e.msg))
        leave()
    except BaseException as e:  # noqa: BLE001 - any failure is the program's
        send("S %s: %s" % (type(e).__name__, e))
        leave()
    space = {"__name__": "refutation", "__builtins__": __builtins__}
    try:
        exec(code, space)
    except BaseException as e:  # noqa: BLE001
        send("L %s: %s" % (type(e).__name__, e))
        leave()
    predicate: Any = space.get("predicate")
    if not callable(predicate):
        send("L predicate.py defines no function predicate(**values)")
        leave()
    count = 0
    for i, values in enumerate(itertools.product(*lists)):
        try:
            answer = predicate(**dict(zip(names, values)))
        except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are the program's too
            send("R %d %s: %s" % (i, type(e).__name__, e))
            leave()
        count += 1
        if answer is False:
            send("F %d" % i)
            leave()
        if answer is not True:
            send("N %d %s" % (i, type(answer).__name__))
            leave()
    send("D %d" % count)
    leave()


def parent(pid, read):
    nonce = sys.stdin.readline().strip()
    chunks = []
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        if sum(len(c) for c in chunks) > 1 << 20:
            break
    _, status = os.waitpid(pid, 0)
    frames = b"".join(chunks).decode("utf-8", "replace").splitlines()
    verdict = {"verdict": "no_verdict", "detail": "the program ended before answering (%s)"
               % ("exit %d" % os.waitstatus_to_exitcode(status))}
    if frames:
        kind, _, rest = frames[0].partition(" ")
        if kind == "F" and rest.isdigit():
            verdict = {"verdict": "false_at", "index": int(rest)}
        elif kind == "D" and rest.isdigit():
            verdict = {"verdict": "holds", "checked": int(rest)}
        elif kind in ("R", "N"):
            index, _, detail = rest.partition(" ")
            verdict = {"verdict": "raised" if kind == "R" else "non_bool",
                       "index": int(index) if index.isdigit() else None, "detail": detail}
        elif kind == "S":
            verdict = {"verdict": "syntax", "detail": rest}
        elif kind == "L":
            verdict = {"verdict": "load", "detail": rest}
        elif kind == "V":
            what, _, detail = rest.partition(" ")
            verdict = {"verdict": "violation", "kind": what, "detail": detail}
        else:
            verdict = {"verdict": "no_verdict", "detail": "unreadable answer %r" % frames[0][:200]}
    sys.stdout.write("\nFYAN-REFUTE %s %s\n" % (nonce, json.dumps(verdict)))
    sys.stdout.flush()


def main():
    folder = os.path.realpath(os.getcwd())
    with open(os.path.join(folder, "spec.json"), encoding="utf-8") as f:
        spec = json.load(f)
    names = [v[0] for v in spec["variables"]]
    lists = [v[1] for v in spec["variables"]]
    sys.stdout.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            child(folder, names, lists, write)
        finally:
            leave()
    os.close(write)
    parent(pid, read)


if __name__ == "__main__":
    main()
