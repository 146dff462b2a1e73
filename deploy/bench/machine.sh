#!/usr/bin/env bash
# Prints the machine a benchmark ran on, as a Markdown table (for
# docs/BENCHMARKS.md): CPU model, cores, RAM, kernel, PostgreSQL, Go, date,
# and the load average (the benchmarks share the machine with whatever else runs).
set -euo pipefail
cpu="$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: //')"
cores="$(nproc)"
ram="$(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
pgbin="$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
pgver="$("$pgbin/postgres" --version 2>/dev/null || echo unknown)"
gover="$(${GO:-go} env GOVERSION 2>/dev/null || echo unknown)"
echo "| machine | |"
echo "|---|---|"
echo "| CPU | ${cpu} |"
echo "| cores | ${cores} |"
echo "| RAM | ${ram} |"
echo "| kernel | $(uname -sr) |"
echo "| PostgreSQL | ${pgver} |"
echo "| pgbench | $(pgbench --version 2>/dev/null || echo unknown) |"
echo "| Go | ${gover} |"
echo "| date | $(date -u +%Y-%m-%dT%H:%MZ) |"
echo "| load average at start | $(cut -d' ' -f1-3 /proc/loadavg) |"
