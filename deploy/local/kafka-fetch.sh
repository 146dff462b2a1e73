#!/usr/bin/env bash
# kafka-fetch.sh: fetch Apache Kafka 4.x server jars (KRaft broker + storage
# tool) and their runtime dependency closure from Maven Central with mvn, into
#
#   ${GATEHOUSE_CACHE:-$HOME/.cache/gatehouse}/kafka-<version>/libs
#
# and print that libs directory on stdout (and nothing else). Everything mvn
# says goes to stderr. Idempotent: once libs/.complete exists the script only
# prints the path. Safe to run concurrently (flock on the cache dir).
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
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

cache_root="${GATEHOUSE_CACHE:-${HOME}/.cache/gatehouse}"
dir="${cache_root}/kafka-${KAFKA_VERSION}"
libs="${dir}/libs"

if [[ -f "${libs}/.complete" ]]; then
	echo "${libs}"
	exit 0
fi

command -v mvn >/dev/null 2>&1 || { echo "kafka-fetch: mvn not found on PATH" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "kafka-fetch: java not found on PATH" >&2; exit 1; }

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
cat >"${build}/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.gatehouse.local</groupId>
  <artifactId>kafka-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <!-- kafka.Kafka (broker main) and kafka.tools.StorageTool live here;
         its runtime scope pulls kafka-server, kafka-storage, kafka-raft,
         kafka-metadata, coordinators, argparse4j, jackson, scala... -->
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_${SCALA_VERSION}</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <!-- Logging: slf4j 2 API routed to log4j2 core. -->
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-api</artifactId>
      <version>${SLF4J_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j2-impl</artifactId>
      <version>${LOG4J_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>${LOG4J_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF

staging="${dir}/libs.tmp.$$"
rm -rf "${staging}"
echo "kafka-fetch: resolving org.apache.kafka:kafka_${SCALA_VERSION}:${KAFKA_VERSION} from Maven Central" >&2
# shellcheck disable=SC2086 # GATEHOUSE_MVN_ARGS is a word list on purpose
if ! mvn -B -q -f "${build}/pom.xml" ${GATEHOUSE_MVN_ARGS:-} \
	"${DEP_PLUGIN}:copy-dependencies" \
	-DincludeScope=runtime \
	-DoutputDirectory="${staging}" 1>&2; then
	rm -rf "${staging}"
	echo "kafka-fetch: mvn failed" >&2
	exit 1
fi

# Sanity check: the broker main class and the storage tool must be present.
core_jar="$(ls "${staging}"/kafka_${SCALA_VERSION}-"${KAFKA_VERSION}".jar 2>/dev/null || true)"
if [[ -z "${core_jar}" ]]; then
	rm -rf "${staging}"
	echo "kafka-fetch: kafka_${SCALA_VERSION}-${KAFKA_VERSION}.jar missing after mvn" >&2
	exit 1
fi

cat >"${dir}/log4j2.xml" <<'EOF'
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

touch "${staging}/.complete"
rm -rf "${libs}"
mv "${staging}" "${libs}"
rm -rf "${build}"
echo "${libs}"
