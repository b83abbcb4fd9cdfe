package warehouse_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// A warehouse on a nameservice (hdfs://tributary-ns/...) of two NameNodes
// follows failovers back and forth, one of them a crash of the active
// NameNode under a stream of calls: every operation after one succeeds,
// files written before it read back, and the configuration's fs.defaultFS
// (hdfs:///path) reaches the same cluster.
func TestHDFSFollowsFailover(t *testing.T) {
	c := testenv.StartHDFSHA(t)
	url := c.Warehouse(t)
	opts := warehouse.Options{HDFS: warehouse.HDFSOptions{HadoopConf: c.ConfDir}}
	w, err := warehouse.OpenWith(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if want := url; w.String() != want {
		t.Fatalf("String() = %q, want the nameservice URL %q", w.String(), want)
	}
	for i := range 3 {
		name := fmt.Sprintf("f/%d", i)
		if err := warehouse.WriteFile(w, name, []byte(name)); err != nil {
			t.Fatalf("write before failover %d: %v", i, err)
		}
		if i == 1 {
			crashUnderReaders(t, c, w, name)
		} else if _, err := c.Failover(); err != nil {
			t.Fatal(err)
		}
		// A writer racing the failover's aftermath: each file completes.
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for j := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := fmt.Sprintf("g/%d-%d", i, j)
				errs <- warehouse.WriteFile(w, n, []byte(n))
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("write after failover %d: %v", i, err)
			}
		}
		if err := w.Rename(name, name+".moved"); err != nil {
			t.Fatalf("rename after failover %d: %v", i, err)
		}
	}
	for i := range 3 {
		name := fmt.Sprintf("f/%d", i)
		if got, err := warehouse.ReadFile(w, name+".moved"); err != nil || string(got) != name {
			t.Fatalf("%s read back %q, %v", name, got, err)
		}
	}
	infos, err := w.ReadDir("g")
	if err != nil || len(infos) != 12 {
		t.Fatalf("ReadDir(g): %d files, %v; want 12", len(infos), err)
	}

	// hdfs:///path: the nameservice comes from fs.defaultFS.
	path := strings.TrimPrefix(url, "hdfs://"+c.Nameservice)
	d, err := warehouse.OpenWith("hdfs://"+path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := warehouse.ReadFile(d, "f/0.moved"); err != nil || string(got) != "f/0" {
		t.Fatalf("through fs.defaultFS: %q, %v", got, err)
	}
	// And from HADOOP_CONF_DIR when no directory is given.
	t.Setenv("HADOOP_CONF_DIR", c.ConfDir)
	e, err := warehouse.Open(url)
	if err != nil {
		t.Fatalf("with HADOOP_CONF_DIR: %v", err)
	}
	e.Close()
}

// Without the configuration that defines it, a nameservice is an error
// that says where the configuration was looked for, not a DNS failure
// minutes later.
func TestHDFSConfigurationErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, props string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("<configuration>"+props+"</configuration>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prop := func(k, v string) string {
		return "<property><name>" + k + "</name><value>" + v + "</value></property>"
	}
	write("core-site.xml", prop("fs.defaultFS", "file:///tmp"))
	write("hdfs-site.xml", prop("dfs.nameservices", "prod-ns")+prop("dfs.ha.namenodes.prod-ns", "nn1,nn2")+
		prop("dfs.namenode.rpc-address.prod-ns.nn1", "127.0.0.1:1"))
	t.Setenv("HADOOP_CONF_DIR", "")
	t.Setenv("HADOOP_HOME", "")
	for _, c := range []struct {
		url, conf, want string
	}{
		{"hdfs:///data", dir, "is not an hdfs:// URL"},
		{"hdfs:///data", "", "sets no fs.defaultFS"},
		{"hdfs://prod-ns/data", dir, "sets no dfs.namenode.rpc-address.prod-ns.nn2"},
		{"hdfs://x/data", filepath.Join(dir, "missing"), "Hadoop configuration directory"},
		{"hdfs://no-such-ns.invalid/data", dir, "no host no-such-ns.invalid, and it is not a nameservice of the Hadoop configuration in " + dir},
		{"hdfs://no-such-ns.invalid/data", "", "and it is not a nameservice of no Hadoop configuration (give --hadoop-conf or set HADOOP_CONF_DIR)"},
		{"hdfs://127.0.0.1:1/data", "", "data transfer protection \"secret\""},
	} {
		o := warehouse.HDFSOptions{HadoopConf: c.conf}
		if strings.Contains(c.want, "secret") {
			o.DataTransferProtection = "secret"
		}
		_, err := warehouse.OpenWith(c.url, warehouse.Options{HDFS: o})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with conf %q: %v, want an error containing %q", c.url, c.conf, err, c.want)
		}
	}
}

// While no NameNode is active (a failover taking seconds), namespace
// calls, a file's first block and its completion wait for one, for up to
// FailoverWait, and then succeed: nothing of the file is lost.
func TestHDFSWaitsForAnActiveNameNode(t *testing.T) {
	c := testenv.StartHDFSHA(t)
	w, err := warehouse.OpenWith(c.Warehouse(t), warehouse.Options{HDFS: warehouse.HDFSOptions{HadoopConf: c.ConfDir}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data := []byte(strings.Repeat("tributary ", 1000))
	// A file whose block is written, to be completed while none is active.
	done, err := w.Create("done")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := done.Write(data); err != nil {
		t.Fatal(err)
	}
	// A file created, its first block still to be allocated.
	fresh, err := w.Create("fresh")
	if err != nil {
		t.Fatal(err)
	}

	if err := c.Standby(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, op := range []func() error{
		func() error { return done.Close() },
		func() error {
			if _, err := fresh.Write(data); err != nil {
				return fmt.Errorf("first block: %w", err)
			}
			return fresh.Close()
		},
		func() error { return w.MkdirAll("made/while/standby") },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- op() }()
	}
	time.Sleep(3 * time.Second) // every operation is waiting now
	if _, err := c.Activate(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("an operation begun while no NameNode was active: %v", err)
		}
	}
	for _, name := range []string{"done", "fresh"} {
		if got, err := warehouse.ReadFile(w, name); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes back (%v), want %d", name, len(got), err, len(data))
		}
	}
	if ok, err := warehouse.Exists(w, "made/while/standby"); !ok {
		t.Fatalf("the directory made while no NameNode was active is missing (%v)", err)
	}
}

// crashUnderReaders crashes the active NameNode while calls that may be
// repeated (reads, mkdir, delete) run without a pause: none of them fails,
// each carried over to the other NameNode.
func crashUnderReaders(t *testing.T, c *testenv.HDFSCluster, w warehouse.FS, file string) {
	t.Helper()
	stop := make(chan struct{})
	errs := make(chan error, 1)
	calls := 0
	go func() {
		defer close(errs)
		for {
			select {
			case <-stop:
				return
			default:
			}
			calls++
			dir := fmt.Sprintf("crash/%d", calls%10)
			if err := w.MkdirAll(dir); err != nil {
				errs <- fmt.Errorf("mkdir: %w", err)
				return
			}
			if _, err := w.ReadDir(dir); err != nil {
				errs <- fmt.Errorf("readdir: %w", err)
				return
			}
			if err := w.Remove(dir + "/missing"); err != nil {
				errs <- fmt.Errorf("remove: %w", err)
				return
			}
			if _, err := warehouse.ReadFile(w, file); err != nil {
				errs <- fmt.Errorf("read: %w", err)
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	_, cerr := c.Crash()
	time.Sleep(500 * time.Millisecond)
	close(stop)
	if cerr != nil {
		t.Fatal(cerr)
	}
	if err := <-errs; err != nil {
		t.Fatalf("a call made while the active NameNode crashed (call %d): %v", calls, err)
	}
}
