#!/usr/bin/env bash
# Section "Consumers" of `make bench`: consumer throughput with the
# projection write (against pgbench running the consumer's own statements
# and a plain Kafka read), and end-to-end latency from the receiver's 2xx to
# processing_state succeeded at a steady rate, through the real receiver,
# relay and consumer. Flags are passed to consumerbench
# (`go run ./deploy/bench/consumerbench -h`), e.g. `-n 50000 -rate 300 -d 30s`.
set -euo pipefail
cd "$(dirname "$0")/../.."
${GO:-go} build -o bin/consumerbench ./deploy/bench/consumerbench
exec bin/consumerbench "$@"
