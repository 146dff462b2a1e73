#!/usr/bin/env bash
# connect-fetch.sh: fetch Kafka Connect (the same Kafka version as
# kafka-fetch.sh) with Debezium's PostgreSQL connector and its Outbox Event
# Router from Maven Central with mvn, into
#
#   ${GATEHOUSE_CACHE:-$HOME/.cache/gatehouse}/connect-<kafka>-debezium-<version>/libs
#
# and print that libs directory on stdout (and nothing else); mvn's output
# goes to stderr. Idempotent (libs/.complete) and safe to run concurrently
# (flock). Used by the Debezium equivalence test (cmd/gatehouse) and by
# anyone who wants to run Debezium beside or instead of `gatehouse relay`:
#   java -cp '<libs>/*' org.apache.kafka.connect.cli.ConnectStandalone worker.properties connector.properties
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-4.1.1}"
DEBEZIUM_VERSION="${DEBEZIUM_VERSION:-3.4.3.Final}" # built against Kafka 4.1.1
LOG4J_VERSION="2.24.3"
SLF4J_VERSION="2.0.17"
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

cache_root="${GATEHOUSE_CACHE:-${HOME}/.cache/gatehouse}"
dir="${cache_root}/connect-${KAFKA_VERSION}-debezium-${DEBEZIUM_VERSION}"
libs="${dir}/libs"
if [[ -f "${libs}/.complete" ]]; then
	echo "${libs}"
	exit 0
fi
command -v mvn >/dev/null 2>&1 || { echo "connect-fetch: mvn not found on PATH" >&2; exit 1; }
mkdir -p "${dir}"
exec 9>"${dir}/.lock"
flock 9
if [[ -f "${libs}/.complete" ]]; then
	echo "${libs}"
	exit 0
fi
build="${dir}/build"
rm -rf "${build}"
mkdir -p "${build}"
cat >"${build}/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.gatehouse.local</groupId>
  <artifactId>connect-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-json</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-transforms</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>io.debezium</groupId><artifactId>debezium-connector-postgres</artifactId><version>${DEBEZIUM_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>${SLF4J_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>${LOG4J_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>${LOG4J_VERSION}</version></dependency>
  </dependencies>
</project>
EOF
staging="${dir}/libs.tmp.$$"
rm -rf "${staging}"
echo "connect-fetch: resolving Kafka Connect ${KAFKA_VERSION} and Debezium ${DEBEZIUM_VERSION} from Maven Central" >&2
# shellcheck disable=SC2086
if ! mvn -B -q -f "${build}/pom.xml" ${GATEHOUSE_MVN_ARGS:-} "${DEP_PLUGIN}:copy-dependencies" \
	-DincludeScope=runtime -DoutputDirectory="${staging}" 1>&2; then
	rm -rf "${staging}"
	echo "connect-fetch: mvn failed" >&2
	exit 1
fi
ls "${staging}"/debezium-connector-postgres-*.jar >/dev/null 2>&1 || { echo "connect-fetch: debezium-connector-postgres missing after mvn" >&2; exit 1; }
touch "${staging}/.complete"
rm -rf "${libs}"
mv "${staging}" "${libs}"
rm -rf "${build}"
echo "${libs}"
