#!/usr/bin/env bash
# Section "Storage" of `make bench`: the receiver's write (ingest.Writer)
# against an empty store and a store with -history earlier events, a
# retention pass during a closed-loop run, and the API's list pages on the
# history store (deploy/bench/storagebench; see
# `go run ./deploy/bench/storagebench -h`), e.g.
# `-history 5000000 -days 30 -d 15s` (50 M events take
# ~45 GB of disk and the better part of an hour to load on this machine).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bin
${GO:-go} build -o bin/storagebench ./deploy/bench/storagebench
exec bin/storagebench "$@"
