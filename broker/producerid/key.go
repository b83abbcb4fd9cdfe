package producerid

// Unguessable producer ids. Ids used to be a counter, so a client could
// guess the id the next producer would get and write that producer's batch
// 0 first: the real batch 0 was then acknowledged as a duplicate at the
// forged record's offset, and its record lost. Ids are now the counter
// passed through a keyed permutation of 40 bits (a four-round Feistel
// network over HMAC-SHA256), so they stay unique (a permutation of a
// never-reused counter) but reveal nothing about the next one. The key is
// `producer-id-key` in the data directory, written once with 0600
// permissions; it never leaves the broker.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

const (
	keyFile     = "producer-id-key"
	idBits      = BrokerShift // the permuted part of an id
	feistelHalf = idBits / 2
	feistelMask = 1<<feistelHalf - 1
)

// key permutes the counter part of producer ids.
type key struct {
	key []byte
	// floor: counters below it were handed out unpermuted by a broker of
	// an older version, so a permuted id below it is skipped (it could be
	// one of theirs).
	floor int64
}

// loadKey reads the key, or makes one the first time; used is
// the counter the id block file had reached (ids an older version may have
// handed out as they were).
func loadKey(dir string, used int64) (*key, error) {
	path := filepath.Join(dir, keyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		k := &key{key: make([]byte, 32), floor: used}
		rand.Read(k.key)
		if err := atomicfile.Write(path, []byte(k.encode()), atomicfile.Perm(0o600)); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		return k, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	k, err := decodeKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): restore it from a backup; removing it is safe only once no producer of this broker is alive", path, err)
	}
	return k, nil
}

func (k *key) encode() string {
	return fmt.Sprintf("%s %d\n", hex.EncodeToString(k.key), k.floor)
}

// decodeKey reads "HEXKEY FLOOR\n", refusing anything else.
func decodeKey(s string) (*key, error) {
	fields := strings.Fields(s)
	if len(fields) != 2 || !strings.HasSuffix(s, "\n") {
		return nil, errors.New("want one line: a 64-digit hex key and the id floor")
	}
	raw, err := hex.DecodeString(fields[0])
	if err != nil || len(raw) != 32 {
		return nil, errors.New("the key is not 64 hex digits")
	}
	floor, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || floor < 0 || floor >= 1<<idBits {
		return nil, fmt.Errorf("the id floor %q is not a counter value", fields[1])
	}
	return &key{key: raw, floor: floor}, nil
}

// permute maps a counter value below 2^40 to a distinct value below 2^40.
func (k *key) permute(c int64) int64 {
	l, r := uint64(c)>>feistelHalf&feistelMask, uint64(c)&feistelMask
	for round := range 4 {
		l, r = r, l^k.round(byte(round), r)
	}
	return int64(l<<feistelHalf | r)
}

func (k *key) round(i byte, half uint64) uint64 {
	m := hmac.New(sha256.New, k.key)
	var in [9]byte
	in[0] = i
	binary.BigEndian.PutUint64(in[1:], half)
	m.Write(in[:])
	return binary.BigEndian.Uint64(m.Sum(nil)) & feistelMask
}
