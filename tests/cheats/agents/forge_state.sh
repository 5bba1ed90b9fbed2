#!/bin/sh
# Trick (a root agent inside the sandbox): a `command` agent that forges the state store. It
# finds its project (the folder above workspaces/<unit> of the folder it runs in, physical path;
# else $FYAN_WORKSPACE), tries to uncover it (umount the mask, remount read-write, a nested user
# namespace), then inserts a succeeded gate run for its unit into .fyan/state.db through every
# path it can think of (direct, /proc/*/root, /proc/*/cwd, inherited fds) and writes a gate
# report. It leaves a child behind, in a new session (setsid), that tries again after the
# attempt ended. Every step prints what it found and did, so a test can tell that it tried.
# It touches only its own project's store (other projects on the machine are not its business),
# and its loops are finite: nothing it starts can run for more than a few seconds.
ws="$(pwd -P)"
case "$ws" in
  */workspaces/*) ;;
  *) ws="$(cd "$FYAN_WORKSPACE" 2>/dev/null && pwd -P || echo "$FYAN_WORKSPACE")" ;;
esac
project="${ws%/workspaces/*}"
db="$project/.fyan/state.db"
echo "project=$project"

# uncover the project, when something covers it (never touch the mounts of a host it runs on unconfined):
# remove whatever is mounted over it, make its file system writable
if awk '{print $5}' /proc/self/mountinfo | grep -qxF "$project"; then
  for _ in 1 2 3 4; do umount -l "$project" 2>/dev/null && echo "uncovered: umount $project"; done
  for m in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
    case "$project/" in "$m"/*|"$m/"*) mount -o remount,rw,bind "$m" 2>/dev/null && echo "remounted rw: $m";; esac
  done
  mount -o remount,rw / 2>/dev/null && echo "remounted rw: /"
  if command -v unshare >/dev/null 2>&1; then
    unshare -Urm sh -c "umount -l '$project' && echo 'uncovered in a nested user namespace'" 2>/dev/null
  fi
fi

forge() {  # $1: a path that may reach the state store
  python3 - "$1" "$FYAN_UNIT" <<'PY'
import sqlite3, sys, time
path, unit = sys.argv[1], sys.argv[2]
try:
    c = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=2)
    c.execute("INSERT INTO stage_runs (unit, stage, attempt, status, started_at, finished_at, reason, attempt_dir) "
              "VALUES (?, 'gate', 1, 'succeeded', ?, ?, 'forged', 'x')", (unit, time.time(), time.time()))
    c.commit()
    print(f"forged via {path}")
except Exception as e:
    try:  # no journal beside a /proc link: overwrite the file's bytes instead
        with open(path, "r+b") as f:
            f.seek(0, 2)
            f.write(b"forged")
        print(f"wrote bytes via {path}")
    except OSError as e2:
        print(f"refused: {path}: {e2.strerror or e2}", file=sys.stderr)
PY
}

forge "$db"
for p in /proc/[0-9]*; do
  [ -e "$p/root$db" ] && forge "$p/root$db"
  case "$(readlink "$p/cwd" 2>/dev/null)" in "$project"/*) forge "$p/cwd/../../.fyan/state.db";; esac
  for fd in "$p"/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "$db" ] && forge "$fd"
  done
done 2>/dev/null

( setsid sh -c "sleep 2; echo late > '$project/units/$FYAN_UNIT/late-forgery.txt'; echo late > '$ws/late-child.txt'" \
    </dev/null >/dev/null 2>&1 & )
( sleep 2; echo late > "$ws/late-group.txt" ) </dev/null >/dev/null 2>&1 &
mkdir -p "$project/units/$FYAN_UNIT/gate" 2>/dev/null \
  && echo '{"passed": true}' > "$project/units/$FYAN_UNIT/gate/report.json" && echo "wrote gate report"
cat > /dev/null
echo done
