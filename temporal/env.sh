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

# The local cluster (temporal/cluster.sh): the Temporal server binary, the same
# version the CLI's dev server embeds, on its own PostgreSQL instance.
TEMPORAL_SERVER_VERSION="v1.29.1"
TEMPORAL_CLUSTER_DIR="${TEMPORAL_CLUSTER_DIR:-$ROLLFLOW_STATE/cluster}"
TEMPORAL_CLUSTER_IP="${TEMPORAL_CLUSTER_IP:-127.0.0.1}"
# Frontend gRPC port; the cluster also uses the next eight (history, matching and
# worker gRPC, four membership ports, Prometheus metrics). Away from the dev server's 7233/8233.
TEMPORAL_CLUSTER_PORT="${TEMPORAL_CLUSTER_PORT:-7333}"
# Fixed when the databases are created (Temporal cannot reshard); see cluster.sh.
TEMPORAL_CLUSTER_SHARDS="${TEMPORAL_CLUSTER_SHARDS:-4}"
TEMPORAL_CLUSTER_PG_PORT="${TEMPORAL_CLUSTER_PG_PORT:-5439}"
# PostgreSQL refuses to run as root: when we are root it runs as this user.
TEMPORAL_CLUSTER_PG_OS_USER="${TEMPORAL_CLUSTER_PG_OS_USER:-postgres}"
# on = every commit is fsynced (a production server's setting); off trades the
# last ~0.6 s of commits on a PostgreSQL crash for fewer fsyncs.
TEMPORAL_CLUSTER_PG_SYNC_COMMIT="${TEMPORAL_CLUSTER_PG_SYNC_COMMIT:-on}"
TEMPORAL_CLUSTER_LOG_LEVEL="${TEMPORAL_CLUSTER_LOG_LEVEL:-warn}"
TEMPORAL_CLUSTER_START_TIMEOUT="${TEMPORAL_CLUSTER_START_TIMEOUT:-120}"

rf_say() { echo "rollflow/${RF_WHO:-temporal}: $*" >&2; }
rf_die() { rf_say "error: $*"; exit 1; }

# rf_go_install MODULE/CMD VERSION BINARY: builds BINARY from the Go module proxy into the project cache (module
# and build caches there too, so a rebuild after a `make clean` of the binary takes seconds) unless the cached
# one was built from VERSION; prints its path.
rf_go_install() {
  local bin_dir="$ROLLFLOW_CACHE/go/bin" cached="$ROLLFLOW_CACHE/go/bin/$3"
  if [ -x "$cached" ] && [ "$(cat "$cached.version" 2>/dev/null)" = "$2" ]; then echo "$cached"; return 0; fi
  command -v go >/dev/null 2>&1 || rf_die "no $3 built in $bin_dir and no Go toolchain to build it.
  Install Go 1.24 or newer (https://go.dev/doc/install, or 'apt-get install golang-go' on Debian 13+), then run this again."
  mkdir -p "$bin_dir"
  rf_say "building $3 $2 with $(go version | cut -d' ' -f3) (first time only, a few minutes)"
  local start; start=$(date +%s)
  GOBIN="$bin_dir" GOMODCACHE="$ROLLFLOW_CACHE/go/mod" GOCACHE="$ROLLFLOW_CACHE/go/build" GOFLAGS="-modcacherw" \
    go install "$1@$2" >&2
  echo "$2" >"$cached.version"
  rf_say "built $cached in $(( $(date +%s) - start ))s"
  echo "$cached"
}

# Is something accepting TCP connections on $1:$2?
rf_port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# Lines of a list file, without comments and blank lines.
rf_read_list() { grep -v '^[[:space:]]*\(#\|$\)' "$1"; }

# rf_pid_from PIDFILE MARKER: the pid in PIDFILE if that process is alive and
# its command line contains MARKER, else nothing. A pid file whose process is
# gone, or whose pid now belongs to another program, is stale.
rf_pid_from() {
  [ -f "$1" ] || return 0
  local pid; pid=$(cat "$1" 2>/dev/null)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null \
     && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2"; then
    echo "$pid"
  fi
}

# rf_running PID: is PID, a process this shell started, still running? A child
# that exited stays a zombie until reaped, and kill -0 still succeeds on it, so
# the state is read too. Start loops use this, not rf_pid_from: while a process
# execs, its /proc/PID/cmdline is briefly empty, and a loaded machine caught a
# freshly started server there (CI: "versitygw exited at start", empty log).
rf_running() {
  kill -0 "$1" 2>/dev/null || return 1
  local stat; stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # the state letter follows the ")" that closes the command name
  [ "${stat:0:1}" != Z ]
}

# The pid of the live dev server we started, or nothing.
rf_live_pid() { rf_pid_from "$TEMPORAL_PIDFILE" 'server start-dev'; }

# rf_stop_pid PID: SIGTERM, then SIGKILL if it is still there after 30 s.
rf_stop_pid() {
  kill -TERM "$1" 2>/dev/null || return 0
  local deadline=$(( $(date +%s) + 30 ))
  while kill -0 "$1" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then rf_say "pid $1 ignored SIGTERM for 30s; sending SIGKILL"; kill -KILL "$1" 2>/dev/null || true; fi
    sleep 0.2
  done
}

# rf_healthy HOST:PORT: does a Temporal frontend there answer SERVING?
rf_healthy() {
  local cli; cli=$("$ROLLFLOW_ROOT/temporal/ensure-cli.sh")
  # shellcheck disable=SC2086  # RF_CLI_TLS_ARGS: flags (cluster.sh sets them for a TLS frontend), split on spaces
  "$cli" operator cluster health --address "$1" ${RF_CLI_TLS_ARGS:-} 2>/dev/null | grep -q SERVING
}
