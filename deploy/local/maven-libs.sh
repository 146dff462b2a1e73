#!/usr/bin/env bash
# maven-libs.sh: resolve Maven coordinates and their runtime dependency
# closure from Maven Central with mvn into a cached libs directory, and
# print that directory on stdout (and nothing else; mvn's output goes to
# stderr). Idempotent (libs/.complete) and safe to run concurrently (flock).
# kafka-fetch.sh and connect-fetch.sh are this script with their artifacts.
#
#   maven-libs.sh NAME CACHE_SUBDIR REQUIRED_JAR_GLOB GROUP:ARTIFACT:VERSION...
#
# Environment: GATEHOUSE_CACHE (default $HOME/.cache/gatehouse),
# GATEHOUSE_MVN_ARGS (extra mvn arguments, e.g. -Dmaven.repo.local=/tmp/m2).
set -euo pipefail
[[ $# -ge 4 ]] || { echo "usage: maven-libs.sh NAME CACHE_SUBDIR REQUIRED_JAR_GLOB GROUP:ARTIFACT:VERSION..." >&2; exit 2; }
name="$1" sub="$2" required="$3"
shift 3
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
cache_root="${GATEHOUSE_CACHE:-${HOME}/.cache/gatehouse}"
dir="${cache_root}/${sub}"
libs="${dir}/libs"
if [[ -f "${libs}/.complete" ]]; then
	echo "${libs}"
	exit 0
fi
command -v mvn >/dev/null 2>&1 || { echo "${name}: mvn not found on PATH" >&2; exit 1; }
mkdir -p "${dir}"
exec 9>"${dir}/.lock"
flock 9
# Another process may have finished while we waited for the lock.
if [[ -f "${libs}/.complete" ]]; then
	echo "${libs}"
	exit 0
fi
build="${dir}/build"
rm -rf "${build}"
mkdir -p "${build}"
{
	echo '<?xml version="1.0" encoding="UTF-8"?>'
	echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
	echo "<groupId>io.gatehouse.local</groupId><artifactId>${name}-libs</artifactId><version>1</version><packaging>pom</packaging><dependencies>"
	for coord in "$@"; do
		IFS=: read -r g a v <<<"${coord}"
		echo "<dependency><groupId>${g}</groupId><artifactId>${a}</artifactId><version>${v}</version></dependency>"
	done
	echo '</dependencies></project>'
} >"${build}/pom.xml"
staging="${dir}/libs.tmp.$$"
rm -rf "${staging}"
echo "${name}: resolving $* from Maven Central" >&2
# shellcheck disable=SC2086 # GATEHOUSE_MVN_ARGS is a word list on purpose
if ! mvn -B -q -f "${build}/pom.xml" ${GATEHOUSE_MVN_ARGS:-} "${DEP_PLUGIN}:copy-dependencies" \
	-DincludeScope=runtime -DoutputDirectory="${staging}" 1>&2; then
	rm -rf "${staging}"
	echo "${name}: mvn failed" >&2
	exit 1
fi
# shellcheck disable=SC2086 # the glob is meant to expand
if ! ls "${staging}"/${required} >/dev/null 2>&1; then
	rm -rf "${staging}"
	echo "${name}: ${required} missing after mvn" >&2
	exit 1
fi
touch "${staging}/.complete"
rm -rf "${libs}"
mv "${staging}" "${libs}"
rm -rf "${build}"
echo "${libs}"
