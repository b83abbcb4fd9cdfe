# Shared settings of the bench scripts; sourced, not run.

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
TRIBUTARY_BENCH_CACHE="${TRIBUTARY_BENCH_CACHE:-$HOME/.cache/tributary-bench}"

kafka_home() { echo "$TRIBUTARY_BENCH_CACHE/kafka-$KAFKA_VERSION"; }

# wait_port PORT PID SECONDS LOG: waits until 127.0.0.1:PORT accepts a
# connection; fails early, with the log's tail, if PID exits first.
wait_port() {
  local port=$1 pid=$2 secs=$3 log=$4 i
  for ((i = 0; i < secs * 4; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "exited before listening on port $port; last lines of $log:" >&2
      tail -n 15 "$log" >&2
      return 1
    fi
    sleep 0.25
  done
  echo "not listening on port $port after ${secs}s; last lines of $log:" >&2
  tail -n 15 "$log" >&2
  return 1
}

# stop_pid PID SECONDS: SIGTERM, then SIGKILL if still alive after SECONDS.
stop_pid() {
  local pid=$1 secs=$2 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < secs * 4; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.25
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# stop_pids SECONDS PID...: SIGTERM to all at once, then SIGKILL to those
# still alive after SECONDS.
stop_pids() {
  local secs=$1 i pid alive
  shift
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < secs * 4; i++)); do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && return 0
    sleep 0.25
  done
  kill -KILL "$@" 2>/dev/null || true
}
