#!/bin/bash
# Creates the database cluster on first start (password auth for every connection), then runs PostgreSQL in
# the foreground as the postgres user (it refuses to run as root).
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
mkdir -p "$PGDATA" && chown postgres: "$PGDATA" && chmod 700 "$PGDATA"
# The socket directory (pg_isready's default) is on the container's fresh /run.
install -d -o postgres -g postgres /var/run/postgresql
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp) && printf '%s\n' "${POSTGRES_PASSWORD:?}" >"$pw" && chown postgres: "$pw"
  runuser -u postgres -- "$bin/initdb" -D "$PGDATA" -U "${POSTGRES_USER:?}" --pwfile="$pw" -E UTF8 --no-locale \
    --auth-local=scram-sha-256 --auth-host=scram-sha-256
  rm -f "$pw"
  # Other containers connect over the compose network.
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
fi
exec runuser -u postgres -- "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
