#!/usr/bin/env bash
# `make bench`: runs every benchmark section in turn and prints one Markdown
# report (machine header + one section per stage), also saved under
# bin/bench-<UTC date>.md (bin/ is git-ignored) so it can be pasted into docs/BENCHMARKS.md.
#
# SECTIONS — the list of section scripts, run in this order. To add a
# section (relay, consumers, …), write an executable
# deploy/bench/<nn>-<name>.sh that prints its own "## <Title>" Markdown
# section on stdout (progress on stderr) and exits non-zero on failure; the
# glob below picks it up, ordered by <nn>:
#   10-ingest.sh     webhook receiver vs pgbench          (deploy/bench/ingestbench)
#   11-tracing.sh    receiver with tracing off vs on      (ingestbench -tracing)
#   20-relay.sh      outbox relay vs a Kafka producer     (deploy/bench/relaybench)
#   30-consumers.sh  Kafka consumers vs pgbench           (deploy/bench/consumerbench)
#   40-overload.sh   receiver under overload              (ingestbench -overload)
#   50-storage.sh    history and retention                (deploy/bench/storagebench)
#   60-pipeline.sh   serve + relay + consume sustained    (deploy/bench/pipelinebench)
#   70-search.sh     payload search, scanned and indexed  (deploy/bench/searchbench)
#   80-reconcile.sh  a reconciliation pass (Stripe backfill) (deploy/bench/reconcilebench)
#
# Every section's output starts with a line naming the commit, the date and
# the load average at its start and end; a section started with a load
# average above 1.5 × the cores says "(DISTURBED: …)" in its heading
# (deploy/bench/benchenv, main.go).
#
# Environment:
#   BENCH_ONLY=ingest,relay   run only the sections whose <name> is listed
#   BENCH_ARGS_<NAME>="…"     extra flags for one section, e.g.
#                             BENCH_ARGS_INGEST="-runs 3 -d 10s" (each section has its own flags)
#   GO                        go command (default go)
set -euo pipefail
cd "$(dirname "$0")/../.."
export GO="${GO:-go}"

mkdir -p bin
"$GO" build -o bin/gatehouse ./cmd/gatehouse

out="bin/bench-$(date -u +%Y%m%dT%H%M%SZ).md"
{
	echo "# gatehouse benchmarks"
	echo
	deploy/bench/machine.sh
	echo
} | tee "$out"

status=0
for section in deploy/bench/[0-9][0-9]-*.sh; do
	[ -x "$section" ] || continue
	name="$(basename "$section" .sh)"
	name="${name#[0-9][0-9]-}"
	if [ -n "${BENCH_ONLY:-}" ] && [[ ",${BENCH_ONLY}," != *",${name},"* ]]; then
		continue
	fi
	echo "bench: running section ${name} (${section})" >&2
	args_var="BENCH_ARGS_$(echo "$name" | tr '[:lower:]-' '[:upper:]_')"
	# shellcheck disable=SC2086 # the variable holds a list of flags
	if ! "$section" ${!args_var:-} | tee -a "$out"; then
		echo "bench: section ${name} FAILED" >&2
		echo -e "\n## ${name}\n\nFAILED (see the output of \`make bench\`).\n" >>"$out"
		status=1
	fi
	echo | tee -a "$out"
done
echo "bench: report saved to ${out}" >&2
exit "$status"
