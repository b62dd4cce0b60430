#!/usr/bin/env bash
# Builds the Debian bookworm root file system every bench image starts from, with mmdebstrap from Debian's
# own packages (no registry is reachable here), and imports it into podman as rollflow-base:bookworm.
#   bench/compose/rootfs.sh      (run by bench/compose/run.sh, with its CONTAINERS_CONF and storage)
# Cached: the tarball is kept under $COMPOSE_STATE, keyed by the package list; a second run imports only if
# the image is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"

# What the images need: python3-venv for the engines' venv, postgresql for the db image, curl for the
# bucket step and health checks, passwd/adduser because PostgreSQL refuses to run as root, libstdc++ for node.
packages="ca-certificates,curl,python3,python3-venv,postgresql,passwd,adduser,procps,iproute2,libstdc++6,netbase"
key=$(printf '%s' "$packages" | sha256sum | cut -c1-12)
tarball="$COMPOSE_STATE/rootfs-bookworm-$key.tar"

if [ ! -s "$tarball" ]; then
  say "building the bookworm root file system with mmdebstrap ($packages)"
  t0=$(date +%s)
  # --variant=apt: essential packages and apt only; everything else is named above.
  # The output's name must end in .tar: mmdebstrap picks the format from it (anything else is a directory).
  mmdebstrap --variant=apt --include="$packages" bookworm "${tarball%.tar}-part.tar" http://deb.debian.org/debian >"$COMPOSE_STATE/mmdebstrap.log" 2>&1 \
    || die "mmdebstrap failed; see $COMPOSE_STATE/mmdebstrap.log"
  mv "${tarball%.tar}-part.tar" "$tarball"
  say "root file system built in $(( $(date +%s) - t0 ))s: $tarball"
fi

if [ "$(podman image inspect --format '{{index .Labels "rollflow.rootfs"}}' rollflow-base:bookworm 2>/dev/null)" != "$key" ]; then
  podman import --change "LABEL rollflow.rootfs=$key" --change 'CMD ["/bin/bash"]' "$tarball" rollflow-base:bookworm >/dev/null
  say "imported rollflow-base:bookworm"
fi
