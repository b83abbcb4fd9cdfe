package cluster

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The registry nodes every broker and consumer reads can be written by
// anyone with access to ZooKeeper (an older or newer process, a person with
// zkCli). Their decoders must never panic, must refuse what would be
// unbounded, and whatever they accept must be a node a writer could have
// written: encoding it again and decoding gives the same node.

func seedNodes(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
}

func FuzzDecodeBrokerNode(f *testing.F) {
	seedNodes(f,
		`{"id":1,"host":"127.0.0.1","port":9093,"topics":{"events":[0,3,6,9]}}`,
		`{"id":0,"host":"h","port":1}`, `{"id":-1,"host":"h","port":9092}`,
		`{"id":1,"host":"","port":9092}`, `{"id":1,"host":"h","port":0}`,
		`{"id":1,"host":"h","port":9092,"topics":{"a/b":[0]}}`, `null`, `[]`, `{"id":1e99}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeBrokerNode(data)
		if err != nil {
			return
		}
		if n.ID < 0 || n.Host == "" || n.Port < 1 || n.Port > 65535 {
			t.Fatalf("accepted a broker that cannot be reached: %+v", n)
		}
		for topic, parts := range n.Topics {
			if ValidateName("topic", topic) != nil || len(parts) > len(data) {
				t.Fatalf("accepted topic %q with %d partitions from %d bytes", topic, len(parts), len(data))
			}
		}
		roundTrip(t, n, DecodeBrokerNode)
	})
}

func FuzzDecodeTopicNode(f *testing.F) {
	seedNodes(f,
		`{"version":1,"leaders":[1,2,3,1],"configs":{"retention.ms":"1000"}}`,
		`{"leaders":[0]}`, `{"version":2,"leaders":[0]}`, `{"version":1,"leaders":[]}`,
		`{"version":1,"leaders":[-1]}`, `{"version":1,"leaders":null}`, `null`, `"x"`,
		`{"version":1,"leaders":[1,2],"replicas":[[1,2,3],[2,3,1]]}`,
		`{"version":1,"leaders":[1,2],"replicas":[[1,2,3]]}`,
		`{"version":1,"leaders":[1],"replicas":[[2,1]]}`, `{"version":1,"leaders":[1],"replicas":[[1,1]]}`,
		`{"version":1,"leaders":[1,2],"replicas":[[1,2],[2]]}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeTopicNode(data)
		if err != nil {
			return
		}
		if n.Version < 0 || n.Version > nodeVersion || len(n.Leaders) == 0 || len(n.Leaders) > len(data) {
			t.Fatalf("accepted an assignment no writer makes: %+v", n)
		}
		for _, id := range n.Leaders {
			if id < 0 {
				t.Fatalf("accepted a negative broker id: %+v", n)
			}
		}
		if n.Replicas != nil && checkReplicas(n.Leaders, n.Replicas) != nil {
			t.Fatalf("accepted replicas no writer makes: %+v", n)
		}
		roundTrip(t, n, DecodeTopicNode)
	})
}

func FuzzDecodeConsumerNode(f *testing.F) {
	seedNodes(f,
		`{"version":1,"group":"g","topics":["events"],"host":"h","pid":123,"started":"2026-01-02T03:04:05Z"}`,
		`{"version":1,"group":"","topics":[]}`, `{"version":1,"group":"g","topics":["a b"]}`,
		`{"version":9,"group":"g"}`, `null`)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeConsumerNode(data)
		if err != nil {
			return
		}
		if ValidateName("group", n.Group) != nil || n.Version > nodeVersion || len(n.Topics) > len(data) {
			t.Fatalf("accepted a consumer no writer makes: %+v", n)
		}
		for _, topic := range n.Topics {
			if ValidateName("topic", topic) != nil {
				t.Fatalf("accepted topic %q", topic)
			}
		}
		roundTrip(t, n, DecodeConsumerNode)
	})
}

func FuzzDecodeOwnerNode(f *testing.F) {
	seedNodes(f, "consumer-1", "host-1234-abcd\n", "", " ", "a/b", "..", strings.Repeat("c", 250))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := DecodeOwnerNode(data)
		if err != nil {
			return
		}
		if ValidateName("consumer id", id) != nil {
			t.Fatalf("accepted owner %q", id)
		}
		if again, err := DecodeOwnerNode([]byte(id)); err != nil || again != id {
			t.Fatalf("owner %q reads back as %q, %v", id, again, err)
		}
	})
}

func FuzzDecodeOffsetNode(f *testing.F) {
	seedNodes(f, "0", "42", "42\n", " 7 ", "-1", "", "x", "9223372036854775807", "9223372036854775808", "+5", "0x10")
	f.Fuzz(func(t *testing.T, data []byte) {
		off, err := DecodeOffsetNode(data)
		if err != nil {
			return
		}
		if off < 0 {
			t.Fatalf("accepted negative offset %d from %q", off, data)
		}
		if again, err := DecodeOffsetNode([]byte(strconv.FormatInt(off, 10))); err != nil || again != off {
			t.Fatalf("offset %d reads back as %d, %v", off, again, err)
		}
	})
}

// roundTrip checks that an accepted node, written again as a writer would,
// decodes to the same node.
func roundTrip[N any](t *testing.T, n N, decode func([]byte) (N, error)) {
	t.Helper()
	data, err := json.Marshal(n)
	if err != nil {
		t.Fatalf("accepted node %+v cannot be written again: %v", n, err)
	}
	again, err := decode(data)
	if err != nil {
		t.Fatalf("accepted node %+v, written again as %s, is refused: %v", n, data, err)
	}
	if !reflect.DeepEqual(normalize(n), normalize(again)) {
		t.Fatalf("node %+v reads back as %+v", n, again)
	}
}

// normalize makes empty and missing collections alike: JSON writes both the
// same way.
func normalize(v any) any {
	data, _ := json.Marshal(v)
	var out any
	json.Unmarshal(data, &out)
	return out
}

// What the fuzz targets found: nodes the decoders accepted although no
// writer makes them, and that readers would have acted on.
func TestDecodersRefuseNodesNoWriterMakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"broker without host", func() error { _, err := DecodeBrokerNode([]byte(`{"id":1,"port":9092}`)); return err }()},
		{"broker at port 0", func() error { _, err := DecodeBrokerNode([]byte(`{"id":1,"host":"h"}`)); return err }()},
		{"broker with negative id", func() error { _, err := DecodeBrokerNode([]byte(`{"id":-3,"host":"h","port":1}`)); return err }()},
		{"broker node null", func() error { _, err := DecodeBrokerNode([]byte(`null`)); return err }()},
		{"topic without partitions", func() error { _, err := DecodeTopicNode([]byte(`{"version":1,"leaders":[]}`)); return err }()},
		{"topic with negative leader", func() error { _, err := DecodeTopicNode([]byte(`{"version":1,"leaders":[0,-1]}`)); return err }()},
		{"topic of a newer version", func() error { _, err := DecodeTopicNode([]byte(`{"version":2,"leaders":[0]}`)); return err }()},
		{"consumer without group", func() error { _, err := DecodeConsumerNode([]byte(`{"version":1,"topics":["t"]}`)); return err }()},
		{"consumer of a bad topic", func() error {
			_, err := DecodeConsumerNode([]byte(`{"version":1,"group":"g","topics":["a/b"]}`))
			return err
		}()},
		{"negative offset", func() error { _, err := DecodeOffsetNode([]byte("-5")); return err }()},
		{"empty owner", func() error { _, err := DecodeOwnerNode([]byte("\n")); return err }()},
		{"node larger than ZooKeeper holds", func() error {
			_, err := DecodeOffsetNode([]byte(strings.Repeat("1", MaxNodeSize+1)))
			return err
		}()},
	} {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if off, err := DecodeOffsetNode([]byte("42\n")); err != nil || off != 42 {
		t.Errorf("offset written with a trailing newline: %d, %v; want 42", off, err)
	}
	if n, err := DecodeTopicNode([]byte(`{"leaders":[2]}`)); err != nil || n.Leaders[0] != 2 {
		t.Errorf("hand-written assignment without a version: %+v, %v", n, err)
	}
}

func FuzzDecodePartitionStateNode(f *testing.F) {
	seedNodes(f,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2,3,1],"controller_epoch":4}`,
		`{"version":1,"leader":-1,"leader_epoch":1,"isr":[2],"controller_epoch":1}`,
		`{"version":1,"leader":2,"leader_epoch":0,"isr":[1,3],"controller_epoch":0}`,
		`{"version":1,"leader":1,"leader_epoch":0,"isr":[1,1],"controller_epoch":0}`,
		`{"version":1,"leader":1,"leader_epoch":-1,"isr":[1],"controller_epoch":0}`,
		`{"version":0,"leader":1,"isr":[1]}`, `{"version":1,"leader":-2,"isr":[1]}`,
		`{"version":1,"leader":1,"isr":[]}`, `null`,
		// Broker epochs: the czxids of the registrations (brokerepochs.go).
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2,3],"controller_epoch":4,"leader_broker_epoch":4294967302,"isr_broker_epochs":[4294967302,4294967310]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2,3],"controller_epoch":4,"isr_broker_epochs":[0,12]}`,
		`{"version":1,"leader":-1,"leader_epoch":3,"isr":[2],"controller_epoch":4,"isr_broker_epochs":[12]}`,
		`{"version":1,"leader":-1,"leader_epoch":3,"isr":[2],"controller_epoch":4,"leader_broker_epoch":12}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2,3],"controller_epoch":4,"isr_broker_epochs":[12]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"leader_broker_epoch":-5}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"isr_broker_epochs":[-1]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"isr_broker_epochs":[]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"leader_broker_epoch":1e30}`,
		// Eligible leader replicas (elr.go).
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"isr_broker_epochs":[12],"elr":[3,1],"elr_broker_epochs":[13,11]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"elr":[2],"elr_broker_epochs":[12]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"elr":[3],"elr_broker_epochs":[0]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"elr":[3,3],"elr_broker_epochs":[5,5]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"elr":[3]}`,
		`{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":4,"elr_broker_epochs":[3]}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodePartitionStateNode(data)
		if err != nil {
			return
		}
		if n.Version != nodeVersion || n.Leader < -1 || n.LeaderEpoch < 0 || n.ControllerEpoch < 0 || len(n.ISR) == 0 {
			t.Fatalf("accepted a state no writer makes: %+v", n)
		}
		inISR := n.Leader == -1
		for i, id := range n.ISR {
			if id < 0 || slices.Contains(n.ISR[:i], id) {
				t.Fatalf("accepted isr %v", n.ISR)
			}
			inISR = inISR || id == n.Leader
		}
		if !inISR {
			t.Fatalf("accepted leader %d outside the isr %v", n.Leader, n.ISR)
		}
		if n.LeaderBrokerEpoch < 0 || (n.Leader < 0 && n.LeaderBrokerEpoch != 0) || (n.ISRBrokerEpochs != nil && len(n.ISRBrokerEpochs) != len(n.ISR)) {
			t.Fatalf("accepted broker epochs no writer makes: %+v", n)
		}
		for _, e := range n.ISRBrokerEpochs {
			if e < 0 {
				t.Fatalf("accepted isr broker epochs %v", n.ISRBrokerEpochs)
			}
		}
		if len(n.ELR) != len(n.ELRBrokerEpochs) {
			t.Fatalf("accepted elr %v with broker epochs %v", n.ELR, n.ELRBrokerEpochs)
		}
		for i, id := range n.ELR {
			if id < 0 || slices.Contains(n.ISR, id) || slices.Contains(n.ELR[:i], id) || n.ELRBrokerEpochs[i] <= 0 {
				t.Fatalf("accepted elr %v (broker epochs %v) beside isr %v", n.ELR, n.ELRBrokerEpochs, n.ISR)
			}
		}
		roundTrip(t, n, DecodePartitionStateNode)
		if again, err := DecodePartitionStateNode(encodeState(n)); err != nil {
			t.Fatalf("accepted node %+v, written as a writer does, is refused: %v", n, err)
		} else if again.Leader != n.Leader || again.LeaderBrokerEpoch != n.LeaderBrokerEpoch {
			t.Fatalf("node %+v written as a writer does reads back as %+v", n, again)
		}
	})
}

func FuzzDecodeControllerNode(f *testing.F) {
	seedNodes(f,
		`{"version":1,"brokerid":2,"timestamp":"1764531536000"}`,
		`{"version":1,"brokerid":0,"timestamp":"0"}`, `{"version":1,"brokerid":-1,"timestamp":"1"}`,
		`{"version":2,"brokerid":1,"timestamp":"1"}`, `{"version":1,"brokerid":1,"timestamp":1}`,
		`{"version":1,"brokerid":2147483648}`, `{"version":1,"brokerid":1e3}`, `{"version":1,"brokerid":"1"}`,
		`{"version":1,"brokerid":1,"brokerid":-1}`, `{"version":1,"brokerid":1,"timestamp":"99999999999999999999"}`,
		`{"version":1,"brokerid":1,"timestamp":"\"1\""}`, `null`, `[]`, `1`, strings.Repeat("[", 10000))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeControllerNode(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "controller node") {
				t.Fatalf("error does not name the node: %v", err)
			}
			return
		}
		if n.Version != nodeVersion || n.BrokerID < 0 {
			t.Fatalf("accepted a controller no broker writes: %+v", n)
		}
		roundTrip(t, n, DecodeControllerNode)
	})
}

func FuzzDecodeElectionNode(f *testing.F) {
	seedNodes(f,
		`{"version":1,"partitions":[{"topic":"events","partition":0},{"topic":"events","partition":3}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":1}],"election_type":1}`,
		`{"version":1,"partitions":[]}`, `{"version":1}`, `{"partitions":[{"topic":"a","partition":0}]}`,
		`{"version":2,"partitions":[{"topic":"a","partition":0}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0}],"election_type":2}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0}],"election_type":-1}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0}],"election_type":128}`,
		`{"version":1,"partitions":[{"topic":"a","partition":-1}]}`,
		`{"version":1,"partitions":[{"topic":"a/b","partition":0}]}`,
		`{"version":1,"partitions":[{"topic":"","partition":0}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"a","partition":0}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":2147483648}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0,"topic":"b"}]}`,
		`{"version":1,"partitions":{"topic":"a"}}`, `{"version":1,"partitions":[null]}`,
		`null`, `"x"`, strings.Repeat(`{"a":`, 5000))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeElectionNode(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "preferred replica election node") {
				t.Fatalf("error does not name the node: %v", err)
			}
			return
		}
		if n.Version < 0 || n.Version > nodeVersion || (n.Type < 0 || n.Type > 2) || len(n.Partitions) > len(data) {
			t.Fatalf("accepted an election request no broker writes: %+v", n)
		}
		seen := map[TopicPartition]bool{}
		for _, tp := range n.Partitions {
			if ValidateName("topic", tp.Topic) != nil || tp.Partition < 0 || seen[tp] {
				t.Fatalf("accepted partition %+v of %+v", tp, n)
			}
			seen[tp] = true
		}
		roundTrip(t, n, DecodeElectionNode)
	})
}

// What the controller and election targets found: an election type no
// broker writes was run as a preferred election, and a request naming a
// partition twice, or a partition no topic can have, was acted on.
func TestDecodeRefusesBadElectionAndControllerNodes(t *testing.T) {
	for _, node := range []string{
		`{"version":1,"partitions":[{"topic":"a","partition":0}],"election_type":3}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0}],"election_type":-1}`,
		`{"version":2,"partitions":[{"topic":"a","partition":0}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":-1}]}`,
		`{"version":1,"partitions":[{"topic":"a/b","partition":0}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"a","partition":0}]}`,
		`{"version":1,"partitions":[null]}`,
		strings.Repeat(" ", MaxNodeSize+1),
	} {
		if n, err := DecodeElectionNode([]byte(node)); err == nil {
			t.Errorf("election node %.80s: accepted as %+v", node, n)
		}
	}
	n, err := DecodeElectionNode([]byte(`{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"a","partition":1}],"election_type":1}`))
	if err != nil || len(n.Partitions) != 2 || n.Type != 1 {
		t.Errorf("unclean election of two partitions: %+v, %v", n, err)
	}
	for _, node := range []string{
		`{"version":1,"brokerid":-1,"timestamp":"1"}`, `{"version":2,"brokerid":1,"timestamp":"1"}`,
		`{"version":1,"brokerid":1,"timestamp":1}`, `null`,
	} {
		if n, err := DecodeControllerNode([]byte(node)); err == nil {
			t.Errorf("controller node %s: accepted as %+v", node, n)
		}
	}
	if n, err := DecodeControllerNode([]byte(`{"version":1,"brokerid":3,"timestamp":"1764531536000"}`)); err != nil || n.BrokerID != 3 {
		t.Errorf("controller node as brokers write it: %+v, %v", n, err)
	}
}

// FuzzTopicNodeReassignments reads the reassignments under way
// (adding_replicas, removing_replicas) out of whatever topic node
// DecodeTopicNode accepts: never a panic, never a partition the topic
// does not have, each partition's move made of the node's own entries for
// it, and only moves the controller can complete: partitions in decimal,
// added and removed brokers among the replicas, none both, and at least
// one replica left.
func FuzzTopicNodeReassignments(f *testing.F) {
	seedNodes(f,
		`{"version":1,"leaders":[1,2],"replicas":[[1,2,3],[2,3,1]],"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}}`,
		`{"version":1,"leaders":[4,2],"replicas":[[4,1,2],[2,3]],"adding_replicas":{"0":[4],"1":[]},"removing_replicas":{"0":[2],"1":[3]}}`,
		`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"1":[3]}}`,
		`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"-1":[3]},"removing_replicas":{"x":[1]}}`,
		`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"0":[3]},"removing_replicas":{"00":[1]}}`,
		`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"+0":[3]," 0":[1],"2147483648":[1]}}`,
		`{"version":1,"leaders":[1],"adding_replicas":{"0":[-3]},"removing_replicas":{"0":null}}`,
		`{"version":1,"leaders":[1],"replicas":[[1,2]],"removing_replicas":{"0":[1,2]}}`,
		`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"0":[1,1,1]},"adding_replicas":{"0":[2]}}`,
		`{"version":1,"leaders":[1],"replicas":[[1,2,3]],"adding_replicas":{"0":[1]},"removing_replicas":{"0":[1]}}`,
		`{"version":1,"leaders":[1],"replicas":[[1,2,3]],"adding_replicas":{"0":[4]},"removing_replicas":{"0":[5]}}`,
		`{"version":1,"leaders":[1],"adding_replicas":{"0":[1]}}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeTopicNode(data)
		if err != nil {
			return
		}
		for _, m := range []map[string][]int32{n.AddingReplicas, n.RemovingReplicas} {
			for key := range m {
				p, err := strconv.Atoi(key)
				if err != nil || strconv.Itoa(p) != key || p < 0 || p >= len(n.Leaders) {
					t.Fatalf("accepted partition key %q of a topic of %d", key, len(n.Leaders))
				}
				replicas := []int32{n.Leaders[p]}
				if n.Replicas != nil {
					replicas = n.Replicas[p]
				}
				adding, removing := n.AddingReplicas[key], n.RemovingReplicas[key]
				for _, id := range slices.Concat(adding, removing) {
					if id < 0 || !slices.Contains(replicas, id) {
						t.Fatalf("partition %d: accepted broker %d, not one of its replicas %v", p, id, replicas)
					}
				}
				for i, id := range removing {
					if slices.Contains(adding, id) || slices.Contains(removing[:i], id) {
						t.Fatalf("partition %d: accepted removing %v with adding %v", p, removing, adding)
					}
				}
				if len(removing) >= len(replicas) {
					t.Fatalf("partition %d: accepted removing %v of replicas %v", p, removing, replicas)
				}
			}
		}
		for p, r := range n.reassignments() {
			if p < 0 || int(p) >= len(n.Leaders) {
				t.Fatalf("reassignment of partition %d of a topic of %d", p, len(n.Leaders))
			}
			own := false
			for _, key := range slices.Concat(slices.Collect(maps.Keys(n.AddingReplicas)), slices.Collect(maps.Keys(n.RemovingReplicas))) {
				k, err := strconv.ParseInt(key, 10, 32)
				own = own || err == nil && int32(k) == p &&
					slices.Equal(r.Adding, n.AddingReplicas[key]) && slices.Equal(r.Removing, n.RemovingReplicas[key])
			}
			if !own {
				t.Fatalf("partition %d: move %+v is not the node's entries for it", p, r)
			}
		}
		roundTrip(t, n, DecodeTopicNode)
	})
}

// What FuzzTopicNodeReassignments found: moves the controller would wait
// on forever, or read differently in each round.
func TestDecodeRefusesMovesNoControllerCompletes(t *testing.T) {
	for _, tc := range []struct{ node, want string }{
		{`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"0":[2]},"removing_replicas":{"00":[1]}}`, `partition key "00"`},
		{`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"+0":[2]}}`, `partition key "+0"`},
		{`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"1":[2]}}`, "the topic has 1 partitions"},
		{`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"-1":[2]}}`, "partition -1"},
		{`{"version":1,"leaders":[1],"replicas":[[1,2]],"removing_replicas":{"0":[1,2]}}`, "removes every replica"},
		{`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"0":[3]}}`, "broker 3 is not one of its replicas"},
		{`{"version":1,"leaders":[1],"replicas":[[1,2]],"removing_replicas":{"0":[3]}}`, "broker 3 is not one of its replicas"},
		{`{"version":1,"leaders":[1],"replicas":[[1,2]],"adding_replicas":{"0":[-2]}}`, "negative"},
		{`{"version":1,"leaders":[1],"replicas":[[1,2,3]],"removing_replicas":{"0":[2,2]}}`, "listed twice"},
		{`{"version":1,"leaders":[1],"replicas":[[1,2,3]],"adding_replicas":{"0":[2]},"removing_replicas":{"0":[2]}}`, "both being added and removed"},
	} {
		_, err := DecodeTopicNode([]byte(tc.node))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.node, err, tc.want)
		}
	}
	n, err := DecodeTopicNode([]byte(`{"version":1,"leaders":[3],"replicas":[[3,1,2]],"adding_replicas":{"0":[3]},"removing_replicas":{"0":[2]}}`))
	if err != nil || !slices.Equal(n.reassignments()[0].Removing, []int32{2}) {
		t.Errorf("a move as AlterReassignment writes it: %+v, %v", n, err)
	}
}

// BenchmarkDecodeLargeISR decodes the largest state node ZooKeeper holds:
// an ISR of some 150,000 distinct ids, which every broker reads when it
// changes. Checking for duplicates id by id against the ones before took
// about 4 s of CPU per decode.
func BenchmarkDecodeLargeISR(b *testing.B) {
	var node strings.Builder
	node.WriteString(`{"version":1,"leader":0,"leader_epoch":0,"controller_epoch":0,"isr":[0`)
	for id := 1; node.Len() < MaxNodeSize-32; id++ {
		node.WriteString("," + strconv.Itoa(id))
	}
	node.WriteString("]}")
	data := []byte(node.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodePartitionStateNode(data); err != nil {
			b.Fatal(err)
		}
	}
}
