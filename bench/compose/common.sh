# Shared settings of the bench/compose scripts; sourced, never run.
# Everything the bench writes lives under $COMPOSE_STATE (the checkout's .state/compose): the root file system
# tarball, the engines' wheelhouse, the image build contexts and podman's containers.conf. Paths may hold spaces.
ROLLFLOW_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
COMPOSE_STATE="${COMPOSE_STATE:-$ROLLFLOW_ROOT/.state/compose}"
mkdir -p "$COMPOSE_STATE"

say() { echo "bench/compose: $*" >&2; }
die() { say "error: $*"; exit 1; }

# podman reads its engine settings from this file instead of the system's /etc/containers/containers.conf.
# Why each setting (checked on this machine, podman 4.3.1):
#  - runtime runc: crun refuses this machine's hybrid cgroups;
#  - cgroupfs / file events: no systemd runs here to hand cgroups or a journal to;
#  - ulimits: podman raises a container's limits to its defaults, which is refused here, so they are set
#    explicitly to values no higher than this shell's hard limits.
export CONTAINERS_CONF="$COMPOSE_STATE/containers.conf"
nofile=$(ulimit -Hn); { [ "$nofile" = unlimited ] || [ "$nofile" -gt 16384 ]; } && nofile=16384
nproc=$(ulimit -Hu); { [ "$nproc" = unlimited ] || [ "$nproc" -gt 8192 ]; } && nproc=8192
# The same limits as flags, for `podman build` (its RUN steps are not read from containers.conf's [containers]).
ULIMIT_FLAGS=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
write_containers_conf() {
  cat >"$CONTAINERS_CONF" <<CONF
# Written by bench/compose/common.sh (edit the script, not this file).
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
}
write_containers_conf
