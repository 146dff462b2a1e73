#!/usr/bin/env bash
# Starts (creating on first use) the persistent local PostgreSQL cluster used
# by `make run`, under .data/pg, and prints its connection URL; stops it
# (`make stop`); stops it and deletes .data/ (`make reset`).
# Usage: deploy/local/pg.sh [start|stop|reset|url]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="${GATEHOUSE_DATA:-$PWD/.data}"
DATA="$ROOT/pg"
PORT="${GATEHOUSE_PG_PORT:-54329}"
URL="postgres://postgres@127.0.0.1:${PORT}/gatehouse?sslmode=disable"
PIDFILE="$DATA/pgdata/postmaster.pid"

bindir() {
  if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then pg_config --bindir; return; fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

# PostgreSQL refuses to run as root: as root the cluster belongs to nobody
# (start creates it so), and pg_ctl runs as the cluster's owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    local owner=nobody
    [ -e "$DATA/pgdata" ] && owner="$(stat -c %U "$DATA/pgdata")"
    runuser -u "$owner" -- "$@"
  else
    "$@"
  fi
}

# run.sh keeps .data/ mode 0700 (it holds the database URL and keys), which
# the cluster's owner cannot enter when the caller is root: pg_ctl as that
# owner then sees no server and stops nothing. As root, let the owner
# traverse .data/ (o+x, no listing) while pg_ctl runs, then put the mode
# back.
with_traversal() {
  if [ "$(id -u)" != 0 ] || [ ! -d "$ROOT" ]; then "$@"; return; fi
  local mode rc=0
  mode="$(stat -c %a "$ROOT")"
  chmod o+x "$ROOT"
  "$@" || rc=$?
  chmod "$mode" "$ROOT"
  return "$rc"
}

# live_pid prints the pid of the postmaster running on .data/pg, if any.
# It reads postmaster.pid as the caller (root reads anything; any other
# caller owns the cluster) and checks that the process is alive and is a
# postgres, so it never depends on pg_ctl being able to look.
live_pid() {
  local pid argv0
  [ -r "$PIDFILE" ] || return 1
  pid="$(head -n 1 "$PIDFILE" 2>/dev/null)" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  argv0="$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n 1)"
  [ "$(basename "$argv0")" = postgres ] || return 1
  echo "$pid"
}

# stop stops the server, and fails unless it is gone afterwards.
stop() {
  local pid
  if ! pid="$(live_pid)"; then
    echo "local PostgreSQL is not running"
    return 0
  fi
  with_traversal as_owner "$BIN/pg_ctl" -D "$DATA/pgdata" -m fast -w stop || true
  for _ in $(seq 1 50); do
    live_pid >/dev/null || { echo "local PostgreSQL stopped"; return 0; }
    sleep 0.1
  done
  echo "local PostgreSQL (pid $pid, $DATA/pgdata) is still running and could not be stopped" >&2
  return 1
}

case "${1:-start}" in
start | stop | reset) BIN="$(bindir)"
  [ -x "$BIN/initdb" ] || { echo "PostgreSQL server binaries not found; install postgresql" >&2; exit 1; } ;;
esac

case "${1:-start}" in
start)
  mkdir -p "$DATA"
  if [ "$(id -u)" = 0 ]; then chown nobody "$DATA"; chmod o+x "$ROOT"; fi
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
  if ! live_pid >/dev/null; then
    as_owner "$BIN/pg_ctl" -D "$DATA/pgdata" -l "$DATA/server.log" -w start >/dev/null
  fi
  psql "postgres://postgres@127.0.0.1:${PORT}/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname='gatehouse'" | grep -q 1 ||
    psql "postgres://postgres@127.0.0.1:${PORT}/postgres" -qc "CREATE DATABASE gatehouse" >/dev/null
  echo "$URL"
  ;;
stop) stop ;;
reset)
  # Never delete the files of a live server: stop it first, and refuse
  # when it is still there.
  stop || { echo "not deleting $ROOT" >&2; exit 1; }
  if pid="$(live_pid)"; then
    echo "local PostgreSQL (pid $pid) still runs on $DATA/pgdata; not deleting $ROOT" >&2
    exit 1
  fi
  rm -rf "$ROOT"
  echo "deleted $ROOT"
  ;;
url) echo "$URL" ;;
*) echo "usage: $0 [start|stop|reset|url]" >&2; exit 2 ;;
esac
