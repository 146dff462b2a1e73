#!/usr/bin/env bash
# Section "Storage" of `make bench`: the receiver's write (ingest.Writer)
# against an empty store and a store with -history earlier events, a
# retention pass during a closed-loop run, and the API's list pages on the
# history store (deploy/bench/storagebench; see
# `go run ./deploy/bench/storagebench -h`), e.g.
# `-history 5000000 -days 30 -d 15s`. The default history is 50 M events:
# ~48 GB of disk (checked before the load) and about 27 minutes to load on a
# 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bin
${GO:-go} build -o bin/storagebench ./deploy/bench/storagebench
exec bin/storagebench "$@"
