package broker_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/broker"
)

// TestCredentialFileKeepsNoPassword: the file holds salted keys only, is
// private to its owner, and set, list and delete do what they say.
func TestCredentialFileKeepsNoPassword(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials.json")
	f := broker.OpenCredentialFile(path)
	if err := f.Set("carol", "SCRAM-SHA-256", "carol-password", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("carol", "SCRAM-SHA-512", "carol-password", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("dave", "SCRAM-SHA-512", "x", 100); err == nil {
		t.Fatal("100 iterations were accepted; the minimum is 4096")
	}
	if err := f.Set("dave", "PLAIN", "x", broker.DefaultSCRAMIterations); err == nil {
		t.Fatal("a PLAIN credential was accepted; only SCRAM keys are stored")
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("carol-password")) {
		t.Fatal("the credential file contains the password")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("credential file mode %v, want 0600", st.Mode().Perm())
	}
	a, _, _ := f.Lookup("carol", "SCRAM-SHA-512")
	if err := f.Set("carol", "SCRAM-SHA-512", "carol-password", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	if b, _, _ := broker.OpenCredentialFile(path).Lookup("carol", "SCRAM-SHA-512"); bytes.Equal(a.StoredKey, b.StoredKey) {
		t.Fatal("setting the same password twice gave the same key: salts are not fresh")
	}

	if err := f.Delete("carol", "SCRAM-SHA-256"); err != nil {
		t.Fatal(err)
	}
	list, err := f.List()
	if err != nil || len(list) != 1 || list[0].User != "carol" || len(list[0].Mechanisms) != 1 {
		t.Fatalf("after deleting carol's SCRAM-SHA-256: %+v, %v", list, err)
	}
	if err := f.Delete("carol", ""); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := f.Lookup("carol", "SCRAM-SHA-512"); ok {
		t.Fatal("carol is still there after delete")
	}
	if err := f.Delete("carol", ""); err == nil {
		t.Fatal("deleting an unknown user succeeded")
	}
}
