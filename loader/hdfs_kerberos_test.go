package loader_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// Loads into a Kerberized HDFS (a real KDC, privacy on the data transfer,
// two NameNodes behind a nameservice): a run without credentials, one
// with expired tickets, one with a stale keytab, and one whose
// configuration names a NameNode principal the KDC does not know, fail
// at once with a message that says what to do and commit nothing; a run
// with a keytab, then (after a NameNode failover) one with the ticket
// cache kinit filled, each load their records exactly once, read back
// through the same encrypted data transfer.
func TestHDFSKerberos(t *testing.T) {
	testenv.Needs(t, testenv.HDFS, testenv.JVM, testenv.Program("kinit"))
	kinit, err := exec.LookPath("kinit")
	if err != nil {
		t.Fatal("kinit is not installed: run make deps (scripts/install-deps.sh installs krb5-user)")
	}
	env := loadertest.Start(t)
	env.CreateTopic(t, "secured", 2)
	c := testenv.StartKerberizedHDFS(t)
	url := c.Warehouse(t)
	principal := "tributary@" + c.Realm
	base := warehouse.HDFSOptions{HadoopConf: c.ConfDir, Krb5Conf: c.Krb5Conf}
	withKeytab := base
	withKeytab.Principal, withKeytab.Keytab = principal, c.Keytab
	// A ticket cache whose tickets expire in 5 s (the shortest the KDC gives).
	expired := filepath.Join(t.TempDir(), "expired")
	kinitCmd := exec.Command(kinit, "-l", "5s", "-k", "-t", c.Keytab, "-c", "FILE:"+expired, principal)
	kinitCmd.Env = append(os.Environ(), "KRB5_CONFIG="+c.Krb5Conf)
	if out, err := kinitCmd.CombinedOutput(); err != nil {
		t.Fatalf("kinit: %v\n%s", err, out)
	}
	expiredAt := time.Now().Add(6 * time.Second)
	// No ticket cache unless a case makes one.
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-cache"))

	schema := loadertest.Schema(t, "pageview")
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	first := loadertest.PageViews(0, 3000, 2, from, time.Hour)
	env.Produce(t, "secured", schema, first)

	// A configuration naming a NameNode principal the KDC does not know.
	wrongConf := t.TempDir()
	for _, f := range []string{"core-site.xml", "hdfs-site.xml"} {
		b, err := os.ReadFile(filepath.Join(c.ConfDir, f))
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.ReplaceAll(string(b), "hdfs/localhost@", "nn/localhost@"))
		if err := os.WriteFile(filepath.Join(wrongConf, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wrongSPN := withKeytab
	wrongSPN.HadoopConf = wrongConf

	time.Sleep(time.Until(expiredAt)) // the 5 s tickets of the cache expired have run out

	for _, bad := range []struct {
		name string
		o    warehouse.HDFSOptions
		env  string // KRB5CCNAME
		want string
	}{
		{"no credentials", base, "", "the cluster uses Kerberos (hadoop.security.authentication in the Hadoop configuration in " + c.ConfDir + "), but no credentials were given: give --hdfs-principal and --hdfs-keytab, or run kinit first"},
		{"expired tickets", base, "FILE:" + expired, "the tickets in the cache " + expired + " expired at "},
		{"unknown NameNode principal", wrongSPN, "", "the Kerberos login to the NameNode at "},
		{"stale keytab", func() warehouse.HDFSOptions { o := withKeytab; o.Keytab = c.StaleKeytab; return o }(), "",
			"the Kerberos login of " + principal + " with keytab " + c.StaleKeytab + " failed (are its keys current?"},
	} {
		if bad.env != "" {
			t.Setenv("KRB5CCNAME", bad.env)
		}
		cfg := config(env, url, "secured")
		cfg.WarehouseOptions = warehouse.Options{HDFS: bad.o}
		sum, err := loader.Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("%s: %v, want an error saying %q", bad.name, err, bad.want)
		}
		if sum != nil && sum.Committed {
			t.Fatalf("%s: the run committed", bad.name)
		}
		t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-cache"))
	}
	w, err := warehouse.OpenWith(url, warehouse.Options{HDFS: withKeytab})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if infos, err := w.ReadDir(""); err != nil || len(infos) != 0 {
		t.Fatalf("after the refused runs the warehouse holds %d entries (%v), want none", len(infos), err)
	}

	cfg := config(env, url, "secured")
	cfg.WarehouseOptions = warehouse.Options{HDFS: withKeytab}
	if sum := run(t, cfg); sum.Records != int64(len(first)) {
		t.Fatalf("with a keytab: loaded %d records, want %d", sum.Records, len(first))
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, w), "secured", first)

	// The client logs in to the other NameNode after a failover.
	if _, err := c.Failover(); err != nil {
		t.Fatal(err)
	}
	// kinit, as a user would, then a run with no keytab.
	cache := filepath.Join(t.TempDir(), "krb5cc")
	cmd := exec.Command(kinit, "-k", "-t", c.Keytab, "-c", "FILE:"+cache, principal)
	cmd.Env = append(os.Environ(), "KRB5_CONFIG="+c.Krb5Conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kinit: %v\n%s", err, out)
	}
	t.Setenv("KRB5CCNAME", "FILE:"+cache)
	second := loadertest.PageViews(len(first), 2000, 2, from, time.Hour)
	env.Produce(t, "secured", schema, second)
	cfg.WarehouseOptions = warehouse.Options{HDFS: base}
	if sum := run(t, cfg); sum.Records != int64(len(second)) {
		t.Fatalf("with the ticket cache: loaded %d records, want %d", sum.Records, len(second))
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, w), "secured", append(first, second...))
}
