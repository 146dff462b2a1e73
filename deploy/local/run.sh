#!/usr/bin/env bash
# `make run`: persistent PostgreSQL under .data/, migrations, then
# `gatehouse dev` (receiver + relay to Kafka [+ consumers] in one process)
# with the demo provider. Kafka: GATEHOUSE_KAFKA_BROKERS when set, otherwise
# an embedded in-memory broker on 127.0.0.1:9092. Prints the URL, a
# ready-to-paste signed request and how to watch the topic.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GATEHOUSE_DATABASE_URL="${GATEHOUSE_DATABASE_URL:-$(deploy/local/pg.sh start)}"
mkdir -p bin
go build -o bin/gatehouse ./cmd/gatehouse
bin/gatehouse migrate --config gatehouse.yaml
SECRET=whsec_test_gatehouse_demo_secret
BROKERS="${GATEHOUSE_KAFKA_BROKERS:-127.0.0.1:9092}"
if [ -n "${GATEHOUSE_KAFKA_BROKERS:-}" ]; then
  KAFKA_NOTE="Kafka: $GATEHOUSE_KAFKA_BROKERS"
else
  KAFKA_NOTE="Kafka: embedded in-memory broker at $BROKERS (set GATEHOUSE_KAFKA_BROKERS to use a real cluster)"
fi
cat <<MSG

gatehouse dev is starting on http://localhost:8080 (metrics: http://localhost:9090/metrics)
database: $GATEHOUSE_DATABASE_URL
$KAFKA_NOTE

Send a correctly signed test event (paste into another terminal):

  ts=\$(date +%s); body='{"id":"evt_demo_1","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_123"}}'; sig=\$(printf '%s.%s' "\$ts" "\$body" | openssl dgst -sha256 -hmac '$SECRET' | sed 's/^.* //'); curl -i -X POST http://localhost:8080/webhooks/demo -H 'Content-Type: application/json' -H "X-Gatehouse-Timestamp: \$ts" -H "X-Gatehouse-Signature: \$sig" --data "\$body"

or:  bin/gatehouse send --config gatehouse.yaml --provider demo

Watch the relayed records on the demo provider's topic (key = payment id, ce_* headers):

  bin/gatehouse tail --brokers $BROKERS --topic gatehouse.webhooks.demo --from-beginning

or with kcat (apt-get install kcat):

  kcat -C -b $BROKERS -t gatehouse.webhooks.demo -o beginning -f 'key=%k headers=%h\n%s\n\n'

Look at what was stored:

  psql '$GATEHOUSE_DATABASE_URL' -c 'TABLE inbox' -c 'SELECT id, aggregateid, topic, published_at FROM outbox'

MSG
exec bin/gatehouse dev --config gatehouse.yaml
