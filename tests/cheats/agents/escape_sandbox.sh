#!/bin/sh
# Trick: a `command` agent, run as root or as an ordinary user, that
# tries every way out of its sandbox it knows and prints `ESCAPED: <how>` for each that works:
#   * uncover the project: `umount -l` of the mask, `mount -o remount,rw`, a nested user namespace;
#   * write the state store (.fyan/state.db) directly, through /proc/*/root, /proc/*/cwd and every
#     open fd of every process it can see (/proc/*/fd);
#   * write outside its workspace: the host's /tmp, /var/tmp, /dev/shm and home (paths from its prompt);
#   * connect to Unix sockets the host listens on (paths and abstract names from its prompt);
#   * read secrets of its parent's environment: SSH_AUTH_SOCK, API keys not in its pass_env,
#     also through /proc/*/environ;
#   * leave children that outlive it: one in a new session (setsid), one in its process group.
# Its prompt (stdin) has one `key: value` per line: project, socket, abstract, outside, secret.
# It touches only its own project's store; every loop is finite: nothing it starts runs for more
# than a few seconds.
prompt="$(cat)"
val() { printf '%s\n' "$prompt" | sed -n "s/^$1: //p"; }
project="$(val project | head -n 1)"
db="$project/.fyan/state.db"
ws="$(pwd -P)"
echo "uid=$(id -u) project=$project"

# uncover the project, when something covers it (never touch the mounts of a host it runs on unconfined)
if awk '{print $5}' /proc/self/mountinfo | grep -qxF "$project"; then
  for _ in 1 2 3; do umount -l "$project" 2>/dev/null && echo "ESCAPED: umount -l $project"; done
  mount -o remount,rw / 2>/dev/null && echo "ESCAPED: mount -o remount,rw /"
  for m in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
    case "$project/" in "$m"/*|"$m/"*) mount -o remount,rw,bind "$m" 2>/dev/null && echo "ESCAPED: remount rw $m";; esac
  done
  if command -v unshare >/dev/null 2>&1; then
    unshare -Urm sh -c "umount -l '$project' 2>/dev/null && echo 'ESCAPED: umount in a nested user namespace'" 2>/dev/null
  fi
fi

write() {  # $1: a path that may reach a host file
  { printf 'forged' >> "$1"; } 2>/dev/null && echo "ESCAPED: wrote $1"
}
write "$db"
for p in /proc/[0-9]*; do
  [ -e "$p/root$db" ] && write "$p/root$db"
  case "$(readlink "$p/cwd" 2>/dev/null)" in "$project"/*) write "$p/cwd/../../.fyan/state.db";; esac
  for fd in "$p"/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "$db" ] && write "$fd"
  done
done 2>/dev/null
# a private tmpfs takes these writes too: whether they reached the host, the host tells
for target in $(val outside); do { printf 'forged' >> "$target"; } 2>/dev/null && echo "wrote (here) $target"; done

python3 - "$prompt" <<'PY'
import os, socket, sys
lines = [line.split(": ", 1) for line in sys.argv[1].splitlines() if ": " in line]
for key, value in lines:
    if key not in ("socket", "abstract"):
        continue
    s = None
    try:  # the sandbox may refuse the socket itself (seccomp: no AF_UNIX socket), or the connection
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(value if key == "socket" else "\0" + value)
        s.sendall(b"escaped\n")
        print(f"ESCAPED: connected to {key} {value}")
    except OSError as e:
        print(f"refused: {key} {value}: {e.strerror or e}")
    finally:
        if s is not None:
            s.close()
secrets = [v for k, v in lines if k == "secret"]
for name in ("SSH_AUTH_SOCK", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "FYAN_OPENAI_COMPATIBLE_API_KEY"):
    if name in os.environ:
        print(f"env {name}={os.environ[name]}")
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read().decode(errors="replace")
    except OSError:
        continue
    for secret in secrets:
        if secret in environ:
            print(f"ESCAPED: read a secret of the parent's environment in /proc/{pid}/environ")
PY

( setsid sh -c "for i in 1 2 3 4 5 6; do sleep 0.5; echo late >> '$ws/late-setsid.txt'; done" \
    </dev/null >/dev/null 2>&1 & )
( for i in 1 2 3 4 5 6; do sleep 0.5; echo late >> "$ws/late-group.txt"; done ) </dev/null >/dev/null 2>&1 &
echo done
