#!/usr/bin/env bash
# Section "Reconciliation" of `make bench`: one Stripe backfill pass
# (`gatehouse reconcile --provider stripe --since 25h`) over 100 000 events of
# the provider's list, 1 % of them missing from the inbox, from a mock of
# GET /v1/events at 50 ms per call under api_rate_limit 100/s: the pass's
# time, its API calls and the process's CPU against the targets. Flags are
# passed to reconcilebench (`go run ./deploy/bench/reconcilebench -h`), e.g.
# `-events 100000 -missing 1 -latency 50ms -rate 100`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bin
${GO:-go} build -o bin/gatehouse ./cmd/gatehouse
${GO:-go} build -o bin/reconcilebench ./deploy/bench/reconcilebench
exec bin/reconcilebench -gatehouse bin/gatehouse "$@"
