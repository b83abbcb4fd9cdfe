package jobs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/jobs"
	"github.com/tributary-io/tributary/loader/warehouse"
)

func TestParseExampleSpecs(t *testing.T) {
	specs, err := jobs.LoadDir("../testdata/jobs")
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("%d specs in testdata/jobs, want 2", len(specs))
	}
	h, p := specs[0], specs[1]
	if h.Name != "hourly-services" || h.Topics.Regex != "service.*" || len(h.Brokers) != 1 {
		t.Errorf("hourly-services.yaml: %+v", h)
	}
	if hc := h.LoadConfig(); hc.Audit == nil || hc.CompleteBy != "" || hc.CompleteThreshold != 99.9 || hc.CompleteMaxWait != 2*time.Hour {
		t.Errorf("hourly-services.yaml: audit %v, complete by %q, threshold %v, max wait %v; want audit, the default (audit), 99.9, 2h",
			hc.Audit, hc.CompleteBy, hc.CompleteThreshold, hc.CompleteMaxWait)
	}
	cfg := p.LoadConfig()
	if p.Name != "pageviews" || strings.Join(cfg.Topics, ",") != "pageviews,clicks" ||
		cfg.MaxRecords != 1000000 || cfg.MaxDuration != 10*time.Minute || cfg.MaxErrors != 100 ||
		cfg.FileMaxBytes != 128<<20 || cfg.Codec != "deflate" || cfg.DeflateLevel != 6 || cfg.SuccessGrace != 10*time.Minute ||
		cfg.OnDataLoss != "earliest" || cfg.LockTTL != time.Minute || cfg.Warehouse != "hdfs://127.0.0.1:8020/data" ||
		cfg.Audit != nil {
		t.Errorf("pageviews.yaml gives %+v", cfg)
	}
}

// Each file in testdata/jobs/bad starts with "# want: <text>": the error
// must contain it, so a mistake is reported with its file, line and field.
func TestSpecErrors(t *testing.T) {
	files, _ := filepath.Glob("../testdata/jobs/bad/*.yaml")
	if len(files) == 0 {
		t.Fatal("no test specs")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("%s does not start with # want:", f)
			}
			_, err = jobs.ParseSpec(filepath.Base(f), data)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error:\n  %v\nwant it to contain:\n  %s", err, want)
			}
		})
	}
}

func TestDuplicateJobNames(t *testing.T) {
	dir := t.TempDir()
	spec := "name: same\nbrokers: a:1\nregistry: http://r\ntopics: [t]\nwarehouse: file:///w\nschedule: every 1m\n"
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(spec), 0o644)
	os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(spec), 0o644)
	_, err := jobs.LoadDir(dir)
	if err == nil || !strings.Contains(err.Error(), `job "same" is also defined in`) {
		t.Fatalf("two specs named alike: %v", err)
	}
}

func TestSchedules(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04:05", s, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		spec, from, next string
	}{
		{"every 15m", "2024-03-10 12:07:00", "2024-03-10 12:15:00"},
		{"every 15m", "2024-03-10 12:15:00", "2024-03-10 12:30:00"},
		{"every 1h", "2024-03-10 12:59:59", "2024-03-10 13:00:00"},
		{"*/15 * * * *", "2024-03-10 12:07:00", "2024-03-10 12:15:00"},
		{"5 * * * *", "2024-03-10 12:07:00", "2024-03-10 13:05:00"},
		{"@hourly", "2024-03-10 12:07:00", "2024-03-10 13:00:00"},
		{"0 2 * * 1", "2024-03-10 12:07:00", "2024-03-11 02:00:00"}, // Monday 02:00
	}
	for _, c := range cases {
		s, err := jobs.ParseSchedule(c.spec)
		if err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		if got := s.Next(at(c.from)); !got.Equal(at(c.next)) {
			t.Errorf("%q after %s: %s, want %s", c.spec, c.from, got, c.next)
		}
	}
	for _, bad := range []string{"every", "every 0s", "every -5m", "every 15 minutes", "* * *", "61 * * * *", "sometimes"} {
		if _, err := jobs.ParseSchedule(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// FuzzParseSpec: a spec file is user input; whatever it holds, parsing
// returns a spec or an error, never panics.
func FuzzParseSpec(f *testing.F) {
	files, _ := filepath.Glob("../testdata/jobs/*.yaml")
	bad, _ := filepath.Glob("../testdata/jobs/bad/*.yaml")
	for _, p := range append(files, bad...) {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := jobs.ParseSpec("fuzz.yaml", data)
		if err == nil && (s.Sched == nil || s.Name == "") {
			t.Fatalf("accepted a spec without schedule or name: %+v", s)
		}
	})
}

// audit: true turns on the warehouse tier's counts, with the job's own
// brokers and registry; it is off by default and must be a boolean.
func TestSpecAudit(t *testing.T) {
	base := "brokers: [127.0.0.1:9092]\nregistry: http://127.0.0.1:8081\ntopics: [pageviews]\nwarehouse: file:///tmp/w\nschedule: every 15m\n"
	for _, tc := range []struct {
		extra string
		on    bool
		err   string
	}{
		{"", false, ""},
		{"audit: false\n", false, ""},
		{"audit: true\n", true, ""},
		{"audit: sometimes\n", false, "field audit"},
	} {
		s, err := jobs.ParseSpec("a.yaml", []byte(base+tc.extra))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one about %s", tc.extra, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.extra, err)
		}
		if cfg := s.LoadConfig(); (cfg.Audit != nil) != tc.on {
			t.Errorf("%q: audit config %+v, want on=%v", tc.extra, cfg.Audit, tc.on)
		}
	}
}

// header_field names the events' header field for the loader; left out,
// the loader uses its default ("header").
func TestSpecHeaderField(t *testing.T) {
	base := "brokers: [127.0.0.1:9092]\nregistry: http://127.0.0.1:8081\ntopics: [pageviews]\nwarehouse: file:///tmp/w\nschedule: every 15m\naudit: true\n"
	for extra, want := range map[string]string{"": "", "header_field: meta\n": "meta"} {
		s, err := jobs.ParseSpec("a.yaml", []byte(base+extra))
		if err != nil {
			t.Fatalf("%q: %v", extra, err)
		}
		if got := s.LoadConfig().HeaderField; got != want {
			t.Errorf("%q: HeaderField %q, want %q", extra, got, want)
		}
	}
}

// A spec's security files are found beside the spec, and reach the
// loader's configuration.
func TestSpecSecurity(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "loader.pw"), []byte("pw\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "registry.auth"), []byte("loader:pw\n"), 0o600)
	spec := `brokers: [127.0.0.1:9093]
registry: https://127.0.0.1:8081
topics: [pageviews]
warehouse: file:///tmp/w
schedule: every 15m
security:
  sasl_mechanism: SCRAM-SHA-512
  sasl_user: loader
  sasl_password_file: loader.pw
registry_security:
  user_info_file: registry.auth
`
	s, err := jobs.ParseSpec(filepath.Join(dir, "pageviews.yaml"), []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.LoadConfig()
	if cfg.Security.SASLPasswordFile != filepath.Join(dir, "loader.pw") || cfg.Security.SASLUser != "loader" ||
		cfg.RegistrySecurity.UserInfoFile != filepath.Join(dir, "registry.auth") {
		t.Fatalf("loader security %+v, registry %+v", cfg.Security, cfg.RegistrySecurity)
	}
}

// A spec's hdfs section reaches the loader's configuration, its files
// found beside the spec.
func TestSpecHDFS(t *testing.T) {
	dir := t.TempDir()
	spec := `brokers: [127.0.0.1:9093]
registry: http://127.0.0.1:8081
topics: [pageviews]
warehouse: hdfs://prod-ns/data
schedule: every 15m
hdfs:
  hadoop_conf: conf
  principal: etl@EXAMPLE.COM
  keytab: etl.keytab
  krb5_conf: /etc/krb5.conf
  data_transfer_protection: privacy
`
	s, err := jobs.ParseSpec(filepath.Join(dir, "pageviews.yaml"), []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	got := s.LoadConfig().WarehouseOptions.HDFS
	if got.HadoopConf != filepath.Join(dir, "conf") || got.Keytab != filepath.Join(dir, "etl.keytab") ||
		got.Krb5Conf != "/etc/krb5.conf" || got.Principal != "etl@EXAMPLE.COM" || got.DataTransferProtection != "privacy" {
		t.Fatalf("loader HDFS options %+v", got)
	}
}

// The job spec recipe for HDFS in docs/pipeline.md (the yaml block after
// the marker <!-- hdfs-recipe:job-spec -->) is a valid spec once given the
// fields it leaves out, and means what the page says.
func TestDocsHDFSJobSpec(t *testing.T) {
	doc, err := os.ReadFile("../docs/pipeline.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- hdfs-recipe:job-spec -->\n```yaml\n")
	block, _, closed := strings.Cut(after, "```")
	if !ok || !closed {
		t.Fatal("docs/pipeline.md has no yaml block after <!-- hdfs-recipe:job-spec -->")
	}
	dir := t.TempDir()
	s, err := jobs.ParseSpec(filepath.Join(dir, "etl.yaml"), []byte("brokers: [127.0.0.1:9092]\nregistry: http://127.0.0.1:8081\ntopics: [pageviews]\nschedule: every 15m\n"+block))
	if err != nil {
		t.Fatalf("the job spec of docs/pipeline.md: %v\n%s", err, block)
	}
	o := s.LoadConfig().WarehouseOptions.HDFS
	if s.Warehouse != "hdfs://prod-ns/warehouse" || o.HadoopConf != "/etc/hadoop/conf" || o.Principal != "etl@EXAMPLE.COM" ||
		o.Keytab != filepath.Join(dir, "etl.keytab") || o.DataTransferProtection != "privacy" {
		t.Fatalf("the job spec of docs/pipeline.md gives warehouse %s, %+v", s.Warehouse, o)
	}
}

// files.format parquet reaches the load, with Parquet's default codec left
// to the loader and a Parquet codec accepted.
func TestSpecParquet(t *testing.T) {
	s, err := jobs.ParseSpec("pq.yaml", []byte("brokers: [127.0.0.1:9092]\nregistry: http://127.0.0.1:8081\ntopics: [pageviews]\nwarehouse: file:///tmp/w\nschedule: every 15m\nfiles:\n  format: parquet\n  codec: zstd\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.LoadConfig(); cfg.Format != "parquet" || cfg.Codec != "zstd" {
		t.Errorf("format %q codec %q, want parquet and zstd", cfg.Format, cfg.Codec)
	}
}

// An s3: section reaches the load's warehouse options, and one beside a
// warehouse elsewhere is refused.
func TestSpecS3(t *testing.T) {
	spec := `brokers: [127.0.0.1:9093]
registry: http://127.0.0.1:8081
topics: [pageviews]
warehouse: s3://analytics/warehouse
schedule: every 15m
s3:
  endpoint: https://objects.example.com:9000
  path_style: true
  region: eu-west-1
`
	s, err := jobs.ParseSpec(filepath.Join(t.TempDir(), "pageviews.yaml"), []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.LoadConfig().WarehouseOptions.S3; got != (warehouse.S3Options{Endpoint: "https://objects.example.com:9000", PathStyle: true, Region: "eu-west-1"}) {
		t.Fatalf("loader S3 options %+v", got)
	}
	_, err = jobs.ParseSpec(filepath.Join(t.TempDir(), "x.yaml"), []byte(strings.Replace(spec, "s3://analytics/warehouse", "file:///var/warehouse", 1)))
	if err == nil || !strings.Contains(err.Error(), "not in S3") {
		t.Fatalf("an s3: section with a local warehouse: %v", err)
	}
}

// table: loads into Iceberg tables, in Parquet; another format, a
// namespace that is not one directory name, and files.compact are refused
// naming the key.
func TestSpecTable(t *testing.T) {
	const base = "brokers: [127.0.0.1:9092]\nregistry: http://127.0.0.1:8081\ntopics: [pageviews]\nwarehouse: file:///tmp/w\nschedule: every 15m\n"
	s, err := jobs.ParseSpec("ice.yaml", []byte(base+"table: db\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.LoadConfig(); cfg.Table != "db" || cfg.Format != "parquet" {
		t.Errorf("table %q format %q, want db and parquet", cfg.Table, cfg.Format)
	}
	s, err = jobs.ParseSpec("ice.yaml", []byte(base+"table: db\ncatalog:\n  type: rest\n  uri: http://catalog:8181\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.LoadConfig().Catalog; c.Type != "rest" || c.URI != "http://catalog:8181" {
		t.Errorf("catalog %+v, want the REST catalog at http://catalog:8181", c)
	}
	s, err = jobs.ParseSpec("ice.yaml", []byte(base+"table: db\nexpire:\n  older_than: 120h\n  retain_last: 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e := s.LoadConfig().Expire; e == nil || e.OlderThan != 120*time.Hour || e.RetainLast != 10 {
		t.Errorf("expire %+v, want snapshots older than 120h, the last 10 kept", e)
	}
	for body, key := range map[string]string{
		"table: db\ncatalog:\n  type: rest\n":                     "catalog",
		"table: db\nexpire: {}\n":                                 "expire",
		"expire:\n  retain_last: 3\n":                             "expire",
		"table: db\ncatalog:\n  type: glue\n":                     "catalog",
		"table: db\nfiles:\n  format: avro\n":                     "files.format",
		"table: a/b\n":                                            "table",
		"table: _db\n":                                            "table",
		"table: db\nfiles:\n  format: parquet\n  compact: true\n": "files.compact",
	} {
		_, err := jobs.ParseSpec("ice.yaml", []byte(base+body))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", body, err, key)
		}
	}
}
