#!/usr/bin/env bash
# Prints the path of a Temporal CLI that is v1.5.x or newer, building it from
# the Go module proxy into the project cache when none is at hand. The Go
# module and build caches live in the project cache too, so a rebuild after a
# `make clean` of the binary alone takes seconds.
set -euo pipefail
source "$(dirname "$0")/env.sh"

bin_dir="$ROLLFLOW_CACHE/go/bin"
cached="$bin_dir/temporal"
stamp="$cached.version"

version_ok() {  # "temporal version 1.5.1 (Server …)" -> is it >= 1.5?
  local v; v=$("$1" --version 2>/dev/null | sed -n 's/^temporal version v\{0,1\}\([0-9][0-9.]*\).*/\1/p')
  [ -n "$v" ] || return 1
  local major minor; IFS=. read -r major minor _ <<<"$v"
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "${minor:-0}" -ge 5 ]; }
}

if [ -x "$cached" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$TEMPORAL_CLI_VERSION" ]; then
  echo "$cached"; exit 0
fi
if on_path=$(command -v temporal 2>/dev/null) && version_ok "$on_path"; then
  echo "$on_path"; exit 0
fi

command -v go >/dev/null 2>&1 || rf_die "no Temporal CLI >= v1.5 on PATH and no Go toolchain to build one.
  Install Go 1.24 or newer (https://go.dev/doc/install, or 'apt-get install golang-go' on Debian 13+),
  or put a Temporal CLI v1.5+ on PATH, then run this again."

mkdir -p "$bin_dir"
rf_say "building the Temporal CLI $TEMPORAL_CLI_VERSION with $(go version | cut -d' ' -f3) (first time only, a few minutes)"
start=$(date +%s)
GOBIN="$bin_dir" GOMODCACHE="$ROLLFLOW_CACHE/go/mod" GOCACHE="$ROLLFLOW_CACHE/go/build" \
  GOFLAGS="-modcacherw" \
  go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION" >&2
echo "$TEMPORAL_CLI_VERSION" >"$stamp"
rf_say "built $cached in $(( $(date +%s) - start ))s"
echo "$cached"
