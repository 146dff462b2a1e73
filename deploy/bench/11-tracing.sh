#!/usr/bin/env bash
# Section "Tracing" of `make bench`: the receiver (bin/gatehouse serve) with
# tracing off and on at 100 % sampling to a local Jaeger (started through
# internal/testenv; built into ~/.cache/gatehouse on first use), interleaved
# with pgbench, at 16 and 64 connections. Flags go to ingestbench, e.g.
# `-runs 3 -d 10s`. BENCH_NICE as in 10-ingest.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/ingestbench ./deploy/bench/ingestbench
nice_value="${BENCH_NICE:-$([ "$(id -u)" = 0 ] && echo -10 || echo 0)}"
exec nice -n "$nice_value" bin/ingestbench -gatehouse bin/gatehouse -tracing "$@"
