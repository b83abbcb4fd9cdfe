package transfer

// Tributary's test of its patch (TRIBUTARY.md): a read served partly from
// one SASL frame and partly from the next returns the bytes of both.

import (
	"bytes"
	"io"
	"net"
	"testing"
)

func TestDigestMD5ReadSpanningFramesReturnsEveryByte(t *testing.T) {
	kic, kis := []byte("client-integrity"), []byte("server-integrity")
	kcc, kcs := []byte("client-confidential"), []byte("server-confidential")
	for name, pair := range map[string]func(client, server net.Conn) (r, w digestMD5Conn){
		"integrity": func(c, s net.Conn) (digestMD5Conn, digestMD5Conn) {
			return newDigestMD5IntegrityConn(c, kic, kis), newDigestMD5IntegrityConn(s, kis, kic)
		},
		"privacy": func(c, s net.Conn) (digestMD5Conn, digestMD5Conn) {
			return newDigestMD5PrivacyConn(c, kic, kis, kcc, kcs), newDigestMD5PrivacyConn(s, kis, kic, kcs, kcc)
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, s := net.Pipe()
			r, w := pair(c, s)
			frames := []string{"hello", "world", "and more"}
			go func() {
				for _, f := range frames {
					w.Write([]byte(f))
				}
				w.Close()
			}()
			// 3 bytes of the first frame, then reads of 7: each but the
			// last takes the rest of a frame and the start of the next.
			var got bytes.Buffer
			for size := 3; ; size = 7 {
				b := make([]byte, size)
				n, err := r.Read(b)
				got.Write(b[:n])
				if err != nil {
					if err != io.EOF && got.Len() < 18 {
						t.Fatal(err)
					}
					break
				}
			}
			if want := "helloworldand more"; got.String() != want {
				t.Fatalf("read %q, want %q", got.String(), want)
			}
		})
	}
}
