#!/usr/bin/env bash
# Prints the path of a Temporal CLI that is v1.5.x or newer, building it from
# the Go module proxy into the project cache when none is at hand. The Go
# module and build caches live in the project cache too, so a rebuild after a
# `make clean` of the binary alone takes seconds.
set -euo pipefail
source "$(dirname "$0")/env.sh"

version_ok() {  # "temporal version 1.5.1 (Server …)" -> is it >= 1.5?
  local v; v=$("$1" --version 2>/dev/null | sed -n 's/^temporal version v\{0,1\}\([0-9][0-9.]*\).*/\1/p')
  [ -n "$v" ] || return 1
  local major minor; IFS=. read -r major minor _ <<<"$v"
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "${minor:-0}" -ge 5 ]; }
}

cached="$ROLLFLOW_CACHE/go/bin/temporal"
if ! { [ -x "$cached" ] && [ "$(cat "$cached.version" 2>/dev/null)" = "$TEMPORAL_CLI_VERSION" ]; } \
   && on_path=$(command -v temporal 2>/dev/null) && version_ok "$on_path"; then
  echo "$on_path"; exit 0
fi
[ -x "$cached" ] || command -v go >/dev/null 2>&1 || rf_die "no Temporal CLI >= v1.5 on PATH and no Go toolchain to build one.
  Install Go 1.24 or newer (https://go.dev/doc/install, or 'apt-get install golang-go' on Debian 13+),
  or put a Temporal CLI v1.5+ on PATH, then run this again."
rf_go_install github.com/temporalio/cli/cmd/temporal "$TEMPORAL_CLI_VERSION" temporal
