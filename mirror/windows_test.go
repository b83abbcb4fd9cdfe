package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// The windows resuming from the target leaves open on its own, each made
// to happen on demand: the mirror's transactional producers (txn.go) close
// them. Each test fails on the mirror without transactions (run with
// --transactions=false it is that mirror), which copies what was in
// flight twice.

// startHeldBroker starts a standalone broker in this process that clients
// reach through a holdLink only: it advertises the link's address, so the
// mirror's every connection to it passes there.
func startHeldBroker(t *testing.T) (*holdLink, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	link := startHoldLink(t, ln.Addr().String())
	b, err := broker.New(broker.Config{DataDir: t.TempDir(), AutoCreateTopics: true, Logger: testenv.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.ServeListeners([]broker.Listener{{Protocol: broker.Plaintext, Addr: ln.Addr().String(), Advertised: link.Addr()}}, []net.Listener{ln})
	}()
	select {
	case <-b.Serving():
	case <-done:
		t.Fatal("the broker stopped at once")
	}
	t.Cleanup(func() { b.Close(); <-done })
	return link, link.Addr()
}

// holdCopies holds the mirror's connections to the target (its client id
// is tributary-mirror) from their next produce request on, and waits until
// the link holds one: copies the mirror believes sent, which the target
// has not seen.
func holdCopies(t *testing.T, link *holdLink) {
	t.Helper()
	link.HoldProduce("tributary-mirror")
	testenv.Eventually(t, time.Minute, "the link holds the mirror's copies", func() bool { return link.Held() > 0 })
}

// Window (a): a mirror dies with produce requests on their way (here held
// in the link), the next owner resumes from the target, and then the dead
// owner's requests land. The next owner's producer has fenced them: the
// target refuses them.
func TestMirrorDeadOwnersLateRequestsAreFenced(t *testing.T) {
	const topic = "clicks"
	needServices(t)
	testenv.Binary(t)
	src := testenv.StartBroker(t)
	link, target := startHeldBroker(t)
	createTopic(t, []string{src.Addr}, topic, 1)
	stop := liveProducer(t, src.Addr, "dc1", topic, 1, 0)
	a, _ := mirrorProcess(t, "dc1", src.Addr, target, "--instance-id", "m1")
	waitForCount(t, []string{target}, topic, 300, time.Minute)
	holdCopies(t, link)
	a.Kill()
	copied := int64(len(readTopic(t, []string{target}, topic)[0]))
	// The same instance id: the group gives the partition over at once.
	b, _ := mirrorProcess(t, "dc1", src.Addr, target, "--instance-id", "m1")
	waitForCount(t, []string{target}, topic, copied+1000, time.Minute) // past what the dead one had sent
	held := link.Held()
	link.Release() // the dead mirror's requests land now
	counts := stop()
	waitForCount(t, []string{target}, topic, int64(counts[0]), time.Minute)
	if err := b.Stop(30 * time.Second); err != nil {
		t.Fatalf("mirror: %v\n%s", err, b.Output.String())
	}
	checkExactCopy(t, readTopic(t, []string{src.Addr}, topic), readTopic(t, []string{target}, topic), "dc1", 0, 0)
	t.Logf("%d bytes of a dead mirror's requests landed after its successor resumed: %d records, each once", held, counts[0])
}

// Window (b): a mirror paused past its session (SIGSTOP) while its
// transaction is open and its copies are waiting to be sent; another
// takes the partition over and copies on; the first wakes up (SIGCONT)
// and sends what it had. The target holds each record once.
func TestMirrorPausedOwnerPastItsSessionIsFenced(t *testing.T) {
	const topic = "clicks"
	needServices(t)
	testenv.Binary(t)
	src := testenv.StartBroker(t)
	link, target := startHeldBroker(t)
	createTopic(t, []string{src.Addr}, topic, 1)
	stop := liveProducer(t, src.Addr, "dc1", topic, 1, 0)
	a, statusA := mirrorProcess(t, "dc1", src.Addr, target, "--instance-id", "a")
	waitForCount(t, []string{target}, topic, 300, time.Minute)
	holdCopies(t, link) // its copies pile up: its transaction cannot end
	if err := a.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	link.Release()
	b, statusB := mirrorProcess(t, "dc1", src.Addr, target, "--instance-id", "b")
	testenv.Eventually(t, time.Minute, "the second mirror takes the partition over", func() bool {
		st, err := fetchStatus(t, statusB)
		return err == nil && len(st.Sources) == 1 && len(st.Sources[0].Partitions) == 1
	})
	copied := int64(len(readTopic(t, []string{target}, topic)[0]))
	waitForCount(t, []string{target}, topic, copied+500, time.Minute)
	if err := a.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Awake, the first learns from its group that it lost the partition.
	testenv.Eventually(t, time.Minute, "the first mirror answers again", func() bool {
		_, err := fetchStatus(t, statusA)
		return err == nil
	})
	counts := stop()
	waitForCount(t, []string{target}, topic, int64(counts[0]), time.Minute)
	for _, p := range []*testenv.Process{a, b} {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Fatalf("mirror: %v\n%s", err, p.Output.String())
		}
	}
	checkExactCopy(t, readTopic(t, []string{src.Addr}, topic), readTopic(t, []string{target}, topic), "dc1", 0, 0)
	t.Logf("a mirror paused past its session woke up with copies to send: %d records, each once", counts[0])
}

// Window (c): a dead mirror's copies were appended in the target but are
// not yet under its high watermark (here the partition's follower does
// not fetch them: the link holds its requests) when the next owner reads
// where to resume. A mirror that reads to the high watermark resumes
// before them and copies them again; this one first has the dead owner's
// transaction aborted, and resumes from what read_committed readers see.
func TestMirrorCopiesNotUnderTheHighWatermarkAreNotCopiedTwice(t *testing.T) {
	needServices(t)
	testenv.Binary(t)
	connect := testenv.StartZooKeeper(t)
	// Broker 1 starts alone and creates the transaction coordinator's
	// topic, so that all of it is broker 1's and needs no replica: the
	// coordinator works while broker 2 fetches nothing.
	b1, link := startLinkedBroker(t, connect, 1)
	warm := newClient(t, []string{link.Addr()}, kgo.TransactionalID("warm-up"))
	warmCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := warm.ProducerID(warmCtx); err != nil {
		t.Fatalf("creating the transaction coordinator's topic: %v", err)
	}
	b2, _ := startLinkedBroker(t, connect, 2)
	target := []string{link.Addr(), b2.Addr}
	// A target topic that broker 1 leads, with broker 2 in sync: Tributary
	// places partitions itself, so topics are made until one is.
	admin := kadm.NewClient(newClient(t, target, kgo.MetadataMinAge(10*time.Millisecond)))
	topic := ""
	// Each call gets its own deadline: one shared with the warm-up above
	// ran out on a loaded machine, and every later try failed at once.
	for i := 0; topic == ""; i++ {
		name := fmt.Sprintf("clicks%d", i)
		leader := int32(-1)
		testenv.Eventuallyf(t, time.Minute, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := admin.CreateTopic(ctx, 1, 2, nil, name)
			if err = errors.Join(err, resp.Err); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				return false, "creating " + name + ": " + err.Error()
			}
			md, err := admin.Metadata(ctx, name)
			if err != nil {
				return false, "metadata of " + name + ": " + err.Error()
			}
			ps := md.Topics[name].Partitions
			if len(ps) != 1 || ps[0].Leader <= 0 || len(ps[0].ISR) != 2 {
				return false, fmt.Sprintf("%s: want a leader and two replicas in sync, have %+v", name, ps)
			}
			leader = ps[0].Leader
			return true, ""
		})
		if leader == 1 {
			topic = name
		}
	}
	src := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, topic, 1)
	produce(t, []string{src.Addr}, "dc1", topic, 1, 0, 100)

	args := []string{"--instance-id", "m1", "--topics", "^" + topic + "$"}
	a, statusA := mirrorProcess(t, "dc1", src.Addr, strings.Join(target, ","), args...)
	// Copied, and the copy acknowledged (committed) to the mirror.
	testenv.Eventually(t, time.Minute, "the mirror copied records 0..99", func() bool {
		st, err := fetchStatus(t, statusA)
		return err == nil && len(st.Sources) == 1 && len(st.Sources[0].Partitions) == 1 && st.Sources[0].Partitions[0].Safe >= 100
	})
	link.HoldClient("tributary-replica-2") // the high watermark stays where it is
	produce(t, []string{src.Addr}, "dc1", topic, 1, 100, 150)
	testenv.Eventually(t, time.Minute, "the leader appended the copies of 100..149", func() bool {
		return messagesIn(t, b1.Broker, topic) >= 150
	})
	a.Kill()
	b, _ := mirrorProcess(t, "dc1", src.Addr, strings.Join(target, ","), args...)
	testenv.Eventually(t, time.Minute, "the next mirror looks for where to resume", func() bool {
		out := b.Output.String()
		return strings.Contains(out, "resuming partition") || strings.Contains(out, "initializing the partitions' transactional producers")
	})
	link.Release()
	produce(t, []string{src.Addr}, "dc1", topic, 1, 150, 200)
	waitForCount(t, target, topic, 200, time.Minute)
	if err := b.Stop(30 * time.Second); err != nil {
		t.Fatalf("mirror: %v\n%s", err, b.Output.String())
	}
	checkExactCopy(t, readTopic(t, []string{src.Addr}, topic), readTopic(t, target, topic), "dc1", 0, 0)
}

// startLinkedBroker starts broker id of the cluster at connect, which
// everyone, clients and the other brokers' replica fetchers alike, reaches
// through a holdLink: it registers the link's address.
func startLinkedBroker(t *testing.T, connect string, id int32) (*testenv.Broker, *holdLink) {
	t.Helper()
	var link *holdLink
	b := testenv.StartBroker(t,
		testenv.WithConfig(func(c *broker.Config) { c.ReplicaLagMax = 5 * time.Minute }), // no ISR shrink in the test
		testenv.WithMetadata(func(self cluster.Broker) (cluster.Metadata, error) {
			link = startHoldLink(t, net.JoinHostPort(self.Host, strconv.Itoa(int(self.Port))))
			host, port, _ := net.SplitHostPort(link.Addr())
			p, _ := strconv.Atoi(port)
			self.ID, self.Host, self.Port = id, host, int32(p)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return cluster.JoinZooKeeper(ctx, connect, self, testenv.Logger(t, slog.LevelWarn), cluster.WithSessionTimeout(testenv.ClusterSessionTimeout))
		}))
	return b, link
}

// messagesIn is how many records b appended to topic as its leader.
func messagesIn(t *testing.T, b *broker.Broker, topic string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(b.Metrics()); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "tributary_broker_topic_messages_in_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "topic" && l.GetValue() == topic {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
