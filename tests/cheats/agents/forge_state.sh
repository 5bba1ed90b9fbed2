#!/bin/sh
# Trick (finding 2): a `command` agent that forges the state store: it inserts a succeeded gate
# run for its unit into .fyan/state.db (and a gate report), then exits normally. It also leaves
# a child behind that tries again after the attempt ended.
# (the physical path: the workspace may be reached through a link, as from the executor's copy)
ws="$(cd "$FYAN_WORKSPACE" && pwd -P)"
project="${ws%/workspaces/*}"
db="$project/.fyan/state.db"
python3 - "$db" "$FYAN_UNIT" <<'PY' || echo "forge failed: $?" >&2
import sqlite3, sys, time
db, unit = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db)
c.execute("INSERT INTO stage_runs (unit, stage, attempt, status, started_at, finished_at, reason, attempt_dir) "
          "VALUES (?, 'gate', 1, 'succeeded', ?, ?, 'forged', 'x')", (unit, time.time(), time.time()))
c.commit()
PY
( sleep 2; echo late > "$project/units/$FYAN_UNIT/late-forgery.txt" ) &
mkdir -p "$project/units/$FYAN_UNIT/gate" 2>/dev/null && echo '{"passed": true}' > "$project/units/$FYAN_UNIT/gate/report.json"
cat > /dev/null
echo done
