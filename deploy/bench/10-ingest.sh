#!/usr/bin/env bash
# Section "Webhook receiver" of `make bench`: gatehouse's receiver (the real
# `gatehouse serve` binary, built by bench.sh into bin/gatehouse) against
# pgbench running the identical statement, at 16 and 64 connections, plus an
# open-loop run at half the maximum rate. Flags are passed to ingestbench
# (see `go run ./deploy/bench/ingestbench -h`), e.g. `-runs 3 -d 10s`.
#
# BENCH_NICE (default -10 when run as root, else 0) is the nice value of the
# whole benchmark: ingestbench and everything it starts (PostgreSQL,
# gatehouse, pgbench) inherit it, both sides alike, so concurrent builds on a
# shared machine disturb the measurement less. BENCH_NICE=0 turns it off.
set -euo pipefail
cd "$(dirname "$0")/../.."
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/ingestbench ./deploy/bench/ingestbench
nice_value="${BENCH_NICE:-$([ "$(id -u)" = 0 ] && echo -10 || echo 0)}"
exec nice -n "$nice_value" bin/ingestbench -gatehouse bin/gatehouse "$@"
