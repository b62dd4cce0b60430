# Shared settings for the temporal/ scripts; sourced, never run.
# Every value can be overridden from the environment, which is how tests run
# isolated servers on free ports with throw-away databases.
ROLLFLOW_ROOT="${ROLLFLOW_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
ROLLFLOW_CACHE="${ROLLFLOW_CACHE:-$ROLLFLOW_ROOT/.cache}"
ROLLFLOW_STATE="${ROLLFLOW_STATE:-$ROLLFLOW_ROOT/.state}"

TEMPORAL_CLI_VERSION="v1.5.1"   # later tags carry a replace directive that `go install` refuses
TEMPORAL_IP="${TEMPORAL_IP:-127.0.0.1}"
TEMPORAL_PORT="${TEMPORAL_PORT:-7233}"
TEMPORAL_UI_PORT="${TEMPORAL_UI_PORT:-8233}"
TEMPORAL_DIR="${TEMPORAL_DIR:-$ROLLFLOW_STATE/temporal}"
TEMPORAL_DB="${TEMPORAL_DB:-$TEMPORAL_DIR/temporal.db}"
TEMPORAL_PIDFILE="${TEMPORAL_PIDFILE:-$TEMPORAL_DIR/server.pid}"
TEMPORAL_LOG="${TEMPORAL_LOG:-$TEMPORAL_DIR/server.log}"
TEMPORAL_START_TIMEOUT="${TEMPORAL_START_TIMEOUT:-90}"
# SQLite durability: WAL with synchronous=NORMAL survives any process being killed
# (what rollflow's fault tests do) but may lose the last transactions on an OS
# crash or power loss; it removes an fsync per transaction, which on slow disks
# is the dev server's bottleneck. Set TEMPORAL_SQLITE_SYNC=FULL to fsync every commit.
TEMPORAL_SQLITE_SYNC="${TEMPORAL_SQLITE_SYNC:-NORMAL}"

rf_say() { echo "rollflow/temporal: $*" >&2; }
rf_die() { rf_say "error: $*"; exit 1; }

# Is something accepting TCP connections on $1:$2?
rf_port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# The pid of the live server we started, or nothing. A pid file whose process
# is gone, or whose pid now belongs to another program, is stale.
rf_live_pid() {
  [ -f "$TEMPORAL_PIDFILE" ] || return 0
  local pid; pid=$(cat "$TEMPORAL_PIDFILE" 2>/dev/null)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null \
     && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'server start-dev'; then
    echo "$pid"
  fi
}
