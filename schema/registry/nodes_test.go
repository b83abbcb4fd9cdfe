package registry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestNodesAgree runs racing registrations on two nodes sharing one log and
// checks that they, and a node started afterwards, agree.
func TestNodesAgree(t *testing.T) {
	log := registry.NewMemoryLog()
	a, b := srtest.StartOn(t, log), srtest.StartOn(t, log)
	raceRegistrations(t, 15, a, b)
	c := srtest.StartOn(t, log) // replays what a and b wrote
	agree(t, a, b, c)
}

// agree checks that all nodes end up showing the same subjects, versions
// and ids. Lists are answered from what a node has read so far, so a node
// may lag another by the moment it takes to read the newest records.
func agree(t *testing.T, nodes ...*srtest.Registry) {
	t.Helper()
	testenv.Eventuallyf(t, 10*time.Second, func() (bool, string) {
		want := dump(t, nodes[0])
		for i, n := range nodes[1:] {
			if got := dump(t, n); got != want {
				return false, fmt.Sprintf("node %d shows:\n%s\nnode 0 shows:\n%s", i+1, got, want)
			}
		}
		return true, ""
	})
}

// raceRegistrations registers from every node at once — distinct schemas
// into one subject (racing for version slots) and one schema into many
// subjects (racing for its id) — and checks that every registration got a
// distinct version and every schema exactly one id.
func raceRegistrations(t *testing.T, perNode int, nodes ...*srtest.Registry) {
	t.Helper()
	ctx := context.Background()
	// NONE: the distinct schemas are not meant to be compatible.
	if r := nodes[0].Client.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	type result struct {
		subject, schema string
		id              int
	}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	register := func(n *srtest.Registry, subject, schema string) {
		defer wg.Done()
		id, err := n.Client.RegisterSchema(ctx, subject, sr.Schema{Schema: schema}, -1, -1)
		if err != nil {
			t.Errorf("register %s: %v", subject, err)
			return
		}
		mu.Lock()
		results = append(results, result{subject, schema, id})
		mu.Unlock()
	}
	for ni, n := range nodes {
		for i := range perNode {
			wg.Add(2)
			go register(n, "shared", rec(fmt.Sprintf("f%d_%d:string", ni, i)))
			go register(n, fmt.Sprintf("subject-%d", i), rec("same:long"))
		}
	}
	wg.Wait()

	idOf := map[string]int{}
	schemaOf := map[int]string{}
	for _, r := range results {
		if id, ok := idOf[r.schema]; ok && id != r.id {
			t.Errorf("schema %s got ids %d and %d", r.schema, id, r.id)
		}
		if s, ok := schemaOf[r.id]; ok && s != r.schema {
			t.Errorf("id %d given to %s and %s", r.id, s, r.schema)
		}
		idOf[r.schema], schemaOf[r.id] = r.id, r.schema
	}
	// A node serves lists from what it has read so far: one that did not
	// take the last registrations shows them once it has read them.
	for i, n := range nodes {
		testenv.Eventually(t, 10*time.Second, fmt.Sprintf("node %d lists %d versions of shared", i, len(nodes)*perNode), func() bool {
			versions, err := n.Client.SubjectVersions(ctx, "shared")
			return err == nil && len(versions) == len(nodes)*perNode
		})
	}
}

// dump renders a node's subjects, versions and ids.
func dump(t *testing.T, n *srtest.Registry) string {
	t.Helper()
	all, err := n.Client.AllSchemas(sr.WithParams(context.Background(), sr.ShowDeleted))
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, s := range all {
		out += fmt.Sprintf("%s v%d id%d %s\n", s.Subject, s.Version, s.ID, s.Schema.Schema)
	}
	return out
}

// TestReadAfterWriteOnOtherNode: a schema registered on one node is found
// at once on another, which catches up before answering "not found".
func TestReadAfterWriteOnOtherNode(t *testing.T) {
	ctx := context.Background()
	log := registry.NewMemoryLog()
	a, b := srtest.StartOn(t, log), srtest.StartOn(t, log)
	for i := range 20 {
		s := rec(fmt.Sprintf("x%d:int", i))
		id, err := a.Client.RegisterSchema(ctx, fmt.Sprintf("s%d", i), sr.Schema{Schema: s}, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Client.SchemaByID(ctx, id)
		if err != nil || got.Schema != s {
			t.Fatalf("node b, id %d: %q (%v)", id, got.Schema, err)
		}
	}
}
