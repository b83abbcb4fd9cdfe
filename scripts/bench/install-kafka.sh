#!/usr/bin/env bash
# Installs the Apache Kafka broker (KRaft) from Maven Central, if missing:
# org.apache.kafka:kafka_2.13 and its runtime dependencies, copied by
# `mvn dependency:copy-dependencies` into
# $TRIBUTARY_BENCH_CACHE/kafka-$KAFKA_VERSION/libs. Used by the bench (its
# peer) and by the tests that take Kafka as a source (mirror/kafka_test.go),
# which start it with scripts/bench/peer.sh. Does nothing when present.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

kafka_dir="$(kafka_home)"
[ -f "$kafka_dir/libs/kafka_2.13-$KAFKA_VERSION.jar" ] && exit 0
command -v mvn >/dev/null 2>&1 || { echo "install-kafka: mvn is missing (apt-get install maven)" >&2; exit 1; }
echo "installing: Apache Kafka $KAFKA_VERSION from Maven Central into $kafka_dir"
mkdir -p "$kafka_dir"
if mvn -q -B -f "$here/kafka-pom.xml" -Dkafka.version="$KAFKA_VERSION" \
    dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$kafka_dir/libs.tmp" >"$kafka_dir/mvn.log" 2>&1; then
  rm -rf "$kafka_dir/libs" && mv "$kafka_dir/libs.tmp" "$kafka_dir/libs"
else
  echo "install-kafka: mvn failed, see $kafka_dir/mvn.log" >&2
  exit 1
fi
