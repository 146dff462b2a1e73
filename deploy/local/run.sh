#!/usr/bin/env bash
# `make run`: persistent PostgreSQL under .data/, migrations, then
# `gatehouse dev` (receiver + relay to Kafka [+ consumers] in one process)
# with the demo provider. Kafka: GATEHOUSE_KAFKA_BROKERS when set, otherwise
# an embedded in-memory broker on 127.0.0.1:9092. Prints the URL, a
# ready-to-paste signed request and how to watch the topic.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GATEHOUSE_DATABASE_URL="${GATEHOUSE_DATABASE_URL:-$(deploy/local/pg.sh start)}"
# What gatehouse.yaml references, so `bin/gatehouse <subcommand>` works from
# a second terminal without exports.
# The URL may hold a password: .data/ and the file are the user's alone
# (0700, 0600), also when they were created by an earlier version.
mkdir -p .data bin
chmod 700 .data
(umask 077 && printf '%s\n' "$GATEHOUSE_DATABASE_URL" >.data/database-url.tmp && chmod 600 .data/database-url.tmp && mv -f .data/database-url.tmp .data/database-url)
[ -s .data/auth-encryption-key ] || (umask 077 && openssl rand -base64 32 >.data/auth-encryption-key)
go build -o bin/gatehouse ./cmd/gatehouse
bin/gatehouse migrate --config gatehouse.yaml
SECRET=whsec_test_gatehouse_demo_secret

# Sign-in: a real OpenID Provider (zitadel/oidc's example OP, built from
# deploy/local/op so it listens on 127.0.0.1 only) on port 9998 unless
# GATEHOUSE_AUTH_ISSUER names another one. The token encryption key is
# generated once and kept under .data/, so stored sessions survive restarts.
mkdir -p .data
OP_PID=""
if [ -z "${GATEHOUSE_AUTH_ISSUER:-}" ]; then
  OP_PORT="${GATEHOUSE_OP_PORT:-9998}"
  go build -o bin/op ./deploy/local/op
  PORT="$OP_PORT" REDIRECT_URI=http://localhost:8080/callback bin/op >.data/op.log 2>&1 &
  OP_PID=$!
  trap 'kill $OP_PID 2>/dev/null' EXIT
  for _ in $(seq 1 50); do
    curl -fs "http://127.0.0.1:$OP_PORT/.well-known/openid-configuration" >/dev/null && break
    sleep 0.2
  done
  export GATEHOUSE_AUTH_ISSUER="http://localhost:$OP_PORT/" GATEHOUSE_AUTH_CLIENT_ID=web \
    GATEHOUSE_AUTH_CLIENT_SECRET=secret GATEHOUSE_AUTH_REDIRECT_URL=http://localhost:8080/callback
fi
BROKERS="${GATEHOUSE_KAFKA_BROKERS:-127.0.0.1:9092}"
if [ -n "${GATEHOUSE_KAFKA_BROKERS:-}" ]; then
  KAFKA_NOTE="Kafka: $GATEHOUSE_KAFKA_BROKERS"
else
  KAFKA_NOTE="Kafka: embedded in-memory broker at $BROKERS (set GATEHOUSE_KAFKA_BROKERS to use a real cluster)"
fi
cat <<MSG

gatehouse dev is starting on http://127.0.0.1:8080, loopback only (metrics: http://127.0.0.1:9090/metrics)
database: $GATEHOUSE_DATABASE_URL
$KAFKA_NOTE

Send a correctly signed test event (paste into another terminal):

  ts=\$(date +%s); body='{"id":"evt_demo_1","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_123"}}'; sig=\$(printf '%s.%s' "\$ts" "\$body" | openssl dgst -sha256 -hmac '$SECRET' | sed 's/^.* //'); curl -i -X POST http://127.0.0.1:8080/webhooks/demo -H 'Content-Type: application/json' -H "X-Gatehouse-Timestamp: \$ts" -H "X-Gatehouse-Signature: \$sig" --data "\$body"

or:  bin/gatehouse send --config gatehouse.yaml --provider demo

Watch the relayed records on the demo provider's topic (key = payment id, ce_* headers):

  bin/gatehouse tail --brokers $BROKERS --topic gatehouse.webhooks.demo --from-beginning

or with kcat (apt-get install kcat):

  kcat -C -b $BROKERS -t gatehouse.webhooks.demo -o beginning -f 'key=%k headers=%h\n%s\n\n'

Console: http://localhost:8080/console/ (events, dead letters, replay) once signed in.
Sign in: open http://localhost:8080/ in a browser (identity provider: $GATEHOUSE_AUTH_ISSUER;
the local example OP's test user is test-user@localhost / verysecure).

Look at what was stored:

  psql '$GATEHOUSE_DATABASE_URL' -c 'TABLE inbox' -c 'SELECT id, aggregateid, topic FROM outbox'

(the outbox is an append-only log: SELECT slot, snap FROM outbox_cursor shows how far the relay got)

The demo provider's API runs at http://127.0.0.1:9191, so a sent event ends
'succeeded' (see it: bin/gatehouse replay --dead --dry-run lists dead ones;
the signed-in test user is an operator for http://localhost:8080/api/v1/events).
Every bin/gatehouse subcommand works from another terminal in this directory
(gatehouse.yaml reads .data/database-url and .data/auth-encryption-key).

Stop: Ctrl-C, then 'make stop' (stops the local PostgreSQL).
Reset: 'make reset' (stops it and deletes .data/: database, sessions, keys).

MSG
if [ -n "$OP_PID" ]; then
  bin/gatehouse dev --config gatehouse.yaml --demo-api 127.0.0.1:9191   # not exec: the trap stops the OP afterwards
else
  exec bin/gatehouse dev --config gatehouse.yaml --demo-api 127.0.0.1:9191
fi
