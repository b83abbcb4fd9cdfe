package group_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

type tp = group.TopicPartition

// storeContract is what every OffsetStore must do; reopen returns a store
// over the same durable state, as after a broker restart.
func storeContract(t *testing.T, s group.OffsetStore, reopen func() group.OffsetStore, keepsMetadata bool) {
	t.Helper()
	if got, err := s.Load("nobody"); err != nil || len(got) != 0 {
		t.Fatalf("unknown group: %v %v", got, err)
	}
	must(t, s.Commit("orders-app", map[tp]group.Offset{{"orders", 0}: {Offset: 10, Metadata: "m"}, {"orders", 1}: {Offset: 20}}))
	must(t, s.Commit("orders-app", map[tp]group.Offset{{"orders", 1}: {Offset: 25}, {"refunds", 0}: {Offset: 3}}))
	must(t, s.Commit("audit", map[tp]group.Offset{{"orders", 0}: {Offset: 1}}))

	s = reopen()
	got, err := s.Load("orders-app")
	if err != nil {
		t.Fatal(err)
	}
	want := map[tp]group.Offset{{"orders", 0}: {Offset: 10, Metadata: "m"}, {"orders", 1}: {Offset: 25}, {"refunds", 0}: {Offset: 3}}
	if !keepsMetadata {
		want[tp{"orders", 0}] = group.Offset{Offset: 10}
	}
	if len(got) != len(want) {
		t.Fatalf("after reopening: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("after reopening, %v is %+v, want %+v", k, got[k], v)
		}
	}
	groups, err := s.Groups()
	if err != nil || strings.Join(groups, ",") != "audit,orders-app" {
		t.Fatalf("groups: %v %v", groups, err)
	}
	must(t, s.Delete("audit"))
	if err := s.Delete("audit"); !errors.Is(err, group.ErrNoGroup) {
		t.Fatalf("deleting twice: %v, want ErrNoGroup", err)
	}
	if got, _ := reopen().Load("audit"); len(got) != 0 {
		t.Fatalf("deleted group still has %v", got)
	}

	// Forget (OffsetDelete) drops some partitions and keeps the rest,
	// durably; unknown partitions and groups are no error.
	must(t, s.Forget("orders-app", []tp{{"orders", 1}, {"refunds", 0}, {"never", 7}}))
	must(t, s.Forget("nobody", []tp{{"orders", 0}}))
	got, err = reopen().Load("orders-app")
	if err != nil || len(got) != 1 || got[tp{"orders", 0}].Offset != 10 {
		t.Fatalf("after Forget: %v %v, want only orders/0 at 10", got, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestDirStore(t *testing.T) {
	dir := t.TempDir()
	open := func() group.OffsetStore {
		s, err := group.OpenDirStore(dir)
		must(t, err)
		return s
	}
	storeContract(t, open(), open, true)
}

// TestDirStoreAnyGroupName: Kafka group ids may hold characters no file
// name can; they are stored under a hash and come back intact.
func TestDirStoreAnyGroupName(t *testing.T) {
	dir := t.TempDir()
	s, err := group.OpenDirStore(dir)
	must(t, err)
	names := []string{"../escape", "a/b", "spaces and ünïcode", strings.Repeat("x", 300), ".."}
	for i, n := range names {
		must(t, s.Commit(n, map[tp]group.Offset{{"t", 0}: {Offset: int64(i)}}))
	}
	s, err = group.OpenDirStore(dir)
	must(t, err)
	for i, n := range names {
		if got, _ := s.Load(n); got[tp{"t", 0}].Offset != int64(i) {
			t.Errorf("group %q: %v", n, got)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(names) {
		t.Fatalf("%d files for %d groups", len(entries), len(names))
	}
}

// TestDirStoreCorruptFile: a damaged file stops the broker with its path
// rather than silently restarting the group from its reset policy.
func TestDirStoreCorruptFile(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "app.json"), []byte("{not json"), 0o644))
	_, err := group.OpenDirStore(dir)
	if err == nil || !strings.Contains(err.Error(), "app.json") {
		t.Fatalf("opening a corrupt store: %v", err)
	}
}

func zkSession(t *testing.T, connect string) *cluster.ZKSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := cluster.DialZooKeeper(ctx, connect, nil)
	must(t, err)
	t.Cleanup(s.Close)
	return s
}

// TestZooKeeperStore runs the contract against a real ZooKeeper and checks
// that the offsets are where and how the paper's consumers keep them.
func TestZooKeeperStore(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	s := zkSession(t, connect)
	storeContract(t, group.NewZooKeeperStore(s), func() group.OffsetStore {
		return group.NewZooKeeperStore(zkSession(t, connect))
	}, false)

	data, _, err := s.Conn.Get(s.Paths.Offset("orders-app", "orders", 0))
	if err != nil || string(data) != "10" {
		t.Fatalf("offset registry node: %q %v; want decimal text", data, err)
	}
	if err := group.NewZooKeeperStore(s).Commit("a/b", map[tp]group.Offset{{"t", 0}: {Offset: 1}}); !errors.Is(err, group.ErrInvalidGroup) {
		t.Fatalf("group name that is no path element: %v", err)
	}
}

// TestZooKeeperStoreGroupInUse: a group whose paper-style consumers are
// registered is not deleted under them.
func TestZooKeeperStoreGroupInUse(t *testing.T) {
	s := zkSession(t, testenv.StartZooKeeper(t))
	store := group.NewZooKeeperStore(s)
	must(t, store.Commit("mirror", map[tp]group.Offset{{"t", 0}: {Offset: 7}}))
	must(t, s.EnsurePath(s.Paths.ConsumerIDs("mirror")))
	if _, err := s.Conn.Create(s.Paths.Consumer("mirror", "c1"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete("mirror"); !errors.Is(err, group.ErrGroupInUse) {
		t.Fatalf("delete with a registered consumer: %v", err)
	}
	if got, _ := store.Load("mirror"); got[tp{"t", 0}].Offset != 7 {
		t.Fatalf("offsets after refused delete: %v", got)
	}
}
