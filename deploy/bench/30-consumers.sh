#!/usr/bin/env bash
# Section "Consumers" of `make bench`: consumer drain rates with the
# projection write (against pgbench running the consumer's own statements),
# API calls and rate limits, end-to-end latency from the receiver's 2xx to a
# final processing_state at a steady rate through `gatehouse serve`,
# `relay` and `consume` processes, and forwards. Flags are passed to consumerbench
# (`go run ./deploy/bench/consumerbench -h`), e.g. `-n 50000 -rate 300 -d 30s`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bin
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/consumerbench ./deploy/bench/consumerbench
exec bin/consumerbench -gatehouse bin/gatehouse "$@"
