package warehouse_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/warehouse"
)

func kerberized(t *testing.T) (*testenv.HDFSCluster, warehouse.Options) {
	return keytabOptions(testenv.StartKerberizedHDFS(t))
}

func keytabOptions(c *testenv.HDFSCluster) (*testenv.HDFSCluster, warehouse.Options) {
	return c, warehouse.Options{HDFS: warehouse.HDFSOptions{
		HadoopConf: c.ConfDir, Krb5Conf: c.Krb5Conf,
		Principal: "tributary@" + c.Realm, Keytab: c.Keytab,
	}}
}

// Under privacy (every DataNode exchange encrypted in SASL frames), files
// of every size read back byte for byte, whatever the reader's buffer size:
// a read that spans two frames returns the bytes of both.
func TestHDFSKerberosPrivacy(t *testing.T) {
	readBackByteForByte(t, testenv.StartKerberizedHDFS(t))
}

// The same under integrity (every DataNode exchange signed in SASL
// frames, not encrypted).
func TestHDFSKerberosIntegrity(t *testing.T) {
	readBackByteForByte(t, testenv.StartKerberizedHDFSIntegrity(t))
}

func readBackByteForByte(t *testing.T, cluster *testenv.HDFSCluster) {
	c, opts := keytabOptions(cluster)
	w, err := warehouse.OpenWith(c.Warehouse(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 511, 64 << 10, 3<<20 + 17} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("f-%d", size)
		if err := warehouse.WriteFile(w, name, data); err != nil {
			t.Fatalf("writing %d bytes: %v", size, err)
		}
		for _, bufSize := range []int{1000, 4096, 100_000} {
			r, err := w.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			buf := make([]byte, bufSize)
			for {
				n, err := r.Read(buf)
				got.Write(buf[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("reading %s with a %d-byte buffer after %d bytes: %v", name, bufSize, got.Len(), err)
				}
			}
			r.Close()
			if !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("%s read with a %d-byte buffer: %d bytes back, differing from what was written", name, bufSize, got.Len())
			}
		}
	}
}

// Several writers on one client at once, each file's first block asking
// the client for the cluster's defaults and data encryption key: under
// -race, no data race, and every file complete.
func TestHDFSConcurrentWriters(t *testing.T) {
	c, opts := kerberized(t)
	url := c.Warehouse(t)
	for round := range 3 {
		w, err := warehouse.OpenWith(url, opts) // a new client: nothing cached yet
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("r%d/f%d", round, i)
				errs <- warehouse.WriteFile(w, name, []byte(name))
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for i := range 8 {
			name := fmt.Sprintf("r%d/f%d", round, i)
			if got, err := warehouse.ReadFile(w, name); err != nil || string(got) != name {
				t.Fatalf("%s read back %q, %v", name, got, err)
			}
		}
		w.Close()
	}
}
