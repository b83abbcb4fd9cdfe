#!/usr/bin/env bash
# Shows that Fetch sends record bytes with sendfile: runs a standalone broker
# under strace, writes 20,000 200-byte records with kcat, reads them back,
# and compares the bytes moved by sendfile with those written from user
# space (write/writev: response headers and every other response).
# Needs strace and kcat. Usage: scripts/strace-fetch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/tributary ./cmd/tributary
dir=$(mktemp -d)
trap 'pkill -TERM -f "data-dir $dir/data" || true; rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
strace -f -e trace=sendfile,writev,write -o "$dir/trace" \
  bin/tributary standalone --data-dir "$dir/data" --listen "127.0.0.1:$port" --registry-listen= >"$dir/out" 2>&1 &
sleep 2
seq 1 20000 | awk '{printf "%0200d\n", $1}' | kcat -b "127.0.0.1:$port" -t strace -P
read=$(kcat -b "127.0.0.1:$port" -t strace -C -o beginning -e -q | wc -l)
pkill -TERM -f "data-dir $dir/data"; sleep 2
echo "records read back:      $read"
echo "segment bytes on disk:  $(cat "$dir"/data/strace-0/*.log | wc -c)"
grep sendfile "$dir/trace" | awk -F'= ' '{s+=$NF; n++} END {printf "sendfile:               %d bytes in %d calls\n", s, n}'
grep -E 'write(v)?\(' "$dir/trace" | grep -v '= -1' | awk -F'= ' '{s+=$NF; n++} END {printf "write/writev:           %d bytes in %d calls\n", s, n}'
