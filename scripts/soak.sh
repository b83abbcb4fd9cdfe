#!/bin/sh
# Runs the Jepsen-style tests (tests/system TestJepsenReplicatedCluster,
# then TestJepsenTransactions) for SOAK_DURATION of faults each and prints
# their figures. The full log goes to
# bin/soak.log; the exit status is the test's.
set -eu
GO=${GO:-go}
SOAK_DURATION=${SOAK_DURATION:-10m}
cd "$(dirname "$0")/.."
mkdir -p bin
echo "soak: $SOAK_DURATION of faults on three brokers (log: bin/soak.log)"
status=0
SOAK_DURATION=$SOAK_DURATION $GO test -race -count=1 -v -timeout 0 \
	-run '^(TestJepsenReplicatedCluster|TestJepsenTransactions)$' ./tests/system/ >bin/soak.log 2>&1 || status=$?
grep -E 'round [0-9]+:|figures:|^soak:|disagree|acknowledged record|went backwards|was lost|transactions committed|aborted transaction|read twice|times, want once|--- (PASS|FAIL)' bin/soak.log || true
exit $status
