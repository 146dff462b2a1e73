#!/usr/bin/env bash
# connect-fetch.sh: fetch Kafka Connect (the same Kafka version as
# kafka-fetch.sh) with Debezium's PostgreSQL connector and its Outbox Event
# Router from Maven Central (maven-libs.sh) into
#
#   ${GATEHOUSE_CACHE:-$HOME/.cache/gatehouse}/connect-<kafka>-debezium-<version>/libs
#
# and print that libs directory on stdout. Used by the Debezium equivalence
# test (cmd/gatehouse) and by anyone who wants to run Debezium beside or
# instead of `gatehouse relay`:
#   java -cp '<libs>/*' org.apache.kafka.connect.cli.ConnectStandalone worker.properties connector.properties
set -euo pipefail
KAFKA_VERSION="${KAFKA_VERSION:-4.1.1}"
DEBEZIUM_VERSION="${DEBEZIUM_VERSION:-3.4.3.Final}" # built against Kafka 4.1.1
LOG4J_VERSION="2.24.3"
SLF4J_VERSION="2.0.17"
exec "$(dirname "$0")/maven-libs.sh" connect-fetch "connect-${KAFKA_VERSION}-debezium-${DEBEZIUM_VERSION}" \
	"debezium-connector-postgres-*.jar" \
	"org.apache.kafka:connect-runtime:${KAFKA_VERSION}" \
	"org.apache.kafka:connect-json:${KAFKA_VERSION}" \
	"org.apache.kafka:connect-transforms:${KAFKA_VERSION}" \
	"io.debezium:debezium-connector-postgres:${DEBEZIUM_VERSION}" \
	"org.slf4j:slf4j-api:${SLF4J_VERSION}" \
	"org.apache.logging.log4j:log4j-slf4j2-impl:${LOG4J_VERSION}" \
	"org.apache.logging.log4j:log4j-core:${LOG4J_VERSION}"
