#!/usr/bin/env bash
# kafka-fetch.sh: fetch Apache Kafka 4.x server jars (KRaft broker + storage
# tool) and their runtime dependency closure from Maven Central
# (maven-libs.sh), into
#
#   ${GATEHOUSE_CACHE:-$HOME/.cache/gatehouse}/kafka-<version>/libs
#
# and print that libs directory on stdout (and nothing else), with the
# broker's log4j2.xml beside it. Idempotent and safe to run concurrently.
#
# Run the broker with:
#   java -Dlog4j2.configurationFile=<cache>/kafka-<version>/log4j2.xml \
#        -cp '<libs>/*' kafka.Kafka server.properties
# Format storage with:
#   java -cp '<libs>/*' kafka.tools.StorageTool format --standalone -t <id> -c server.properties
#
# Environment:
#   KAFKA_VERSION      Kafka version to fetch (default below)
#   GATEHOUSE_CACHE    cache root (default $HOME/.cache/gatehouse)
#   GATEHOUSE_MVN_ARGS extra mvn arguments, e.g. -Dmaven.repo.local=/tmp/m2
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-4.1.1}"
SCALA_VERSION="2.13"
LOG4J_VERSION="2.24.3"
SLF4J_VERSION="2.0.17"

command -v java >/dev/null 2>&1 || { echo "kafka-fetch: java not found on PATH" >&2; exit 1; }
libs="$("$(dirname "$0")/maven-libs.sh" kafka-fetch "kafka-${KAFKA_VERSION}" "kafka_${SCALA_VERSION}-${KAFKA_VERSION}.jar" \
	"org.apache.kafka:kafka_${SCALA_VERSION}:${KAFKA_VERSION}" \
	"org.slf4j:slf4j-api:${SLF4J_VERSION}" \
	"org.apache.logging.log4j:log4j-slf4j2-impl:${LOG4J_VERSION}" \
	"org.apache.logging.log4j:log4j-core:${LOG4J_VERSION}")"
dir="$(dirname "${libs}")"
if [[ ! -f "${dir}/log4j2.xml" ]]; then
cat >"${dir}/log4j2.xml.tmp.$$" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<!-- Broker logging for gatehouse tests and make run: stderr, level from
     -Dgatehouse.kafka.loglevel (default WARN). -->
<Configuration status="WARN">
  <Appenders>
    <Console name="stderr" target="SYSTEM_ERR">
      <PatternLayout pattern="[%d{HH:mm:ss.SSS}] %p %m (%c{1})%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="${sys:gatehouse.kafka.loglevel:-WARN}">
      <AppenderRef ref="stderr"/>
    </Root>
    <!-- "Kafka Server started" and listener lines are useful in failure tails. -->
    <Logger name="kafka.server.KafkaRaftServer" level="INFO"/>
    <Logger name="kafka.server.BrokerServer" level="INFO"/>
  </Loggers>
</Configuration>
EOF
mv "${dir}/log4j2.xml.tmp.$$" "${dir}/log4j2.xml"
fi
echo "${libs}"
