#!/usr/bin/env bash
# Builds the compose images FROM rollflow-base:bookworm (bench/compose/rootfs.sh) with podman, each from a
# context staged under $COMPOSE_STATE/ctx out of artefacts this checkout already built from registries
# (hard links where the file system allows: the engines' site-packages is ~6 GB). Run by bench/compose/run.sh.
#   rollflow:dev                               worker and engines (deploy/compose/rollflow.Containerfile)
#   rollflow-versitygw:v1.8.0                  the object store and its bucket step
#   localhost/rollflow-bench-temporal:v1.29.1  Temporal server, SQL tool, CLI
#   localhost/rollflow-bench-postgresql:bookworm
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
root=$ROLLFLOW_ROOT deploy="$ROLLFLOW_ROOT/deploy/compose" ctx="$COMPOSE_STATE/ctx"

fresh() { rm -rf "${ctx:?}/$1" && mkdir -p "$ctx/$1" && echo "$ctx/$1"; }
# cp -al: hard links, no copy; falls back to a copy across file systems.
link_tree() { mkdir -p "$2" && { cp -al "$1/." "$2/" 2>/dev/null || cp -a "$1/." "$2/"; }; }
build() {  # build NAME CONTAINERFILE CONTEXT
  local t0; t0=$(date +%s)
  podman build -q "${ULIMIT_FLAGS[@]}" -f "$2" -t "$1" "$3" >/dev/null
  say "built $1 in $(( $(date +%s) - t0 ))s"
}

# Artefacts built from registries by the project's own scripts (cached after the first time).
server_dir=$("$root/temporal/ensure-server.sh")            # Go module proxy: server + SQL tool
schema_dir=$("$root/temporal/ensure-server.sh" --schema-dir)
cli=$("$root/temporal/ensure-cli.sh")                      # Go module proxy: Temporal CLI
versitygw=$("$root/object-store/versitygw.sh" path)        # Go module proxy: versitygw
[ -f "$root/dist/cli/index.js" ] || (cd "$root" && node_modules/.bin/tsc -p tsconfig.build.json)
venv_site=$(readlink -f "$root/.venv")/lib/python3.11/site-packages
[ -d "$venv_site" ] || die "no $venv_site: run make setup first (it installs python-engines/requirements.txt from PyPI)"

c=$(fresh postgresql); cp "$deploy/postgresql-start.sh" "$c/"
build localhost/rollflow-bench-postgresql:bookworm "$deploy/postgresql.Containerfile" "$c"

c=$(fresh temporal)
cp "$server_dir/server" "$server_dir/sql" "$cli" "$deploy/temporal-start.sh" "$root/temporal/dynamic-config.yaml" "$c/"
cp -r "$schema_dir" "$c/schema"
build localhost/rollflow-bench-temporal:v1.29.1 "$deploy/temporal.Containerfile" "$c"

c=$(fresh versitygw); cp "$versitygw" "$c/versitygw"
build rollflow-versitygw:v1.8.0 "$deploy/versitygw.Containerfile" "$c"

c=$(fresh rollflow)
cp "$(command -v node)" "$c/node"
# The checkout's files as the Dockerfile's `COPY . .` sees them (tracked, and untracked but not ignored).
mkdir -p "$c/app"
(cd "$root" && git ls-files -z -co --exclude-standard | tar -c --null -T - -f -) | tar -x -C "$c/app"
link_tree "$root/dist" "$c/app/dist"
link_tree "$(readlink -f "$root/node_modules")" "$c/app/node_modules"
link_tree "$venv_site" "$c/site-packages"
build rollflow:dev "$deploy/rollflow.Containerfile" "$c"
