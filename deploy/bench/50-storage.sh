#!/usr/bin/env bash
# Section "Storage" of `make bench`: the receiver's write (ingest.Writer)
# against an empty store and a store with -history earlier events, and a
# retention pass during a closed-loop run (deploy/bench/storagebench; see
# `go run ./deploy/bench/storagebench -h`), e.g. `-history 5000000 -d 15s`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bin
${GO:-go} build -o bin/storagebench ./deploy/bench/storagebench
exec bin/storagebench "$@"
