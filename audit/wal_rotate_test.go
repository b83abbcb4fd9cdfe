package audit_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/schema"
)

// copyDir copies the files of dir into a new directory, as a crash would
// leave them (every write is a whole frame).
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A WAL replaced by checkpoints many times (every publish, at a 2 KiB
// threshold), then left as a killed producer leaves it (with counts
// built and published, counts pending and acknowledgements not yet
// written), is read back by the next producer, which publishes the rest:
// the producer tier counts every event once.
func TestWALCheckpointsAndResumeCountEveryEventOnce(t *testing.T) {
	defer audit.SetWALRotateBytes(2 << 10)()
	env := audittest.Start(t)
	createTopic(t, env.Broker.Addr, "pageview", 2)
	ws := pastWindows(3)
	text, err := os.ReadFile(pageviewSchema)
	if err != nil {
		t.Fatal(err)
	}
	ser, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: string(text), Service: "web", Server: "fe-1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	open := func(dir string) (*audit.Publisher, *audit.Producer) {
		w, err := audit.OpenWAL(dir, audit.WALOptions{Host: "fe-1", Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry, Host: "fe-1", WAL: w, FlushInterval: time.Hour, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		prod, err := audit.NewProducer(audittest.Client(t, env.Broker.Addr), ser, pub)
		if err != nil {
			t.Fatal(err)
		}
		return pub, prod
	}
	pub, prod := open(dir)
	s := &server{name: "fe-1", pub: pub, prod: prod}
	for round := range 4 {
		s.sendOver(t, "pageview", ws[round%3], audit.DefaultWindow, 100)
		if err := pub.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	s.sendOver(t, "pageview", ws[1], audit.DefaultWindow, 100) // 64 acknowledgements written, 36 not
	if m, _ := filepath.Glob(filepath.Join(dir, "wal-*.log")); len(m) != 1 || filepath.Base(m[0]) == "wal-1.log" {
		t.Fatalf("WAL files %v: want one, replaced by checkpoints", m)
	}
	// Killed here: the next producer starts from a copy of the directory.
	pub2, prod2 := open(copyDir(t, dir))
	found, doubtful, err := prod2.Recover(t.Context())
	if err != nil || found != 36 || doubtful != 0 {
		t.Fatalf("recover: %d found, %d doubtful, %v; want the 36 acknowledged events whose acknowledgement was not written", found, doubtful, err)
	}
	if err := pub2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep := reconcile(t, env.Broker.Addr, env.Registry, ws)
	for i, want := range []int64{200, 200, 100} {
		if r := row(t, rep, "pageview", ws[i], audit.TierProducer); r.Received != want {
			t.Errorf("window %d: the producer tier counted %d, want %d", i, r.Received, want)
		}
	}
}
