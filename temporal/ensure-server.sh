#!/usr/bin/env bash
# Prints the directory holding the Temporal server binary (`server`) and its SQL
# schema tool (`sql`), both built from the Go module proxy at
# $TEMPORAL_SERVER_VERSION (the server the CLI's dev server embeds) into the
# project cache, like ensure-cli.sh builds the CLI. Only temporal/cluster.sh
# needs them: `make test` and the embedded stack never build the server.
#   ensure-server.sh              -> .cache/go/temporal-server
#   ensure-server.sh --schema-dir -> the module source's schema/postgresql/v12
set -euo pipefail
source "$(dirname "$0")/env.sh"

bin_dir="$ROLLFLOW_CACHE/go/temporal-server"
stamp="$bin_dir/.version"
module="go.temporal.io/server"
export GOMODCACHE="$ROLLFLOW_CACHE/go/mod" GOCACHE="$ROLLFLOW_CACHE/go/build" GOFLAGS="-modcacherw"

need_go() {
  command -v go >/dev/null 2>&1 || rf_die "no Go toolchain to build the Temporal server $TEMPORAL_SERVER_VERSION.
  Install Go 1.24 or newer (https://go.dev/doc/install, or 'apt-get install golang-go' on Debian 13+), then run this again."
}

if [ "${1:-}" = "--schema-dir" ]; then
  dir="$GOMODCACHE/$module@$TEMPORAL_SERVER_VERSION/schema/postgresql/v12"
  if [ ! -d "$dir/temporal/versioned" ]; then  # binaries cached, module cache cleaned
    need_go
    go mod download "$module@$TEMPORAL_SERVER_VERSION" >&2
  fi
  [ -d "$dir/temporal/versioned" ] && [ -d "$dir/visibility/versioned" ] || rf_die "no PostgreSQL schemas in $dir"
  echo "$dir"; exit 0
fi

if [ -x "$bin_dir/server" ] && [ -x "$bin_dir/sql" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$TEMPORAL_SERVER_VERSION" ]; then
  echo "$bin_dir"; exit 0
fi

need_go
mkdir -p "$bin_dir"
rf_say "building the Temporal server $TEMPORAL_SERVER_VERSION and its SQL tool with $(go version | cut -d' ' -f3) (first time only; ~10 min on 2 cores)"
start=$(date +%s)
GOBIN="$bin_dir" go install "$module/cmd/server@$TEMPORAL_SERVER_VERSION" "$module/cmd/tools/sql@$TEMPORAL_SERVER_VERSION" >&2
echo "$TEMPORAL_SERVER_VERSION" >"$stamp"
rf_say "built $bin_dir/{server,sql} in $(( $(date +%s) - start ))s"
echo "$bin_dir"
