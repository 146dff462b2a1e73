#!/usr/bin/env bash
# `make run`: persistent PostgreSQL under .data/, migrations, then gatehouse
# with the demo provider. Prints the URL and a ready-to-paste signed request.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GATEHOUSE_DATABASE_URL="${GATEHOUSE_DATABASE_URL:-$(deploy/local/pg.sh start)}"
mkdir -p bin
go build -o bin/gatehouse ./cmd/gatehouse
bin/gatehouse migrate --config gatehouse.yaml
SECRET=whsec_test_gatehouse_demo_secret
cat <<MSG

gatehouse is starting on http://localhost:8080 (metrics: http://localhost:9090/metrics)
database: $GATEHOUSE_DATABASE_URL

Send a correctly signed test event (paste into another terminal):

  ts=\$(date +%s); body='{"id":"evt_demo_1","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_123"}}'; sig=\$(printf '%s.%s' "\$ts" "\$body" | openssl dgst -sha256 -hmac '$SECRET' | sed 's/^.* //'); curl -i -X POST http://localhost:8080/webhooks/demo -H 'Content-Type: application/json' -H "X-Gatehouse-Timestamp: \$ts" -H "X-Gatehouse-Signature: \$sig" --data "\$body"

or:  bin/gatehouse send --config gatehouse.yaml --provider demo

Look at what was stored:

  psql '$GATEHOUSE_DATABASE_URL' -c 'TABLE inbox' -c 'TABLE outbox'

MSG
exec bin/gatehouse serve --config gatehouse.yaml
