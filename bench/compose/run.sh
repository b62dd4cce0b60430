#!/usr/bin/env bash
# docker-compose.yml, run once end to end under podman on a machine that pulls no images
# (bench/results/compose.md): the compose Temporal server on PostgreSQL, the object store, the three engines and
# the worker as containers sharing no volume; a short run started with the CLI inside the worker container.
#   bench/compose/run.sh            [STEPS=3] [KEEP=1: leave the stack up] [SKIP_BUILD=1: reuse the images]
# Idempotent; what it builds is cached under .state/compose (see common.sh). Steps:
#   1. Debian packages: podman, runc, mmdebstrap, CNI's dnsname plugin (service names in DNS); podman-compose
#      from PyPI into a venv (Debian's 1.0.3 stops on the compose file's `networks: {default: {ipv4_address}}`
#      with KeyError: "default={'ipv4_address': '172.30.77.10'}", bench/results/compose.md)
#   2. rootfs.sh: a bookworm root file system from Debian's packages, imported as rollflow-base:bookworm
#   3. images.sh: every image FROM it (deploy/compose/*.Containerfile)
#   4. podman-compose up with deploy/compose/local-images.yml, a run, its status, logs, down
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
root=$ROLLFLOW_ROOT
steps=${STEPS:-3}
project=rollflow-bench
logs="$COMPOSE_STATE/logs"
# Everything but temporal-ui, prometheus and grafana (no image of theirs is built here).
services=(postgresql temporal temporal-setup object-store object-store-setup engine-inference engine-trainer engine-env worker)
t_start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t_start ))s"; }

"$root/scripts/ensure-system-packages.sh" podman=podman runc=runc mmdebstrap=mmdebstrap \
  /usr/lib/cni/dnsname=golang-github-containernetworking-plugin-dnsname
PODMAN_COMPOSE_VERSION=1.6.0
pc_venv="$COMPOSE_STATE/podman-compose-venv"
if [ "$("$pc_venv/bin/podman-compose" version 2>/dev/null | sed -n 's/^podman-compose version //p')" != "$PODMAN_COMPOSE_VERSION" ]; then
  python3 -m venv "$pc_venv" && "$pc_venv/bin/pip" install -q "podman-compose==$PODMAN_COMPOSE_VERSION"
fi
say "podman $(podman version --format '{{.Client.Version}}'), podman-compose $PODMAN_COMPOSE_VERSION (PyPI), runtime $(podman info --format '{{.Host.OCIRuntime.Name}}'), network $(podman info --format '{{.Host.NetworkBackend}}')"
if [ -z "${SKIP_BUILD:-}" ]; then "$here/rootfs.sh"; "$here/images.sh"; fi
say "images ready at $(elapsed)"

compose() { (cd "$root" && "$pc_venv/bin/podman-compose" -p "$project" -f docker-compose.yml -f deploy/compose/local-images.yml "$@"); }
container() { echo "${project}_$1_1"; }   # podman-compose's container names

save_logs() {
  mkdir -p "$logs"
  local s; for s in "${services[@]}"; do podman logs "$(container "$s")" >"$logs/$s.log" 2>&1 || true; done
}
down() {
  save_logs
  [ -n "${KEEP:-}" ] && { say "KEEP set: the stack stays up (podman-compose -p $project … down -v)"; return; }
  compose down -v >"$logs/down.log" 2>&1 || say "compose down failed; see $logs/down.log"
  # down removes containers; the named volumes go with -v where podman-compose supports it, else here.
  podman volume rm -f "${project}_postgresql-data" "${project}_object-store-data" >/dev/null 2>&1 || true
  podman network rm -f "${project}_default" >/dev/null 2>&1 || true
}

# A clean start: nothing left from an earlier bench run.
mkdir -p "$logs" && rm -f "$logs"/*.log
compose down -v >/dev/null 2>&1 || true
podman volume rm -f "${project}_postgresql-data" "${project}_object-store-data" >/dev/null 2>&1 || true
podman network rm -f "${project}_default" >/dev/null 2>&1 || true
trap down EXIT

# Up in three phases, with --no-deps: podman 4.3 refuses to start a container whose --requires chain is
# longer than one level ("generating dependency graph for container …: container … depends on container …
# not found in input list"), and podman-compose ignores `condition: service_healthy` before podman 4.6. So
# this script enforces what the compose file's depends_on conditions say, as Docker would.
t_up=$(date +%s)
up() { compose up -d --no-deps "$@" >>"$logs/up.log" 2>&1 || { tail -n 30 "$logs/up.log" >&2; die "compose up $* failed; see $logs/up.log"; }; }
waited() {  # waited WHAT SECONDS COMMAND…: poll COMMAND until it succeeds
  local what=$1 deadline=$(( $(date +%s) + $2 )); shift 2
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$deadline" ] || die "$what: not within the deadline (logs in $logs)"; sleep 2; done
  say "$what at $(elapsed)"
}
setup_ok() {  # a one-shot service exited 0
  local code; code=$(podman wait "$(container "$1")")
  [ "$code" = 0 ] || { podman logs "$(container "$1")" >&2; die "$1 exited $code"; }
  say "$1 exited 0: $(podman logs "$(container "$1")" 2>&1 | tail -n 1)"
}
up postgresql temporal object-store
# temporal: service_healthy, and the namespace `default` there (auto-setup's, here temporal-start.sh's).
waited "temporal healthy, namespace default" 300 podman exec "$(container temporal)" temporal operator namespace describe --address temporal:7233 --namespace default
up temporal-setup object-store-setup
setup_ok temporal-setup
setup_ok object-store-setup
podman exec "$(container temporal)" temporal operator search-attribute list --address temporal:7233 >"$logs/search-attributes.txt" 2>&1
grep -q RollflowRunId "$logs/search-attributes.txt" || die "temporal-setup registered no search attribute; see $logs/search-attributes.txt"
up engine-inference engine-trainer engine-env worker
say "compose up at $(elapsed); waiting for the worker to poll"

# The worker is ready when the run's task queue has a poller: `rollflow smoke` answers only then (every engine
# through a Temporal activity, from inside the worker container).
deadline=$(( $(date +%s) + 300 ))
until podman exec "$(container worker)" node dist/cli/index.js smoke examples/compose.yaml >"$logs/smoke.log" 2>&1; do
  [ "$(date +%s)" -lt "$deadline" ] || { podman ps -a --format '{{.Names}} {{.Status}}' >&2; die "smoke did not pass within 300 s; see $logs/smoke.log and $logs/"; }
  sleep 5
done
say "stack up and smoke passed in $(( $(date +%s) - t_up ))s"

t_run=$(date +%s) run_id="compose-bench-$(date -u +%Y%m%dT%H%M%S)"
podman exec "$(container worker)" node dist/cli/index.js run examples/compose.yaml --set "max_steps=$steps" --run-id "$run_id" --json \
  >"$logs/run.json" 2>"$logs/run.stderr" || { tail -n 20 "$logs/run.stderr" >&2; die "run $run_id did not complete; see $logs/run.stderr"; }
say "run $run_id ended in $(( $(date +%s) - t_run ))s: $(tail -n 1 "$logs/run.json")"
podman exec "$(container worker)" node dist/cli/index.js status "$run_id" --config examples/compose.yaml >"$logs/status.json" 2>&1 || true
podman exec "$(container worker)" node dist/cli/index.js wait "$run_id" --config examples/compose.yaml --json >"$logs/wait.json" 2>&1 \
  || die "rollflow wait says run $run_id did not complete: $(cat "$logs/wait.json")"

# What crossed the bucket: the run's objects as the object store's posix backend holds them (files in its volume).
podman exec "$(container object-store)" sh -c 'cd /data/rollflow && find . -type f | sed "s|/[^/]*$||" | sort | uniq -c' >"$logs/bucket.txt" 2>&1 || true
# The weights the inference server pulled from the bucket at each sync (its own cache, in its own container).
podman exec "$(container engine-inference)" sh -c 'find /tmp/rollflow-weights-cache | sort' >"$logs/weights-cache.txt" 2>&1 || true
# No rollflow service mounts a volume (the object store alone has one).
for s in engine-inference engine-trainer engine-env worker; do
  printf '%s mounts: %s\n' "$s" "$(podman inspect --format '{{range .Mounts}}{{.Destination}} {{end}}' "$(container "$s")")"
done >"$logs/mounts.txt"
say "done at $(elapsed); logs in $logs"
