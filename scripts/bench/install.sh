#!/usr/bin/env bash
# Installs the peers that `tributary bench` compares against, if missing:
#   - Apache Kafka (KRaft) from Maven Central: org.apache.kafka:kafka_2.13 and
#     its runtime dependencies, copied by `mvn dependency:copy-dependencies`
#     into $TRIBUTARY_BENCH_CACHE/kafka-$KAFKA_VERSION/libs;
#   - RabbitMQ, ActiveMQ and nats-server from Debian packages.
# Each peer is installed on its own: one that fails is reported here and
# shows as "not started" in the bench table; the others still run.
# Safe to run repeatedly; does nothing when everything is present.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

status=0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

need=()
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || need+=(rabbitmq-server)
[ -f /usr/share/activemq/bin/activemq.jar ] || need+=(activemq)
command -v nats-server >/dev/null 2>&1 || need+=(nats-server)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
  echo "bench install: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || true
  for p in "${need[@]}"; do
    # One at a time, so that one missing package does not block the rest.
    # The packages' own services are not started (no init system here, and
    # the bench starts private instances on loopback ports instead).
    if ! $sudo apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1; then
      echo "bench install: apt-get install $p failed" >&2
      status=1
    fi
  done
fi

"$here/install-kafka.sh" || status=1
exit $status
