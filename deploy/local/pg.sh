#!/usr/bin/env bash
# Starts (creating on first use) the persistent local PostgreSQL cluster used
# by `make run`, under .data/pg, and prints its connection URL.
# Usage: deploy/local/pg.sh [start|stop|url]
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA="${GATEHOUSE_DATA:-$PWD/.data}/pg"
PORT="${GATEHOUSE_PG_PORT:-54329}"
URL="postgres://postgres@127.0.0.1:${PORT}/gatehouse?sslmode=disable"

bindir() {
  if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then pg_config --bindir; return; fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}
BIN="$(bindir)"
[ -x "$BIN/initdb" ] || { echo "PostgreSQL server binaries not found; install postgresql" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}

case "${1:-start}" in
start)
  mkdir -p "$DATA"
  if [ "$(id -u)" = 0 ]; then chown nobody "$DATA"; chmod o+x "$(dirname "$DATA")"; fi
  if [ ! -f "$DATA/pgdata/PG_VERSION" ]; then
    as_owner "$BIN/initdb" -D "$DATA/pgdata" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
    cat >>"$DATA/pgdata/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DATA'
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
CONF
  fi
  if ! as_owner "$BIN/pg_ctl" -D "$DATA/pgdata" status >/dev/null 2>&1; then
    as_owner "$BIN/pg_ctl" -D "$DATA/pgdata" -l "$DATA/server.log" -w start >/dev/null
  fi
  psql "postgres://postgres@127.0.0.1:${PORT}/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname='gatehouse'" | grep -q 1 ||
    psql "postgres://postgres@127.0.0.1:${PORT}/postgres" -qc "CREATE DATABASE gatehouse" >/dev/null
  echo "$URL"
  ;;
stop)
  if [ -f "$DATA/pgdata/PG_VERSION" ] && as_owner "$BIN/pg_ctl" -D "$DATA/pgdata" status >/dev/null 2>&1; then
    as_owner "$BIN/pg_ctl" -D "$DATA/pgdata" -m fast stop
  else
    echo "local PostgreSQL is not running"
  fi ;;
url) echo "$URL" ;;
*) echo "usage: $0 [start|stop|url]" >&2; exit 2 ;;
esac
