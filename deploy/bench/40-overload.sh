#!/usr/bin/env bash
# Section "Under overload" of `make bench`: provider B's latency
# alone and beside provider A's closed-loop flood, slow-body and
# slow-header clients, against the real `gatehouse serve` binary (built by
# bench.sh into bin/gatehouse): the receiver benchmark's overload mode
# (`ingestbench -overload`; `go run ./deploy/bench/ingestbench -h`). Flags
# go to ingestbench, e.g. `-runs 3 -d 10s`.
set -euo pipefail
cd "$(dirname "$0")/../.."
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/ingestbench ./deploy/bench/ingestbench
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec bin/ingestbench -gatehouse bin/gatehouse -overload -runs 3 "$@"
