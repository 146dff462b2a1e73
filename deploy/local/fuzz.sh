#!/usr/bin/env bash
# `make fuzz`: runs every Go fuzz target in the module for FUZZTIME each
# (default 20s). New failing inputs land in the package's testdata/fuzz/.
set -euo pipefail
cd "$(dirname "$0")/../.."
FUZZTIME="${FUZZTIME:-20s}"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
    echo "== $pkg $target ($FUZZTIME)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"
  done
done
