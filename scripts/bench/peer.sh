#!/usr/bin/env bash
# Starts and stops one private instance of a bench peer on loopback.
#
#   peer.sh start SYSTEM DIR PORT   # returns once PORT accepts connections
#   peer.sh stop  SYSTEM DIR
#   peer.sh start-node SYSTEM DIR PORT N   # a three-node Kafka: node N again
#
# SYSTEM is kafka (Kafka's defaults), kafka-flush (Kafka fsyncing as
# Tributary's interval policy does), kafka-rf3 and kafka-rf3-flush (the same
# as three nodes), rabbitmq, activemq or nats. Everything the instance writes
# (config, data, logs) stays in DIR; DIR/pid holds the pid of each broker
# process itself (the JVM, beam.smp, nats-server), one a line, whose VmHWM
# the bench reads, and DIR/data is the directory whose size is its storage.
# A one-node instance uses the ports PORT, PORT+1 and PORT+2; a three-node
# Kafka uses PORT..PORT+5 (node N takes clients on PORT+2(N-1) and its
# controller on the port after), all on 127.0.0.1.
#
# Starting a Kafka instance again on a DIR it ran in keeps its data (its
# node directories are not formatted again). start-node starts one node of a
# running three-node Kafka again on its data (after the bench killed it) and
# puts its new pid on line N of DIR/pid. KAFKA_HEAP is each Kafka JVM's heap
# (default 1G, as Kafka's own kafka-server-start.sh).
#
# Durability is set to match Tributary's interval flush where the peer
# allows it (fsync every 10000 messages or 200 ms), except for kafka, which
# runs at Kafka's own defaults beside kafka-flush; the bench prints what
# each got.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

[ $# -ge 3 ] || { echo "usage: $0 start|stop|start-node SYSTEM DIR [PORT [N]]" >&2; exit 2; }
action=$1 system=$2 dir=$3 port=${4:-0} node=${5:-0}
KAFKA_HEAP="${KAFKA_HEAP:-1G}"
mkdir -p "$dir/data"
dir="$(cd "$dir" && pwd)"
log="$dir/$system.log"

# kafka_node N NODES: writes DIR/nN/server.properties for node N of a
# cluster of NODES combined broker+controller nodes (a KRaft quorum of NODES
# voters) and formats its data directory DIR/data/nN with cluster id $uuid.
kafka_node() {
  local n=$1 nodes=$2 voters="" i
  for ((i = 1; i <= nodes; i++)); do
    voters+="${voters:+,}$i@127.0.0.1:$((port + 2 * (i - 1) + 1))"
  done
  local p=$((port + 2 * (n - 1))) conf="$dir/n$n"
  mkdir -p "$conf"
  cat >"$conf/server.properties" <<EOF
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$((p + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$p
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data/n$n
num.partitions=1
group.initial.rebalance.delay.ms=0
EOF
  if [ "$nodes" -eq 1 ]; then
    # One node cannot hold Kafka's default three replicas of its own topics.
    cat >>"$conf/server.properties" <<EOF
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
EOF
  fi
  case "$system" in *-flush)
    # Tributary's flush bounds (flush.messages=10000, flush.ms=200); plain
    # kafka keeps Kafka's own default: never fsync, rely on replication.
    cat >>"$conf/server.properties" <<EOF
log.flush.interval.messages=10000
log.flush.interval.ms=200
log.flush.scheduler.interval.ms=200
EOF
  esac
  # A node whose data directory is formatted already is being restarted on
  # its data (the many-partitions bench): it keeps it.
  [ -f "$dir/data/n$n/meta.properties" ] && return 0
  java -cp "$cp" -Dlog4j2.configurationFile="$dir/log4j2.yaml" kafka.tools.StorageTool \
    format -t "$uuid" -c "$conf/server.properties" >>"$log" 2>&1
}

# kafka_java N: starts the JVM of node N, configured by kafka_node, in the
# background (its pid is $!), with the JVM settings of Kafka's own
# kafka-server-start.sh but the heap KAFKA_HEAP, the same for every node.
kafka_java() {
  local n=$1
  nohup java -Xmx"$KAFKA_HEAP" -Xms"$KAFKA_HEAP" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.yaml" -cp "$cp" kafka.Kafka "$dir/n$n/server.properties" \
    >>"$log" 2>&1 </dev/null &
}

# restart_kafka_node N: starts node N of a cluster that start_kafka set up
# in DIR again on its data, replaces its line of DIR/pid with the new pid,
# and returns once the node takes connections.
restart_kafka_node() {
  local n=$1 cp pid
  cp="$(kafka_home)/libs/*"
  [ -f "$dir/data/n$n/meta.properties" ] && [ -f "$dir/n$n/server.properties" ] ||
    { echo "node $n was never started in $dir: start the cluster first" >&2; return 1; }
  kafka_java "$n"
  pid=$!
  sed -i "${n}s/.*/$pid/" "$dir/pid"
  wait_port "$((port + 2 * (n - 1)))" "$pid" 120 "$log"
}

# start_kafka NODES: starts NODES Kafka JVMs, each a broker and a voter of
# the KRaft quorum, and returns once every one takes connections.
start_kafka() {
  local nodes=$1 home cp uuid n pids=()
  home="$(kafka_home)"
  [ -d "$home/libs" ] || { echo "Kafka $KAFKA_VERSION is not installed in $home: run scripts/bench/install.sh" >&2; return 1; }
  cp="$home/libs/*"
  cat >"$dir/log4j2.yaml" <<'EOF'
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        Pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
EOF
  : >"$log"
  uuid="$(java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)"
  : >"$dir/pid"
  for ((n = 1; n <= nodes; n++)); do
    kafka_node "$n" "$nodes"
    kafka_java "$n"
    # Written before any wait, so that stop finds every node a failed start
    # left behind.
    echo $! >>"$dir/pid"
    pids+=($!)
  done
  # A quorum node takes connections only once a majority of voters runs, so
  # every node starts before the first wait.
  for ((n = 1; n <= nodes; n++)); do
    wait_port "$((port + 2 * (n - 1)))" "${pids[n - 1]}" 120 "$log" || return 1
  done
}

rabbit_env() {
  export RABBITMQ_NODENAME="tribbench$port@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT="$port" RABBITMQ_DIST_PORT="$((port + 1))" ERL_EPMD_PORT="$((port + 2))" \
    ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_MNESIA_BASE="$dir/data" RABBITMQ_LOG_BASE="$dir/log" \
    RABBITMQ_CONFIG_FILE="$dir/rabbitmq" RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
    RABBITMQ_PID_FILE="$dir/pid" HOME="$dir"
}

start_rabbitmq() {
  [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || { echo "rabbitmq-server is not installed: run scripts/bench/install.sh" >&2; return 1; }
  cat >"$dir/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$port
loopback_users = none
# the queue would otherwise block publishers once 50 MB of disk is left
disk_free_limit.absolute = 50MB
EOF
  echo '[].' >"$dir/enabled_plugins"
  rabbit_env
  # The packaged wrapper switches to the rabbitmq user; the real script in
  # /usr/lib/rabbitmq/bin runs the node as whoever calls it, with our env.
  nohup /usr/lib/rabbitmq/bin/rabbitmq-server >"$log" 2>&1 </dev/null &
  echo $! >"$dir/launcher.pid"
  wait_port "$port" "$!" 90 "$log"
  # rabbitmq-server writes the pid of beam.smp into RABBITMQ_PID_FILE.
  local i
  for ((i = 0; i < 40; i++)); do [ -s "$dir/pid" ] && return 0; sleep 0.25; done
  echo "RabbitMQ wrote no pid file" >&2
  return 1
}

stop_rabbitmq() {
  rabbit_env
  timeout 30 /usr/lib/rabbitmq/bin/rabbitmqctl stop >/dev/null 2>&1 || true
  [ -s "$dir/pid" ] && stop_pid "$(cat "$dir/pid")" 10
  [ -s "$dir/launcher.pid" ] && stop_pid "$(cat "$dir/launcher.pid")" 5
  # our private epmd, on its own port
  epmd -port "$((port + 2))" -kill >/dev/null 2>&1 || true
}

start_activemq() {
  [ -f /usr/share/activemq/bin/activemq.jar ] || { echo "activemq is not installed: run scripts/bench/install.sh" >&2; return 1; }
  mkdir -p "$dir/conf"
  cp /etc/activemq/instances-available/main/log4j2.properties "$dir/conf/" 2>/dev/null || true
  # STOMP is the one transport of the Debian package that a Go client can
  # speak (it ships no AMQP 1.0). KahaDB fsyncs the journal every 200 ms
  # instead of on every persistent send: Tributary's flush interval.
  cat >"$dir/conf/activemq.xml" <<EOF
<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" useJmx="false" brokerName="bench"
          dataDirectory="$dir/data" schedulerSupport="false" advisorySupport="false">
    <persistenceAdapter>
      <kahaDB directory="$dir/data/kahadb" journalDiskSyncStrategy="periodic" journalDiskSyncInterval="200"/>
    </persistenceAdapter>
    <!-- the stock activemq.xml's limits; without them the broker assumes
         1 GB of memory for messages and runs out of its 512 MB heap -->
    <systemUsage>
      <systemUsage>
        <memoryUsage><memoryUsage percentOfJvmHeap="70"/></memoryUsage>
        <storeUsage><storeUsage limit="100 gb"/></storeUsage>
        <tempUsage><tempUsage limit="50 gb"/></tempUsage>
      </systemUsage>
    </systemUsage>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:$port"/>
    </transportConnectors>
  </broker>
</beans>
EOF
  # What /usr/bin/activemq runs, minus its switch to the activemq user;
  # the heap is 1 GB, as Kafka's (the Debian default of 512 MB runs out with
  # a few hundred thousand unconsumed persistent messages).
  nohup java -Xms1G -Xmx1G -Dorg.apache.activemq.UseDedicatedTaskRunner=true \
    --add-reads=java.xml=java.logging \
    --add-opens java.base/java.security=ALL-UNNAMED --add-opens java.base/java.net=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED \
    --add-opens java.naming/javax.naming.spi=ALL-UNNAMED --add-opens java.rmi/sun.rmi.transport.tcp=ALL-UNNAMED \
    --add-opens java.base/java.util.concurrent=ALL-UNNAMED --add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED \
    -Dactivemq.classpath="$dir/conf:/usr/share/activemq/lib/" -Dactivemq.home=/usr/share/activemq \
    -Dactivemq.base="$dir" -Dactivemq.conf="$dir/conf" -Dactivemq.data="$dir/data" \
    -jar /usr/share/activemq/bin/activemq.jar start "xbean:file:$dir/conf/activemq.xml" \
    >"$log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  wait_port "$port" "$!" 90 "$log"
}

start_nats() {
  command -v nats-server >/dev/null 2>&1 || { echo "nats-server is not installed: run scripts/bench/install.sh" >&2; return 1; }
  # nats-server 2.9 has no sync_interval setting: JetStream writes to the
  # page cache and fsyncs on its own schedule.
  cat >"$dir/nats.conf" <<EOF
listen: 127.0.0.1:$port
jetstream {
  store_dir: "$dir/data"
}
EOF
  nohup nats-server -c "$dir/nats.conf" >"$log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  wait_port "$port" "$!" 30 "$log"
}

case "$action:$system" in
  start:kafka | start:kafka-flush | start:kafka-rf3 | start:kafka-rf3-flush)
    [ "$port" -gt 0 ] || { echo "start needs a PORT" >&2; exit 2; }
    echo "$port" >"$dir/port"
    case "$system" in kafka-rf3*) start_kafka 3 ;; *) start_kafka 1 ;; esac
    ;;
  start-node:kafka-rf3 | start-node:kafka-rf3-flush)
    [ "$port" -gt 0 ] && [ "$node" -ge 1 ] && [ "$node" -le 3 ] ||
      { echo "start-node needs the cluster's PORT and a node number N, 1 to 3" >&2; exit 2; }
    restart_kafka_node "$node"
    ;;
  start:rabbitmq | start:activemq | start:nats)
    [ "$port" -gt 0 ] || { echo "start needs a PORT" >&2; exit 2; }
    echo "$port" >"$dir/port"
    "start_$system"
    ;;
  stop:rabbitmq)
    port=$(cat "$dir/port" 2>/dev/null || echo 0)
    stop_rabbitmq
    ;;
  stop:kafka | stop:kafka-flush | stop:kafka-rf3 | stop:kafka-rf3-flush | stop:activemq | stop:nats)
    # Every node at once: a KRaft node stopped after its quorum lost its
    # majority would wait for a controller that is gone.
    if [ -s "$dir/pid" ]; then stop_pids 30 $(cat "$dir/pid"); fi
    ;;
  *)
    echo "unknown: $action $system (systems: kafka kafka-flush kafka-rf3 kafka-rf3-flush rabbitmq activemq nats)" >&2
    exit 2
    ;;
esac
