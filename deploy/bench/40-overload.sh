#!/usr/bin/env bash
# Section "Under overload" of `make bench`: provider B's latency
# alone and beside provider A's closed-loop flood, slow-body and
# slow-header clients, then B at 100/s alone and beside 64 and 400
# connections holding unverified bytes of A's endpoint (each declares
# 1 MiB, sends 513 KiB and idles; from 127.0.0.2), with B's refusals, p99
# and gatehouse's peak RSS, against the real `gatehouse serve` binary (built by
# bench.sh into bin/gatehouse): the receiver benchmark's overload mode
# (`ingestbench -overload`; `go run ./deploy/bench/ingestbench -h`). Flags
# go to ingestbench, e.g. `-runs 3 -d 10s`, or `-budget-only` for the
# unverified-bytes table alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/ingestbench ./deploy/bench/ingestbench
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec bin/ingestbench -gatehouse bin/gatehouse -overload -runs 3 "$@"
