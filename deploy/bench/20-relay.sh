#!/usr/bin/env bash
# Section "Relay" of `make bench`: the outbox relay (both modes, the
# `gatehouse relay` binary) against a franz-go producer writing the same
# records straight to the same broker. Flags are passed to relaybench (see
# `go run ./deploy/bench/relaybench -h`), e.g. `-d 5s -rates 1000,5000`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bin
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/relaybench ./deploy/bench/relaybench
exec bin/relaybench -gatehouse bin/gatehouse "$@"
