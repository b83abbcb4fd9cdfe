#!/usr/bin/env bash
# Runs a 3-broker Tributary cluster on this machine: one ZooKeeper on
# 127.0.0.1:2181 (Debian's zookeeper package) and brokers 1, 2, 3 on
# 127.0.0.1:9093-9095, data under $DATA_DIR (default ./data/cluster).
# Ctrl-C stops everything; brokers shut down cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR=${DATA_DIR:-./data/cluster}
ZK_PORT=${ZK_PORT:-2181}
BIN=./bin/tributary
mkdir -p "$DATA_DIR/zookeeper"

cat > "$DATA_DIR/zookeeper/zoo.cfg" <<CFG
tickTime=2000
dataDir=$(cd "$DATA_DIR/zookeeper" && pwd)
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
CFG

pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop EXIT INT TERM

java -cp /usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-simple.jar \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  org.apache.zookeeper.server.ZooKeeperServerMain "$DATA_DIR/zookeeper/zoo.cfg" &
pids+=($!)
for _ in $(seq 1 50); do
  if (exec 3<>/dev/tcp/127.0.0.1/"$ZK_PORT") 2>/dev/null; then break; fi
  sleep 0.2
done

for id in 1 2 3; do
  "$BIN" broker --id "$id" --zookeeper "127.0.0.1:$ZK_PORT/tributary" \
    --listen "127.0.0.1:$((9092 + id))" --data-dir "$DATA_DIR/broker-$id" &
  pids+=($!)
done
echo "cluster: brokers on 127.0.0.1:9093,127.0.0.1:9094,127.0.0.1:9095; ZooKeeper 127.0.0.1:$ZK_PORT/tributary"
wait -n
