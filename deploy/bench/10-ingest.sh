#!/usr/bin/env bash
# Section "Webhook receiver" of `make bench`: gatehouse's receiver (the real
# `gatehouse serve` binary, built by bench.sh into bin/gatehouse) against
# pgbench running the identical statement, at 16 and 64 connections, plus an
# open-loop run at half the maximum rate. Flags are passed to ingestbench
# (see `go run ./deploy/bench/ingestbench -h`), e.g. `-runs 3 -d 10s`.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x bin/gatehouse ] || ${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/ingestbench ./deploy/bench/ingestbench
exec bin/ingestbench -gatehouse bin/gatehouse "$@"
