package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/internal/testenv"
)

// identities reads the cluster id and one topic's id through Metadata.
func identities(t *testing.T, addr, topic string) (clusterID string, topicID kadm.TopicID) {
	t.Helper()
	adm, _ := newAdmin(t, addr)
	m, err := adm.Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := m.Topics[topic]
	if !ok || td.Err != nil {
		t.Fatalf("metadata of %s: %+v", topic, td)
	}
	return m.Cluster, td.ID
}

func TestStandaloneIdentitiesPersist(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	adm, _ := newAdmin(t, b.Addr)
	created, err := adm.CreateTopic(context.Background(), 1, 1, nil, "ids")
	if err != nil || created.Err != nil {
		t.Fatal(err, created.Err)
	}
	cid, tid := identities(t, b.Addr, "ids")
	if cid == "" || cid == "tributary" || len(cid) != 22 {
		t.Errorf("cluster id %q is not a random id", cid)
	}
	if tid == (kadm.TopicID{}) {
		t.Fatal("topic id is zero")
	}
	if created.ID != tid {
		t.Errorf("CreateTopics answered id %v, Metadata %v", created.ID, tid)
	}
	b.Stop()

	b2 := testenv.StartBroker(t, testenv.WithDataDir(dir))
	cid2, tid2 := identities(t, b2.Addr, "ids")
	if cid2 != cid || tid2 != tid {
		t.Errorf("after a restart: cluster %q topic %v, before %q %v", cid2, tid2, cid, tid)
	}
	other := testenv.StartBroker(t)
	oadm, _ := newAdmin(t, other.Addr)
	if m, err := oadm.BrokerMetadata(context.Background()); err != nil || m.Cluster == cid {
		t.Error("two data directories share a cluster id")
	}
}

func TestClusterIdentitiesShared(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 2)
	adm, _ := newAdmin(t, brokers[0].Addr)
	if r, err := adm.CreateTopic(context.Background(), 2, 1, nil, "shared-ids"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	cid1, tid1 := identities(t, brokers[0].Addr, "shared-ids")
	adm2, _ := newAdmin(t, brokers[1].Addr)
	testenv.Eventually(t, 10*time.Second, "second broker sees the topic", func() bool {
		m, err := adm2.Metadata(context.Background(), "shared-ids")
		return err == nil && m.Topics["shared-ids"].Err == nil
	})
	cid2, tid2 := identities(t, brokers[1].Addr, "shared-ids")
	if cid1 != cid2 || tid1 != tid2 || cid1 == "tributary" || tid1 == (kadm.TopicID{}) {
		t.Errorf("broker 1: %q %v; broker 2: %q %v", cid1, tid1, cid2, tid2)
	}
}
