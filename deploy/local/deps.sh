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
# Alertmanager and amtool (the shipped routing, deploy/alertmanager, is checked and
# driven end to end by deploy/prometheus/live); its service stays off too.
if ! command -v prometheus-alertmanager >/dev/null || ! command -v amtool >/dev/null; then
  apt_install prometheus-alertmanager
  { command -v systemctl >/dev/null && systemctl disable --now prometheus-alertmanager >/dev/null 2>&1; } || true
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
# The official AsyncAPI parser (npm @asyncapi/parser, pinned with its whole tree in
# deploy/local/asyncapi/package-lock.json) in bin/asyncapi (gitignored):
# schemas/asyncapi_test.go loads schemas/asyncapi.yaml with it through
# deploy/local/asyncapi/validate.cjs and fails on any error diagnostic.
ASYNCAPI_PARSER_VERSION=3.6.3
aa_dir=bin/asyncapi
aa_installed=$(node -p "require('./$aa_dir/node_modules/@asyncapi/parser/package.json').version" 2>/dev/null || true)
if [ "$aa_installed" != "$ASYNCAPI_PARSER_VERSION" ] || ! cmp -s deploy/local/asyncapi/package-lock.json "$aa_dir/package-lock.json"; then
  command -v npm >/dev/null || apt_install nodejs npm
  rm -rf "$aa_dir" && mkdir -p "$aa_dir"
  cp deploy/local/asyncapi/package.json deploy/local/asyncapi/package-lock.json "$aa_dir/"
  (cd "$aa_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The Python consumer example's packages (examples/python/requirements.txt, every
# package pinned: confluent-kafka, the CloudEvents SDK, jsonschema) in the virtual
# environment bin/pyexample (gitignored): cmd/gatehouse's TestPythonConsumerExample runs
# examples/python/consume.py with it against the real broker.
py_venv=bin/pyexample
if ! cmp -s examples/python/requirements.txt "$py_venv/requirements.txt" || ! [ -x "$py_venv/bin/python" ]; then
  command -v python3 >/dev/null || apt_install python3 python3-venv
  rm -rf "$py_venv"
  python3 -m venv "$py_venv" >/dev/null 2>&1 || { apt_install python3-venv && python3 -m venv "$py_venv"; }
  "$py_venv/bin/python" -m pip install -q --disable-pip-version-check -r examples/python/requirements.txt >/dev/null
  cp examples/python/requirements.txt "$py_venv/requirements.txt"
fi
# Stoplight Prism (npm @stoplight/prism-cli) with the providers' published OpenAPI
# descriptions: GitHub's (npm @octokit/openapi) and Twilio's (twilio-oai, shipped in npm
# @twilio-alpha/mcp), pinned with their whole tree in deploy/local/prism/package-lock.json,
# in bin/prism (gitignored): internal/testenv's StartPrism serves them as spec-driven
# mocks for the consumers' fetch tests.
PRISM_VERSION=5.14.2
pr_dir=bin/prism
pr_installed=$(node -p "require('./$pr_dir/node_modules/@stoplight/prism-cli/package.json').version" 2>/dev/null || true)
if [ "$pr_installed" != "$PRISM_VERSION" ] || ! cmp -s deploy/local/prism/package-lock.json "$pr_dir/package-lock.json"; then
  command -v npm >/dev/null || apt_install nodejs npm
  rm -rf "$pr_dir" && mkdir -p "$pr_dir"
  cp deploy/local/prism/package.json deploy/local/prism/package-lock.json "$pr_dir/"
  (cd "$pr_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
