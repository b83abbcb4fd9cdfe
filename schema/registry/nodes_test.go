package registry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestNodesAgree registers from two nodes sharing one log at once —
// distinct schemas into one subject (racing for version slots) and one
// schema into many subjects (racing for its id) — and checks that every
// registration got a distinct version, every schema exactly one id, and
// that both nodes and a node started afterwards tell the same story.
func TestNodesAgree(t *testing.T) {
	ctx := context.Background()
	log := registry.NewMemoryLog()
	a, b := srtest.StartOn(t, log), srtest.StartOn(t, log)
	for _, n := range []*srtest.Registry{a, b} {
		// NONE: the distinct schemas are not meant to be compatible.
		if r := n.Client.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
	}

	const perNode = 15
	type result struct {
		subject, schema string
		id              int
	}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	for ni, n := range []*srtest.Registry{a, b} {
		for i := range perNode {
			wg.Add(2)
			go func() { // distinct schemas, one subject
				defer wg.Done()
				s := rec(fmt.Sprintf("f%d_%d:string", ni, i))
				id, err := n.Client.RegisterSchema(ctx, "shared", sr.Schema{Schema: s}, -1, -1)
				if err != nil {
					t.Errorf("node %d: %v", ni, err)
				}
				mu.Lock()
				results = append(results, result{"shared", s, id})
				mu.Unlock()
			}()
			go func() { // one schema, many subjects
				defer wg.Done()
				s := rec("same:long")
				subject := fmt.Sprintf("subject-%d", i)
				id, err := n.Client.RegisterSchema(ctx, subject, sr.Schema{Schema: s}, -1, -1)
				if err != nil {
					t.Errorf("node %d: %v", ni, err)
				}
				mu.Lock()
				results = append(results, result{subject, s, id})
				mu.Unlock()
			}()
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
	versions, err := a.Client.SubjectVersions(ctx, "shared")
	if err != nil || len(versions) != 2*perNode {
		t.Fatalf("shared has versions %v (%v), want %d", versions, err, 2*perNode)
	}

	c := srtest.StartOn(t, log) // replays what a and b wrote
	want := dump(t, a)
	for name, n := range map[string]*srtest.Registry{"b": b, "c": c} {
		if got := dump(t, n); got != want {
			t.Errorf("node %s disagrees with node a:\n%s\nwant\n%s", name, got, want)
		}
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
