#!/usr/bin/env bash
# Installs what `make test` needs on a fresh machine, idempotently: the
# PostgreSQL server binaries, headless Chromium, Kafka's jars (Maven Central).
set -euo pipefail
cd "$(dirname "$0")/../.."
apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  apt_install postgresql
fi
command -v pgbench >/dev/null || ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 || apt_install postgresql-contrib
# promtool (alert rule tests in deploy/prometheus) and the prometheus server (the live rules and dashboard test in deploy/prometheus/live) ship in Debian's prometheus package;
# its server would take :9090 (gatehouse's admin port), so the service stays off.
if ! command -v promtool >/dev/null; then
  apt_install prometheus
  { command -v systemctl >/dev/null && systemctl disable --now prometheus >/dev/null 2>&1; } || true
fi
deploy/local/install-chromium.sh >/dev/null
deploy/local/kafka-fetch.sh >/dev/null
deploy/local/connect-fetch.sh >/dev/null  # Kafka Connect + Debezium for the Debezium equivalence test
deploy/local/keycloak-fetch.sh >/dev/null  # Keycloak for the Keycloak end-to-end test (auth)
# Schemathesis (PyPI, version pinned) in a project-local virtual environment,
# bin/schemathesis (gitignored): cmd/gatehouse/schemathesis_test.go fuzzes the API's and
# the webhook receiver's OpenAPI contracts with bin/schemathesis/bin/st.
SCHEMATHESIS_VERSION=4.32.5
st_venv=bin/schemathesis
if ! [ -x "$st_venv/bin/st" ] || ! "$st_venv/bin/st" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  command -v python3 >/dev/null || apt_install python3 python3-venv
  python3 -m venv "$st_venv" >/dev/null 2>&1 || { apt_install python3-venv && python3 -m venv "$st_venv"; }
  "$st_venv/bin/python" -m pip install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >/dev/null
fi
