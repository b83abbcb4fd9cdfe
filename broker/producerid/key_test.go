package producerid

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The permutation never maps two counters to one id, stays below 2^40, and
// skips ids an older broker may have handed out unpermuted.
func TestProducerIDPermutationIsOneToOne(t *testing.T) {
	dir := t.TempDir()
	k, err := loadKey(dir, 5000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int64{}
	for c := range int64(200_000) {
		id := k.permute(c)
		if id < 0 || id >= 1<<idBits {
			t.Fatalf("counter %d → %d, outside 40 bits", c, id)
		}
		if prev, dup := seen[id]; dup {
			t.Fatalf("counters %d and %d both → %d", prev, c, id)
		}
		seen[id] = c
	}
	again, err := loadKey(dir, 0)
	if err != nil || again.permute(7) != k.permute(7) || again.floor != 5000 {
		t.Fatalf("the key read back differs: %v", err)
	}
	p, err := Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		id, err := p.Next("User:a")
		if err != nil {
			t.Fatal(err)
		}
		if id>>BrokerShift != 3 || id&(1<<idBits-1) < 5000 {
			t.Fatalf("id %d: wrong broker bits or below the floor", id)
		}
	}
}

// A damaged key file stops the broker with a message saying what to do,
// rather than handing out ids under another key.
func TestProducerIDKeyRefusesGarbage(t *testing.T) {
	for _, content := range []string{"", "zz 0\n", strings.Repeat("ab", 32) + " -1\n", strings.Repeat("ab", 32) + " 0", strings.Repeat("ab", 31) + " 0\n", strings.Repeat("ab", 32) + " 0 1\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, keyFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadKey(dir, 0); err == nil || !strings.Contains(err.Error(), "restore it") {
			t.Errorf("key file %q: %v, want refused naming what to do", content, err)
		}
	}
}
