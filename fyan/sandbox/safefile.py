"""Reading, copying and replacing files an agent could have written.

Every file in a workspace, an attempt folder, a unit folder or a submission folder may have been
put there by a model-driven process, and a *name* says nothing about what is behind it: a FIFO
(``mkfifo lakefile.toml``) blocks whoever opens it, a device node (``/dev/zero`` through a link,
or ``mknod``) never ends, a sparse file of 10 GiB costs 10 GiB of memory to read whole, a link
points anywhere, a directory can carry the file's name. So nothing of Fyan opens such a file with
``open``/``read_text``/``shutil.copyfile``; it uses this module:

* ``read_bytes``/``read_text``: ``lstat`` first (a link, a FIFO, a socket, a device or a folder is
  refused without being opened), then ``open`` with ``O_NOFOLLOW | O_NONBLOCK`` (a link or FIFO
  swapped in meanwhile is refused or never blocks), ``fstat`` of what was opened (a regular file,
  the same inode as the ``lstat``, at most the size cap), then at most cap + 1 bytes are read;
* ``write_bytes``/``write_text``: a temporary file in the same folder renamed over the name, so an
  existing FIFO, device or link there is replaced, never opened; a folder of that name is removed
  first (``replace_folder``, for names Fyan owns, e.g. a workspace's ``lakefile.toml``);
* ``copy_file``: ``read_bytes`` then ``write_bytes``;
* ``open_append``: a log Fyan appends to in a folder a confined process writes (a warm server's
  ``server.log``): opened with ``O_NOFOLLOW | O_NONBLOCK`` and kept only when ``fstat`` says a
  regular file; a link, FIFO, device, socket or folder of that name is removed, never opened;
* ``is_regular``: ``lstat`` says a regular file.

Errors are ``UnsafeFile`` (an ``OSError``: callers that fail closed on ``OSError`` keep doing so)
whose message names the path and what it is. The size cap is ``limit`` bytes per call, by default
``default_limit()``: ``[lean] max_file_mb`` of the project's configuration (``configure``; 64 MiB
when unset).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

#: the cap when no configuration set one (bytes)
FALLBACK_LIMIT = 64 * 1024 * 1024
_limit = FALLBACK_LIMIT

_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder", stat.S_IFLNK: "a symbolic link"}


class UnsafeFile(OSError):
    """A file that is not a regular file under the size cap (the message says what it is)."""


def configure(limit_bytes: int | None) -> None:
    """Set the default cap (bytes; None: the fallback, 64 MiB). Called when a project's
    configuration is loaded (``[lean] max_file_mb``)."""
    global _limit
    _limit = FALLBACK_LIMIT if limit_bytes is None else int(limit_bytes)


def default_limit() -> int:
    return _limit


def describe(mode: int) -> str:
    """What a ``st_mode`` is, in words ("a FIFO (named pipe)", "a regular file", ...)."""
    return _KINDS.get(stat.S_IFMT(mode), "a regular file" if stat.S_ISREG(mode) else "not a regular file")


def _check(path: Path, st: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(errno.EINVAL, f"{path} is {describe(st.st_mode)}, not a regular file: not read")
    if st.st_size > limit:
        raise UnsafeFile(errno.EFBIG, f"{path} is {st.st_size} bytes, more than the cap of {limit} bytes "
                                      "([lean] max_file_mb): not read")


def is_regular(path: Path) -> bool:
    """``lstat`` says ``path`` is a regular file (a link to one is not)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_bytes(path: Path | str, *, limit: int | None = None) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes (module
    docstring). Raises ``FileNotFoundError`` when it does not exist, ``UnsafeFile`` when it is not
    a regular file or too large, ``OSError`` when it cannot be read."""
    path = Path(path)
    cap = _limit if limit is None else limit
    _check(path, os.lstat(path), cap)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafeFile(errno.ELOOP, f"{path} is a symbolic link, not a regular file: not read") from None
        raise
    try:
        st = os.fstat(fd)
        _check(path, st, cap)
        chunks: list[bytes] = []
        left = cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > cap:
            raise UnsafeFile(errno.EFBIG, f"{path} grew beyond the cap of {cap} bytes while read: not read")
        return data
    finally:
        os.close(fd)


def read_text(path: Path | str, *, limit: int | None = None, errors: str = "strict") -> str:
    """``read_bytes`` decoded as UTF-8 (``errors`` as for ``bytes.decode``; ``UnicodeDecodeError``
    when strict)."""
    return read_bytes(path, limit=limit).decode("utf-8", errors=errors)


def write_bytes(path: Path | str, data: bytes, *, replace_folder: bool = False) -> None:
    """Replace ``path`` by a regular file holding ``data``: a temporary file in the same folder,
    renamed over the name, so whatever was there (a FIFO, a device, a link) is never opened. A
    folder of that name is removed first when ``replace_folder`` (else ``IsADirectoryError``)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        if not replace_folder:
            raise IsADirectoryError(errno.EISDIR, f"{path} is a folder, not a file: not replaced")
        shutil.rmtree(path)  # does not follow links inside
    mode = stat.S_IMODE(st.st_mode) if st is not None and stat.S_ISREG(st.st_mode) else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text(path: Path | str, text: str, *, replace_folder: bool = False) -> None:
    write_bytes(path, text.encode("utf-8"), replace_folder=replace_folder)


def copy_file(src: Path | str, dest: Path | str, *, limit: int | None = None, replace_folder: bool = False) -> None:
    """Copy the regular file ``src`` (``read_bytes``) to ``dest`` (``write_bytes``)."""
    write_bytes(dest, read_bytes(src, limit=limit), replace_folder=replace_folder)


def open_append(path: Path | str) -> int:
    """A write-only, append-mode file descriptor (close-on-exec) on the regular file ``path``,
    created when missing. Whatever else has that name (a link to a host file, a FIFO that would
    block, a device, a folder) is removed first, never opened: a confined process may have left it
    in a folder it writes, to make Fyan write through it. Raises ``OSError`` when it cannot be made."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    for _ in range(3):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(path)  # does not follow links inside
            else:
                os.unlink(path)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # swapped meanwhile: remove it again
                continue
            raise
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.set_blocking(fd, True)
            return fd
        os.close(fd)
    raise UnsafeFile(errno.EINVAL, f"{path} keeps being replaced by something other than a regular file: "
                                   "not opened")
