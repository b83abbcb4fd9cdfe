package auth

// The server side of SCRAM (RFC 5802, RFC 7677), without channel binding,
// as Kafka speaks it in SaslAuthenticate: client-first, server-first,
// client-final, server-final.
//
// Why not xdg-go/scram's server conversation: it refuses a client-final
// nonce that differs from the one the server sent, as the RFC says, and
// librdkafka before 2.6.1 (Debian's kcat 1.7.1 runs 2.0.2) sends the
// client nonce followed by the whole server nonce, which itself starts with
// the client nonce. Kafka up to 3.9 accepted any nonce that ends with the
// server's; so does Tributary, so those clients can log in. The proof still
// covers the message exactly as the client sent it, so nothing but the
// nonce's prefix is relaxed. Credentials (SASLprep, PBKDF2, StoredKey,
// ServerKey) come from xdg-go/scram.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xdg-go/scram"
)

// SCRAM is one SCRAM exchange on a connection.
type SCRAM struct {
	mechanism string
	hash      scram.HashGeneratorFcn
	store     CredentialStore
	guard     *Guard

	step        int // 0: expecting client-first; 1: client-final; 2: done
	user        string
	known       bool // the user has a credential for the mechanism
	cred        scram.StoredCredentials
	gs2Header   string
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // combined nonce sent in server-first
}

// User is the user the exchange logs in as, "" before the client named it.
func (s *SCRAM) User() string { return s.user }

// errSCRAM is an authentication failure; its text is for the broker's
// log, the client only learns that authentication failed.
var errSCRAM = errors.New("SCRAM authentication failed")

func NewSCRAM(mechanism string, store CredentialStore, guard *Guard) *SCRAM {
	return &SCRAM{mechanism: mechanism, hash: SCRAMHash(mechanism), store: store, guard: guard}
}

// step takes the client's next message and returns the server's reply;
// done is set once the client has proved its password.
func (s *SCRAM) Next(msg []byte) (reply []byte, done bool, err error) {
	switch s.step {
	case 0:
		s.step = 1
		r, err := s.first(string(msg))
		return r, false, err
	case 1:
		s.step = 2
		r, err := s.final(string(msg))
		return r, err == nil, err
	}
	return nil, false, fmt.Errorf("%w: SCRAM exchange already finished", errSCRAM)
}

func (s *SCRAM) first(msg string) ([]byte, error) {
	// gs2-header: "n," or "y," (no channel binding), optional a=authzid.
	cb, rest, ok := strings.Cut(msg, ",")
	if !ok || (cb != "n" && cb != "y") {
		return nil, fmt.Errorf("%w: client-first message must start with n, or y, (channel binding is not supported)", errSCRAM)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("%w: client-first message cut short", errSCRAM)
	}
	s.gs2Header = cb + "," + authz + ","
	s.clientFirst = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-first message needs n= and r=", errSCRAM)
	}
	user, err := decodeSaslName(attrs[0][2:])
	if err != nil {
		return nil, err
	}
	clientNonce := attrs[1][2:]
	if clientNonce == "" {
		return nil, fmt.Errorf("%w: empty client nonce", errSCRAM)
	}
	s.user = user
	cred, ok, err := s.store.Lookup(user, s.mechanism)
	if err != nil {
		return nil, err
	}
	s.known = ok
	if !ok {
		// An unknown user gets a made-up salt, the same at every try, and
		// fails at the proof, so that the exchange does not tell which
		// users exist (guard.go).
		cred = s.guard.unknownUser(s.mechanism, user)
	}
	s.cred = cred
	nonce := make([]byte, 24)
	rand.Read(nonce)
	s.nonce = clientNonce + base64.RawURLEncoding.EncodeToString(nonce)
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString([]byte(cred.Salt)) +
		",i=" + strconv.Itoa(cred.Iters)
	return []byte(s.serverFirst), nil
}

func (s *SCRAM) final(msg string) ([]byte, error) {
	withoutProof, proofB64, ok := strings.Cut(msg, ",p=")
	if !ok {
		return nil, fmt.Errorf("%w: client-final message has no proof", errSCRAM)
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-final message needs c= and r=", errSCRAM)
	}
	if attrs[0][2:] != base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return nil, fmt.Errorf("%w: channel binding differs from the client-first message", errSCRAM)
	}
	// RFC 5802 wants the nonce equal to the server's; clients built on
	// librdkafka < 2.6.1 prepend their own nonce once more (see above).
	if nonce := attrs[1][2:]; !strings.HasSuffix(nonce, s.nonce) {
		return nil, fmt.Errorf("%w: client-final nonce does not end with the server nonce", errSCRAM)
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return nil, fmt.Errorf("%w: proof is not base64", errSCRAM)
	}
	// An unknown user's proof is checked too, against a key none
	// matches, so that it fails after the same work as a wrong password.
	authMessage := []byte(s.clientFirst + "," + s.serverFirst + "," + withoutProof)
	clientSig := s.hmac(s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(clientSig))
	for i := range min(len(proof), len(clientSig)) {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	h := s.hash()
	h.Write(clientKey)
	matches := subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) == 1 && len(proof) == len(clientSig)
	switch {
	case !s.known:
		return nil, fmt.Errorf("%w: unknown user %q for %s", errSCRAM, s.user, s.mechanism)
	case !matches:
		return nil, fmt.Errorf("%w: wrong password for user %q", errSCRAM, s.user)
	}
	serverSig := s.hmac(s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}

func (s *SCRAM) hmac(key, data []byte) []byte {
	m := hmac.New(s.hash, key)
	m.Write(data)
	return m.Sum(nil)
}

// decodeSaslName undoes the escaping of ',' and '=' in a SCRAM user name.
func decodeSaslName(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: badly escaped user name", errSCRAM)
		}
		i += 2
	}
	return b.String(), nil
}
