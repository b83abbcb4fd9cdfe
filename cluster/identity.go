package cluster

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// TopicID is a topic's identity, as Kafka's Uuid: 16 random bytes, written
// as unpadded URL-safe base64 like Kafka's tools print it. It tells a topic
// apart from an earlier one of the same name, which clients rely on to
// notice a topic deleted and re-created.
type TopicID [16]byte

// NewTopicID returns a random version-4 UUID that is never zero.
func NewTopicID() TopicID {
	var id TopicID
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

// IsZero reports an unassigned id.
func (id TopicID) IsZero() bool { return id == TopicID{} }

func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

func (id *TopicID) UnmarshalText(b []byte) error {
	n, err := base64.RawURLEncoding.Decode(id[:], b)
	if err != nil || n != len(id) {
		return fmt.Errorf("topic id %q is not 16 bytes of unpadded URL-safe base64", b)
	}
	return nil
}

// NewClusterID returns a random cluster id in Kafka's format (a random
// UUID as unpadded URL-safe base64).
func NewClusterID() string { return NewTopicID().String() }

// metaPropertiesFile holds a standalone broker's cluster id, named and
// formatted as Kafka's own (key=value lines), so it is found where an
// operator coming from Kafka looks for it.
const metaPropertiesFile = "meta.properties"

// loadOrCreateClusterID reads the cluster id from dir/meta.properties, or
// creates the file with a new random id. The id must not change over the
// life of a data directory: clients and tools key on it.
func loadOrCreateClusterID(dir string) (string, error) {
	path := filepath.Join(dir, metaPropertiesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		id := NewClusterID()
		content := "# Written once by Tributary; the cluster id must not change.\nversion=0\ncluster.id=" + id + "\n"
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := atomicfile.Write(path, []byte(content)); err != nil {
			return "", fmt.Errorf("writing %s: %w", path, err)
		}
		return id, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && strings.TrimSpace(k) == "cluster.id" && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s has no cluster.id line; restore it from a backup (clients key on the cluster id)", path)
}
