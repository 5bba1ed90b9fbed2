"""The seccomp filter every bubblewrap-confined process runs under: no set-id file, no Unix socket.

A confined process keeps its uid (0 when root runs Fyan: the workspace must get the right owner),
so it owns what it writes and may ``chmod u+s`` a copy of ``/bin/sh`` in its workspace. Clearing
the bits after it ended (``runner.strip_set_id_bits``) leaves a window: while it runs, any user of
the host who can reach the workspace runs that program with euid 0. The filter closes the window
in the kernel: every system call that sets a file's mode (``chmod``, ``fchmod``, ``fchmodat``,
``fchmodat2``) or creates a file with one (``open``, ``openat``, ``creat``, ``mknod``,
``mknodat``) fails with ``EPERM`` when the mode has ``S_ISUID`` or ``S_ISGID``; calls whose mode
the filter cannot read (``openat2``: a struct; ``io_uring``: a ring) fail with ``ENOSYS``, so
libraries fall back to the plain calls; another ABI on the same kernel (i386 ``int 0x80``, x32)
fails with ``ENOSYS`` as a whole.

The kernel's key management (``add_key``, ``request_key``, ``keyctl``) fails with ``ENOSYS`` too,
as in Docker's default profile: the session keyring is inherited through bwrap, so a confined
process read every key Fyan's session holds (a Kerberos ticket cache, a stored token).

It also refuses (``EPERM``) ``socket(AF_UNIX, ...)`` and a datagram ``socketpair``: the only ways to
reach a host's Unix socket by path or abstract name (``connect``/``sendto`` need such a socket). A
socket of the host outside the private folders (``/var/snap/lxd/common/lxd/unix.socket``,
``/var/lib/kubelet/...``, one in a folder the confinement names readable) was reachable by path,
and with ``network = true`` every abstract socket of the host. A connected stream pair
(``socketpair(AF_UNIX, SOCK_STREAM)``: libuv's and Python's pipes to their children) still works.

``program()`` is the classic-BPF program (``struct sock_filter[]``, 8 bytes per instruction, the
layout of linux/filter.h) that ``bwrap --seccomp FD`` loads; None on an architecture without a
table here (x86_64 and aarch64 have one), and the sandbox then relies on the strip alone. System
call numbers: arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h of
Linux 6.6+; ``struct seccomp_data`` and the return values: include/uapi/linux/seccomp.h.
"""

from __future__ import annotations

import errno
import platform
import stat
import struct
from functools import lru_cache

# classic BPF opcodes (include/uapi/linux/bpf_common.h)
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_ERRNO = 0x00050000  # SECCOMP_RET_ERRNO | errno

# offsets in struct seccomp_data: nr, arch, then args[6] as u64 (the low half first: little endian)
_NR, _ARCH = 0, 4


def _arg(i: int) -> int:
    return 16 + 8 * i


#: per architecture: (AUDIT_ARCH_*, {syscall number: index of its mode argument}, numbers refused
#: with ENOSYS, lowest number of a foreign ABI multiplexed on the same arch value or None,
#: (socket, socketpair))
TABLES = {
    "x86_64": (0xC000003E,
               {90: 1, 91: 1, 268: 2, 452: 2,  # chmod, fchmod, fchmodat, fchmodat2
                2: 2, 257: 3, 85: 1, 133: 1, 259: 2},  # open, openat, creat, mknod, mknodat
               (437, 425, 426, 427,  # openat2, io_uring_setup, io_uring_enter, io_uring_register
                248, 249, 250),  # add_key, request_key, keyctl
               0x40000000,  # __X32_SYSCALL_BIT
               (41, 53)),
    "aarch64": (0xC00000B7,
                {52: 1, 53: 2, 452: 2,  # fchmod, fchmodat, fchmodat2
                 56: 3, 33: 2},  # openat, mknodat
                (437, 425, 426, 427, 217, 218, 219),
                None,
                (198, 199)),
}

AF_UNIX = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF

SET_ID_BITS = stat.S_ISUID | stat.S_ISGID


@lru_cache(maxsize=4)
def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one, ``platform.machine()``) as bytes for
    ``bwrap --seccomp``, or None where no table is known."""
    table = TABLES.get(machine or platform.machine())
    if table is None:
        return None
    arch, moded, refused, foreign, (socket_nr, socketpair_nr) = table
    deny_mode = _ERRNO | errno.EPERM
    deny_call = _ERRNO | errno.ENOSYS
    ins: list[tuple[int, int, int, int]] = []
    ins.append((_LD_W_ABS, 0, 0, _ARCH))
    ins.append((_JEQ_K, 1, 0, arch))  # our ABI: go on; else refuse the call
    ins.append((_RET_K, 0, 0, deny_call))
    ins.append((_LD_W_ABS, 0, 0, _NR))
    if foreign is not None:
        ins.append((_JGE_K, 0, 1, foreign))
        ins.append((_RET_K, 0, 0, deny_call))
    for nr in refused:
        ins.append((_JEQ_K, 0, 1, nr))
        ins.append((_RET_K, 0, 0, deny_call))
    for nr, index in moded.items():  # nr: load its mode, refuse set-id bits, else allow
        ins.append((_JEQ_K, 0, 4, nr))
        ins.append((_LD_W_ABS, 0, 0, _arg(index)))
        ins.append((_JSET_K, 0, 1, SET_ID_BITS))
        ins.append((_RET_K, 0, 0, deny_mode))
        ins.append((_RET_K, 0, 0, _ALLOW))
    ins.append((_JEQ_K, 0, 4, socket_nr))  # socket(AF_UNIX, ...): refused
    ins.append((_LD_W_ABS, 0, 0, _arg(0)))
    ins.append((_JEQ_K, 0, 1, AF_UNIX))
    ins.append((_RET_K, 0, 0, deny_mode))
    ins.append((_RET_K, 0, 0, _ALLOW))
    ins.append((_JEQ_K, 0, 5, socketpair_nr))  # socketpair(AF_UNIX, SOCK_DGRAM): it may sendto a path
    ins.append((_LD_W_ABS, 0, 0, _arg(1)))
    ins.append((_AND_K, 0, 0, SOCK_TYPE_MASK))
    ins.append((_JEQ_K, 0, 1, SOCK_DGRAM))
    ins.append((_RET_K, 0, 0, deny_mode))
    ins.append((_RET_K, 0, 0, _ALLOW))
    ins.append((_RET_K, 0, 0, _ALLOW))
    return b"".join(struct.pack("=HBBI", *i) for i in ins)
