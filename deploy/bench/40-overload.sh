#!/usr/bin/env bash
# Section "Under overload" of `make bench` (issue 25): provider B's latency
# alone and beside provider A's closed-loop flood, slow-body and
# slow-header clients, against the real `gatehouse serve` binary (built by
# bench.sh into bin/gatehouse). Flags go to overloadbench
# (`go run ./deploy/bench/overloadbench -h`), e.g. `-runs 3 -d 10s`.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x bin/gatehouse ] || ${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/overloadbench ./deploy/bench/overloadbench
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec bin/overloadbench -gatehouse bin/gatehouse "$@"
