#!/usr/bin/env bash
# Section "Sustained pipeline" of `make bench`: `gatehouse serve`, `relay`
# and `consume` as separate processes at half the receiver's maximum rate
# for -d (default 10m), with partition_interval 1m and retention 3m so
# partitions are created and dropped during the run
# (deploy/bench/pipelinebench; see `go run ./deploy/bench/pipelinebench -h`),
# e.g. BENCH_ARGS_PIPELINE="-d 1m" for a short run.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bin
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/pipelinebench ./deploy/bench/pipelinebench
exec bin/pipelinebench -gatehouse bin/gatehouse "$@"
