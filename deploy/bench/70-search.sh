#!/usr/bin/env bash
# Section "Payload search" of `make bench`: the first page of a
# payload search over a day of events (default 1 M), as a bounded scan and
# through the per-provider GIN index, and the index's cost to the receiver.
# Flags go to searchbench (`go run ./deploy/bench/searchbench -h`), e.g.
# `-events 1000000 -rounds 3`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bin
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/searchbench ./deploy/bench/searchbench
exec bin/searchbench -gatehouse bin/gatehouse "$@"
