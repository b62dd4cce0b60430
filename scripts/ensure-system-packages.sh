#!/usr/bin/env bash
# Installs Debian packages whose command is missing: ensure-system-packages.sh CMD=PACKAGE ...
# A CMD that names a shared library (libfoo.so.N) is looked up in the linker cache instead.
# Idempotent and quick when everything is there; uses sudo when not root.
set -euo pipefail
missing=()
for pair in "$@"; do
  cmd=${pair%%=*}; pkg=${pair#*=}
  if [[ $cmd == *.so* ]]; then
    /sbin/ldconfig -p | grep -qF "$cmd " || missing+=("$pkg")
  else
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
  echo "rollflow: please install these Debian packages (needs root): ${missing[*]}" >&2; exit 1
fi
command -v apt-get >/dev/null || { echo "rollflow: no apt-get; install by hand: ${missing[*]}" >&2; exit 1; }
echo "rollflow: installing ${missing[*]} from Debian" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
