package auth

import (
	"path/filepath"
	"testing"
)

// FuzzSCRAMExchange feeds arbitrary client-first and client-final messages
// to the server side of SCRAM: it must answer or refuse, never panic, and
// never accept a proof it did not verify.
func FuzzSCRAMExchange(f *testing.F) {
	f.Add([]byte("n,,n=user,r=abc"), []byte("c=biws,r=abcXYZ,p=AAAA"))
	f.Add([]byte("y,a=user,n=us=2Cer,r=x"), []byte("c=eSxhPXVzZXIs,r=x,p="))
	f.Add([]byte("p=tls-unique,,n=u,r=n"), []byte(""))
	f.Add([]byte("n,,n=bad=,r=z"), []byte("c=,r=,p=,"))
	store := OpenCredentialFile(filepath.Join(f.TempDir(), "credentials.json"))
	if err := store.Set("user", MechSCRAM256, "secret", DefaultSCRAMIterations); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := NewSCRAM(MechSCRAM256, store, NewGuard())
		if _, _, err := s.Next(first); err != nil {
			return
		}
		if _, done, err := s.Next(final); done || err == nil {
			t.Fatalf("a made-up client-final %q was accepted", final)
		}
	})
}
