#!/usr/bin/env bash
# Section "Webhook receiver" of `make bench`: gatehouse's receiver (the real
# `gatehouse serve` binary, built by bench.sh into bin/gatehouse) against
# pgbench running the identical statement, at 16 and 64 connections, plus an
# open-loop run at half the maximum rate; the GitHub scheme at 4, 16 and 64
# connections against pgbench's single-row INSERT (the disk's commit limit);
# the first 15 s of `gatehouse serve` on a database just created and
# migrated (cold, beside the warm rows); a partition change under load on a
# database with 2-minute partitions; the catalogue's schemes. The defaults
# below take about 12–13 minutes (the partition-roll row's lead-in lasts
# 1–3 minutes, to the next change). Flags are passed to ingestbench (see
# `go run ./deploy/bench/ingestbench -h`), e.g. `-runs 3 -d 10s`; a smoke
# run: `-runs 1 -d 3s -open-runs 1 -mix-runs 1 -cold-d 6s -cold-window 2s
# -roll-width 1m -roll-span 20s -roll-lead 20s` (about 3 minutes).
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
# The section's defaults (ingestbench's own are the tracing section's).
exec nice -n "$nice_value" bin/ingestbench -gatehouse bin/gatehouse -runs 3 -d 8s -open-runs 2 -mix-runs 3 "$@"
