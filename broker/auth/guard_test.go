package auth

import (
	"strings"
	"testing"
)

// A PLAIN login as a name that is no user's derives the password's keys
// once, as a wrong password does; a SCRAM exchange for it offers the same
// salt at every try, with the default iterations, as a real user's would.
func TestLoginUnknownUserCostsLikeWrongPassword(t *testing.T) {
	dir := t.TempDir()
	creds := OpenCredentialFile(CredentialFilePath(dir))
	if err := creds.Set("alice", MechSCRAM512, "alice-secret", DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	g := NewGuard()
	for _, who := range []string{"alice", "mallory"} {
		before := g.Derivations.Load()
		if _, err := g.PlainLogin(creds, []byte("\x00"+who+"\x00wrong")); err == nil {
			t.Fatalf("PLAIN %s/wrong accepted", who)
		}
		if n := g.Derivations.Load() - before; n != 1 {
			t.Fatalf("PLAIN %s/wrong: %d key derivations, want 1 (the same for every failed login)", who, n)
		}
	}

	serverFirst := func(user string) string {
		s := NewSCRAM(MechSCRAM512, creds, g)
		reply, _, err := s.Next([]byte("n,,n=" + user + ",r=clientnonce"))
		if err != nil {
			t.Fatal(err)
		}
		_, saltAndIters, _ := strings.Cut(string(reply), ",s=")
		return saltAndIters
	}
	first, again := serverFirst("mallory"), serverFirst("mallory")
	if first != again {
		t.Fatalf("an unknown user is offered %q, then %q: a real user's salt does not change", first, again)
	}
	if !strings.HasSuffix(first, ",i=4096") || !strings.HasSuffix(serverFirst("alice"), ",i=4096") {
		t.Fatalf("unknown user offered %q, alice %q: want the same iterations", first, serverFirst("alice"))
	}
	if serverFirst("eve") == first {
		t.Fatal("two unknown users are offered the same salt")
	}
}
