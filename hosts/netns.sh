#!/usr/bin/env bash
# Simulated hosts on one machine (docs/hosts.md): each host is a network namespace plus a private mount namespace
# in which the whole machine is read-only (the software "image", identical on every host) except the host's own
# writable places. Hosts talk only by TCP over veth links to a bridge in a separate switch namespace; the root
# namespace, where tests run, is not on that network.
#
#   hosts/netns.sh up H...          create the hosts (idempotent) and the switch
#   hosts/netns.sh exec H -- CMD... run CMD on host H (its namespaces, HOME, TMPDIR=/tmp, ROLLFLOW_HOST=H)
#   hosts/netns.sh addr H           the host's IPv4 address
#   hosts/netns.sh pids H           its processes, one pid a line
#   hosts/netns.sh kill H           SIGKILL every process of the host (its power is lost)
#   hosts/netns.sh link H down|up   cut or restore the host's cable (the switch-side end of its veth)
#   hosts/netns.sh status | dir     the hosts, addresses, links, process counts | the set's directory
#   hosts/netns.sh down             kill everything, remove namespaces, mounts and directories (idempotent)
#
# Settings (environment): ROLLFLOW_HOSTS_SET (rf): the set's name, [a-z][a-z0-9]{0,5}; its namespaces are
# <set>-<host> and <set>-net, so parallel test files each use their own. ROLLFLOW_HOSTS_SUBNET (A.B.C): the
# set's /24, default 10.X.Y derived from the set name. ROLLFLOW_HOSTS_DIR (/run/rollflow-hosts/<set>): the
# set's directory: disks/<H>/home and disks/<H>/state are host H's storage; home is HOME on every host.
# One caller at a time per set: nothing locks a set against a concurrent `up` or `down`.
set -euo pipefail
RF_WHO=hosts
source "$(dirname "$0")/../temporal/env.sh"

self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
set_name="${ROLLFLOW_HOSTS_SET:-rf}"
[[ "$set_name" =~ ^[a-z][a-z0-9]{0,5}$ ]] \
  || rf_die "ROLLFLOW_HOSTS_SET='$set_name': a set name is a lower-case letter then at most 5 letters or digits"
dir="${ROLLFLOW_HOSTS_DIR:-/run/rollflow-hosts/$set_name}"
repo="$ROLLFLOW_ROOT"
switch="$set_name-net"
if [ -n "${ROLLFLOW_HOSTS_SUBNET:-}" ]; then
  subnet="$ROLLFLOW_HOSTS_SUBNET"
  [[ "$subnet" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || rf_die "ROLLFLOW_HOSTS_SUBNET='$subnet': give the /24 as A.B.C"
else
  # Each set has its own switch, so two sets on the same /24 never meet; deriving it only keeps addresses stable.
  sum=$(printf %s "$set_name" | cksum | cut -d' ' -f1)
  subnet="10.$(( 100 + sum % 100 )).$(( sum / 100 % 256 ))"
fi

# must CMD...: runs CMD; if it fails, stops naming the command and its error (what refused, and why).
must() {
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -eq 0 ] || rf_die "\`$*\` failed (exit $rc): ${err:-no message}"
}

check_host_name() {
  [[ "$1" =~ ^[a-z][a-z0-9]{0,9}$ ]] && [ "$1" != net ] \
    || rf_die "host name '$1': a lower-case letter then at most 9 letters or digits, and not 'net' (the switch)"
}
has_netns() { [ -e "/run/netns/$1" ]; }
hosts() { local f; for f in /run/netns/"$set_name"-*; do [ -e "$f" ] && [ "$f" != "/run/netns/$switch" ] && echo "${f#/run/netns/"$set_name"-}"; done; true; }
host_addr() { ip -n "$set_name-$1" -4 -o addr show dev eth0 2>/dev/null | awk '{ sub("/.*", "", $4); print $4 }'; }
require_host() {
  check_host_name "$1"
  has_netns "$set_name-$1" && mountpoint -q "$dir/ns/$1" \
    || rf_die "no host '$1' in set '$set_name' (run: ROLLFLOW_HOSTS_SET=$set_name $0 up $1)"
}

# The lowest last octet no host of the set holds yet.
free_addr() {
  local used=" " h k
  for h in $(hosts); do used+="$(host_addr "$h" | cut -d. -f4) "; done
  for k in $(seq 1 254); do [[ "$used" == *" $k "* ]] || { echo "$subnet.$k"; return 0; }; done
  rf_die "no free address left in $subnet.0/24"
}

up() {
  [ $# -gt 0 ] || rf_die "usage: $0 up HOST..."
  local h
  for h; do check_host_name "$h"; done
  # A fresh tmpfs covers /tmp, /var/tmp and /dev/shm on every host: the image or the disks there would vanish.
  for h in "$repo" "$dir"; do
    case "$h/" in /tmp/*|/var/tmp/*|/dev/shm/*) rf_die "$h is under /tmp, /var/tmp or /dev/shm, which every host replaces with its own tmpfs; use another path" ;; esac
  done
  case "$dir/" in "$repo"/*) rf_die "ROLLFLOW_HOSTS_DIR=$dir is inside the checkout, which every host sees read-only; use another path" ;; esac
  if ip -4 route show table all to match "$subnet.1" | grep -qv '^default'; then
    rf_die "the root namespace already routes $subnet.0/24 ($(ip -4 route show table all to match "$subnet.1" | grep -v '^default' | head -1)); choose another with ROLLFLOW_HOSTS_SUBNET"
  fi
  must mkdir -p "$repo/.state" "$dir/ns" "$dir/home" "$dir/disks"
  # unshare can keep a mount namespace only on a mount that does not propagate (else the bind could loop).
  mountpoint -q "$dir/ns" || must mount --bind "$dir/ns" "$dir/ns"
  must mount --make-private "$dir/ns"

  has_netns "$switch" || must ip netns add "$switch"
  ip -n "$switch" link show br0 >/dev/null 2>&1 || must ip -n "$switch" link add br0 type bridge stp_state 0 forward_delay 0
  must ip -n "$switch" link set lo up
  must ip -n "$switch" link set br0 up
  for h; do up_host "$h"; done
  rf_say "set $set_name: $(hosts | tr '\n' ' ')on $subnet.0/24, directory $dir"
}

up_host() {
  local h=$1 ns="$set_name-$1"
  has_netns "$ns" || must ip netns add "$ns"
  if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
    # Created in the switch namespace with its peer moved at once: no interface of a set ever sits in the root one.
    must ip -n "$switch" link add name "$h" type veth peer name eth0 netns "$ns"
    must ip -n "$switch" link set dev "$h" master br0 up
  fi
  [ -n "$(host_addr "$h")" ] || must ip -n "$ns" addr add "$(free_addr)/24" dev eth0
  must ip -n "$ns" link set lo up
  must ip -n "$ns" link set eth0 up
  if ! mountpoint -q "$dir/ns/$h"; then
    must mkdir -p "$dir/disks/$h/home" "$dir/disks/$h/state"
    [ -e "$dir/ns/$h" ] || must touch "$dir/ns/$h"
    local rc=0
    unshare --mount="$dir/ns/$h" --propagation private -- "$self" _setup "$h" || rc=$?
    if [ "$rc" -ne 0 ]; then
      umount "$dir/ns/$h" 2>/dev/null || true  # a half-built mount namespace is rebuilt by the next `up`
      rf_die "setting up host $h's mount namespace failed (exit $rc; the error is above)"
    fi
  fi
}

# Runs inside host H's new mount namespace, which starts as a private copy of the machine's mounts.
setup_host() {
  local h=$1 line mp opts rest fstype
  local -a lines
  mkdir -p /run/lock  # before the machine turns read-only below: its tmpfs needs a mount point
  mapfile -t lines </proc/self/mountinfo
  for line in "${lines[@]}"; do
    read -r _ _ _ _ mp opts rest <<<"$line"
    mp=$(printf '%b' "${mp//\\/\\0}")  # mountinfo writes a space as \040
    fstype=${rest#*- }; fstype=${fstype%% *}
    case "$mp" in
      /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue ;;  # the kernel's interfaces, not storage
    esac
    if [ "$fstype" = nsfs ] || [[ "$mp" == /tmp/* || "$mp" == /var/tmp/* ]]; then
      # Namespace handles (other sets' /run/netns/*) and others' mounts under /tmp would be pinned alive by this
      # copy until the host goes down; the host has no use for them (and the new /tmp hides any that stays).
      umount -l "$mp" 2>/dev/null || true
    elif [[ ",$opts," != *,ro,* ]]; then
      # bind,remount changes this namespace's mount only; a plain remount would make the machine's filesystem ro.
      # A mount whose directory another set's `down` just removed is gone from here too: not an error.
      mount -o remount,bind,ro "$mp" 2>/dev/null || ! mountpoint -q "$mp" || must mount -o remount,bind,ro "$mp"
    fi
  done
  # /run/lock too: a machine's runtime locks are its own (the sandbox allocates its uids there).
  for mp in /tmp /var/tmp /dev/shm /run/lock; do must mount -t tmpfs -o mode=1777 "rollflow-host-$h" "$mp"; done
  bind_rw "$dir/disks/$h/home" "$dir/home"
  bind_rw "$dir/disks/$h/state" "$repo/.state"
  must mount -t tmpfs -o ro,size=4k,mode=755 rollflow-hidden "$dir/disks"  # no host sees another's disk
}
bind_rw() { must mount --bind "$1" "$2"; must mount -o remount,bind,rw "$2"; }

# Runs inside the host's namespaces: the host's environment, then CMD in place of this shell.
enter_host() {
  local h=$1 wd=$2; shift 2
  cd "$wd" 2>/dev/null || cd "$dir/home"  # the caller's directory if the host has it (the repo does)
  export HOME="$dir/home" TMPDIR=/tmp ROLLFLOW_HOST="$h" ROLLFLOW_STATE="$repo/.state"
  exec "$@"
}

exec_on() {
  local h=${1:-}; shift || true
  [ "${1:-}" = "--" ] && shift
  [ -n "$h" ] && [ $# -gt 0 ] || rf_die "usage: $0 exec HOST -- CMD..."
  require_host "$h"
  # nsenter execs CMD itself (no fork), so the caller's child is CMD: its pid, signals and exit status.
  exec nsenter --net="/run/netns/$set_name-$h" --mount="$dir/ns/$h" -- "$self" _enter "$h" "$PWD" "$@"
}

kill_host() {
  local h=$1 pids deadline=$(( $(date +%s) + 10 ))
  # A process may fork while we kill: loop until the namespace is empty. A zombie has left it already.
  while pids=$(ip netns pids "$set_name-$h" 2>/dev/null) && [ -n "$pids" ]; do
    # shellcheck disable=SC2086  # one pid a word
    kill -KILL $pids 2>/dev/null || true
    [ "$(date +%s)" -lt "$deadline" ] || rf_die "host $h still has processes after 10 s of SIGKILL: $(echo $pids)"
    sleep 0.1
  done
}

link() {
  require_host "${1:-}"
  case "${2:-}" in up|down) must ip -n "$switch" link set dev "$1" "$2" ;; *) rf_die "usage: $0 link HOST down|up" ;; esac
}

status() {
  local h state
  has_netns "$switch" || { echo "set $set_name: down"; return 0; }
  echo "set $set_name on $subnet.0/24, directory $dir"
  for h in $(hosts); do
    state=down; ip -n "$switch" -o link show dev "$h" 2>/dev/null | grep -q '[<,]UP[,>]' && state=up
    printf '%-10s %-15s link %-4s processes %s\n' "$h" "$(host_addr "$h")" "$state" "$(ip netns pids "$set_name-$h" | wc -l)"
  done
}

down() {
  local h f
  for h in $(hosts); do kill_host "$h"; done
  # Unmounting a handle frees that mount namespace (now without processes) and its copies of the mounts.
  for f in "$dir"/ns/*; do if mountpoint -q "$f"; then must umount "$f"; fi; done
  if mountpoint -q "$dir/ns"; then must umount "$dir/ns"; fi
  # Deleting a namespace destroys its interfaces, and a veth's peer with it.
  for h in $(hosts); do must ip netns del "$set_name-$h"; done
  if has_netns "$switch"; then must ip netns del "$switch"; fi
  must rm -rf "$dir"
  local escaped="${dir// /\\040}"  # as mountinfo writes it
  ! grep -qF " $escaped/" /proc/self/mountinfo || rf_die "mounts of $dir remain after down: $(grep -F " $escaped/" /proc/self/mountinfo)"
  rf_say "set $set_name down"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  exec) shift; exec_on "$@" ;;
  addr) require_host "${2:-}"; a=$(host_addr "$2"); [ -n "$a" ] || rf_die "host $2 has no address on eth0"; echo "$a" ;;
  pids) require_host "${2:-}"; ip netns pids "$set_name-$2" ;;
  kill) require_host "${2:-}"; kill_host "$2"; rf_say "host $2: every process killed" ;;
  link) link "${2:-}" "${3:-}" ;;
  status) status ;;
  dir) echo "$dir" ;;
  down) down ;;
  _setup) setup_host "$2" ;;
  _enter) shift; enter_host "$@" ;;
  *) echo "usage: $0 up HOST...|exec HOST -- CMD...|addr HOST|pids HOST|kill HOST|link HOST down|up|status|dir|down" >&2; exit 2 ;;
esac
