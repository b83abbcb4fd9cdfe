package broker_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// DeleteRecords logs a partition's new start once, when it moves: Kafka
// Streams purges its repartition topics with the same request again and
// again (every repartition.purge.interval.ms, whether or not anything was
// processed), and the log once filled with copies.
func TestDeleteRecordsLogsOnlyAMove(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}))
	adm, _ := newAdmin(t, b.Addr)
	createTopic(t, b.Addr, "purged-often", 1, nil)
	produceSized(t, b.Addr, "purged-often", 0, 10, nil)
	for range 3 {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "purged-often", Partition: 0, At: 5})
		rs, err := adm.DeleteRecords(context.Background(), os)
		if r, _ := rs.Lookup("purged-often", 0); err != nil || r.Err != nil || r.LowWatermark != 5 {
			t.Fatalf("DeleteRecords: %v %+v", err, r)
		}
	}
	if n := strings.Count(logs.String(), `msg="records deleted"`); n != 1 {
		t.Fatalf("%d \"records deleted\" lines for one move of the start, want 1:\n%s", n, logs.String())
	}
}
