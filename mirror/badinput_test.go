package mirror_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
	"github.com/tributary-io/tributary/producer"
)

// A source that cannot be reached fails the start with an error naming it,
// instead of hanging.
func TestMirrorUnreachableSource(t *testing.T) {
	needServices(t)
	target := testenv.StartBroker(t)
	tests := []struct {
		name, zk, want string
	}{
		// Nothing listens on port 1.
		{"no ZooKeeper", "127.0.0.1:1/tributary", "source dc9: cannot reach ZooKeeper 127.0.0.1:1/tributary"},
		// ZooKeeper answers, but no broker ever registered under this chroot.
		{"no brokers", testenv.StartZooKeeper(t), "no broker is registered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := mirror.New(mirror.Config{
				Sources: []mirror.Source{{Name: "dc9", ZooKeeper: tc.zk}}, Target: []string{target.Addr},
				ConnectTimeout: 2 * time.Second, Logger: testLogger(t),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			err = m.Run(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v; want an error containing %q", err, tc.want)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("took %v to give up; ConnectTimeout is 2s", time.Since(start))
			}
		})
	}
}

// The command line refuses bad flags with the flag and the reason, before
// connecting to anything.
func TestMirrorCommandBadFlags(t *testing.T) {
	needServices(t)
	src := []string{"mirror", "--source", "dc1=127.0.0.1:1/x"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--topics", "page(views"}, `--topics "page(views" is not a valid regular expression`},
		{[]string{"--exclude", "*"}, `--exclude "*" is not a valid regular expression`},
		{[]string{"--audit"}, "--audit needs --target-registry"},
		{[]string{"--source-registry", "dc2=http://r:8081", "--target-registry", "http://t:8081"}, `no --source is named "dc2"`},
		{[]string{"--start", "middle"}, `--start "middle": use smallest or largest`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			p := testenv.StartProcess(t, append(src, tc.args...)...)
			select {
			case <-p.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("tributary mirror did not exit")
			}
			if out := p.Output.String(); p.Cmd.ProcessState.ExitCode() == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit code %d, output:\n%s\nwant %q", p.Cmd.ProcessState.ExitCode(), out, tc.want)
			}
		})
	}
}

// A target topic with fewer partitions than the source is the documented
// case of differing counts: keyed records go where the Java client would
// put them, keyless ones to their source partition modulo the target's
// count; with StrictPartitions the mirror refuses instead.
func TestMirrorTargetWithFewerPartitions(t *testing.T) {
	const perPart = 500
	d := startDC(t, "dc1", 1)
	createTopic(t, d.addrs(), "clicks", 12)
	produce(t, d.addrs(), "dc1", "clicks", 12, 0, perPart)

	t.Run("by key hash", func(t *testing.T) {
		target := testenv.StartBroker(t)
		createTopic(t, []string{target.Addr}, "clicks", 4)
		_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{d.source()}, Target: []string{target.Addr}, Group: "hash"})
		waitForCount(t, []string{target.Addr}, "clicks", 12*perPart, time.Minute)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		got := readTopic(t, []string{target.Addr}, "clicks")
		streams := checkCopy(t, got)
		for tp, recs := range got {
			for _, r := range recs {
				if want := producer.PartitionForKey(r.Key, 4); tp != want {
					t.Fatalf("key %s in target partition %d, the Java client's is %d", r.Key, tp, want)
				}
			}
		}
		// Order is kept per key, and each source partition arrives once.
		for s, seq := range streams {
			if len(seq) != perPart {
				t.Fatalf("source partition %d: %d records in the target, want %d", s.partition, len(seq), perPart)
			}
		}
	})

	t.Run("strict", func(t *testing.T) {
		target := testenv.StartBroker(t)
		createTopic(t, []string{target.Addr}, "clicks", 4)
		m, err := mirror.New(mirror.Config{Sources: []mirror.Source{d.source()}, Target: []string{target.Addr}, Group: "strict",
			StrictPartitions: true, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = m.Run(ctx)
		if err == nil || !strings.Contains(err.Error(), "topic clicks has 12 partitions in source dc1 but 4 in the target") {
			t.Fatalf("Run: %v; want an error naming the topic and both counts", err)
		}
	})
}
