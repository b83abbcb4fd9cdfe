package jobs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tributary-io/tributary/internal/clientsec"
	"github.com/tributary-io/tributary/loader"
)

// Spec is a load job, read from a YAML file:
//
//	name: pageviews                 # default: the file name without .yaml
//	brokers: [127.0.0.1:9092]       # a list, or "host:port,host:port"
//	registry: http://127.0.0.1:8081
//	topics: [pageviews, clicks]     # a list of names, or a regular expression: "page.*|clicks"
//	warehouse: hdfs://127.0.0.1:8020/data   # or file:///var/warehouse
//	schedule: every 15m             # or a cron expression: "*/15 * * * *", "@hourly"
//	limits:
//	  max_records: 1000000          # per run; 0: up to the high watermark
//	  max_duration: 10m
//	  max_errors: 100               # undecodable records before the run fails; -1: no limit
//	files:
//	  max_bytes: 128MiB
//	  max_records: 5000000
//	  codec: deflate                # null, deflate, snappy
//	success_grace: 10m              # _SUCCESS an hour this long after it ends
//	on_data_loss: earliest          # earliest, latest or fail
//	start_at: earliest              # where a new partition starts: earliest or latest
//	lock_ttl: 1m
//	audit: true                     # publish each committed run's counts as the audit's "warehouse" tier
//	header_field: header            # top-level field holding the events' header (its time files and counts them)
//	retry:
//	  attempts: 3                   # retries after a failed run
//	  backoff: 30s                  # first wait; doubles each time
//	  max_backoff: 10m
//	security:                       # secured brokers (clientsec.Kafka); paths are relative to this file
//	  tls_ca: ca.pem                # tls: true for the system's CAs; tls_cert/tls_key for a client certificate
//	  sasl_mechanism: SCRAM-SHA-512 # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
//	  sasl_user: loader
//	  sasl_password_file: loader.pw # the password on its first line
//	registry_security:              # a registry behind HTTPS and basic auth (clientsec.Registry)
//	  user_info_file: registry.auth # user:password on its first line
//	  tls_ca: ca.pem
type Spec struct {
	Name         string   `yaml:"name"`
	Brokers      List     `yaml:"brokers"`
	Registry     string   `yaml:"registry"`
	Topics       Topics   `yaml:"topics"`
	Warehouse    string   `yaml:"warehouse"`
	Schedule     string   `yaml:"schedule"`
	Limits       Limits   `yaml:"limits"`
	Files        Files    `yaml:"files"`
	SuccessGrace Duration `yaml:"success_grace"`
	OnDataLoss   string   `yaml:"on_data_loss"`
	StartAt      string   `yaml:"start_at"`
	LockTTL      Duration `yaml:"lock_ttl"`
	// Audit publishes each committed run's counts to the _audit topic of
	// the job's brokers, through its registry (loader.AuditConfig).
	Audit bool `yaml:"audit"`
	// HeaderField names the top-level field holding the events' header,
	// for users whose schemas call it otherwise (loader.Config.HeaderField).
	HeaderField string `yaml:"header_field"`
	Retry       Retry  `yaml:"retry"`
	// Security and RegistrySecurity are how the job reaches secured
	// brokers and registry (loader.Config.Security, RegistrySecurity).
	Security         clientsec.Kafka    `yaml:"security"`
	RegistrySecurity clientsec.Registry `yaml:"registry_security"`

	// File is where the spec was read from.
	File string `yaml:"-"`
	// Sched is the parsed Schedule.
	Sched Schedule `yaml:"-"`
}

// Limits bound one run.
type Limits struct {
	MaxRecords  int64    `yaml:"max_records"`
	MaxDuration Duration `yaml:"max_duration"`
	MaxErrors   *int64   `yaml:"max_errors"`
}

// Files says how data files are written.
type Files struct {
	MaxBytes   Size   `yaml:"max_bytes"`
	MaxRecords int64  `yaml:"max_records"`
	Codec      string `yaml:"codec"`
}

// Retry says how a failed run is retried.
type Retry struct {
	Attempts   *int     `yaml:"attempts"`
	Backoff    Duration `yaml:"backoff"`
	MaxBackoff Duration `yaml:"max_backoff"`
}

// Defaults of a spec's optional fields.
const (
	DefaultRetryAttempts = 3
	DefaultBackoff       = 30 * time.Second
	DefaultMaxBackoff    = 10 * time.Minute
	DefaultLockTTL       = time.Minute
)

// List is a list of strings, written as a YAML list or a comma-separated
// string.
type List []string

func (l *List) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		var s []string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*l = s
	case yaml.ScalarNode:
		*l = nil
		for _, p := range strings.Split(n.Value, ",") {
			if p = strings.TrimSpace(p); p != "" {
				*l = append(*l, p)
			}
		}
	default:
		return errors.New("want a list or a comma-separated string")
	}
	return nil
}

// Topics selects topics: a list of names, or a regular expression
// matching whole names.
type Topics struct {
	Names []string
	Regex string
}

func (t *Topics) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		return n.Decode(&t.Names)
	case yaml.ScalarNode:
		if _, err := regexp.Compile("^(?:" + n.Value + ")$"); err != nil {
			return fmt.Errorf("not a valid regular expression: %w", err)
		}
		t.Regex = n.Value
		return nil
	}
	return errors.New("want a list of topic names or a regular expression")
}

func (t Topics) String() string {
	if t.Regex != "" {
		return "/" + t.Regex + "/"
	}
	return strings.Join(t.Names, ",")
}

// Duration is a Go duration written as a string: 90s, 15m, 1h30m.
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration (examples: 90s, 15m, 1h30m)", n.Value)
	}
	*d = Duration(v)
	return nil
}

// Size is a byte count written as 134217728, 128MiB or 64MB.
type Size int64

func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := loader.ParseBytes(n.Value)
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// SpecError is a mistake in a spec file, located as precisely as known.
type SpecError struct {
	File  string
	Line  int
	Field string // dotted path, e.g. limits.max_records
	Msg   string
}

func (e *SpecError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: field %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseSpec reads one spec. file names it in errors and gives the default
// job name.
func ParseSpec(file string, data []byte) (*Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &SpecError{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &SpecError{File: file, Msg: "empty spec"}
	}
	s := &Spec{File: file}
	if err := decodeStrict(file, "", doc.Content[0], reflect.ValueOf(s).Elem()); err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// decodeStrict decodes a mapping node into a struct field by field, so that
// an unknown field and a value of the wrong kind are both reported with the
// field's name and line (yaml.v3's own messages name neither well).
func decodeStrict(file, prefix string, n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		where := "the spec"
		if prefix != "" {
			where = strings.TrimSuffix(prefix, ".")
		}
		return &SpecError{File: file, Line: n.Line, Msg: where + " must be a mapping of field: value"}
	}
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			fields[tag] = i
			names = append(names, tag)
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		path := prefix + k.Value
		idx, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("unknown field %q", path)
			if s := closest(k.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", prefix+s)
			}
			return &SpecError{File: file, Line: k.Line, Msg: msg + "; fields here are " + strings.Join(sortedCopy(names), ", ")}
		}
		if seen[k.Value] {
			return &SpecError{File: file, Line: k.Line, Field: path, Msg: "given twice"}
		}
		seen[k.Value] = true
		fv := v.Field(idx)
		if fv.Kind() == reflect.Struct && !isLeaf(fv) {
			if err := decodeStrict(file, path+".", val, fv); err != nil {
				return err
			}
			continue
		}
		if err := val.Decode(fv.Addr().Interface()); err != nil {
			msg := err.Error()
			var te *yaml.TypeError
			if errors.As(err, &te) && len(te.Errors) > 0 {
				msg = te.Errors[0]
				if _, after, found := strings.Cut(msg, ": "); found && strings.HasPrefix(msg, "line ") {
					msg = after
				}
			}
			return &SpecError{File: file, Line: val.Line, Field: path, Msg: msg}
		}
	}
	return nil
}

// isLeaf tells structs decoded as one value (Topics) from sections.
func isLeaf(v reflect.Value) bool {
	_, ok := v.Addr().Interface().(yaml.Unmarshaler)
	return ok
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// closest returns the known name nearest to s, if it is near enough to be
// a typo.
func closest(s string, names []string) string {
	best, bestD := "", 1<<30
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), n); d < bestD {
			best, bestD = n, d
		}
	}
	if bestD <= max(2, len(s)/3) {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (s *Spec) validate() error {
	fail := func(field, msg string, args ...any) error {
		return &SpecError{File: s.File, Field: field, Msg: fmt.Sprintf(msg, args...)}
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(s.File), ".yaml"), ".yml")
	}
	if !namePattern.MatchString(s.Name) {
		return fail("name", "%q: use letters, digits, '.', '_' and '-'", s.Name)
	}
	if len(s.Brokers) == 0 {
		return fail("brokers", "required (host:port of at least one broker)")
	}
	if s.Registry == "" {
		return fail("registry", "required (the schema registry's URL)")
	}
	if len(s.Topics.Names) == 0 && s.Topics.Regex == "" {
		return fail("topics", "required (a list of names or a regular expression)")
	}
	if s.Warehouse == "" {
		return fail("warehouse", "required (file:///path or hdfs://namenode:port/path)")
	}
	if !strings.HasPrefix(s.Warehouse, "file://") && !strings.HasPrefix(s.Warehouse, "hdfs://") && strings.Contains(s.Warehouse, "://") {
		return fail("warehouse", "%q: use file:///path or hdfs://namenode:port/path", s.Warehouse)
	}
	if s.Schedule == "" {
		return fail("schedule", `required ("every 15m" or a cron expression such as "*/15 * * * *")`)
	}
	sched, err := ParseSchedule(s.Schedule)
	if err != nil {
		return fail("schedule", "%v", err)
	}
	s.Sched = sched
	switch s.Files.Codec {
	case "", "null", "deflate", "snappy":
	default:
		return fail("files.codec", "%q: use null, deflate or snappy", s.Files.Codec)
	}
	switch s.OnDataLoss {
	case "", loader.Earliest, loader.Latest, loader.Fail:
	default:
		return fail("on_data_loss", "%q: use earliest, latest or fail", s.OnDataLoss)
	}
	switch s.StartAt {
	case "", loader.Earliest, loader.Latest:
	default:
		return fail("start_at", "%q: use earliest or latest", s.StartAt)
	}
	if s.Limits.MaxRecords < 0 {
		return fail("limits.max_records", "must not be negative")
	}
	if s.Files.MaxRecords < 0 {
		return fail("files.max_records", "must not be negative")
	}
	if s.Retry.Attempts != nil && *s.Retry.Attempts < 0 {
		return fail("retry.attempts", "must not be negative")
	}
	// Files named in a spec are found beside it, wherever the daemon runs.
	for _, p := range []*string{&s.Security.TLSCA, &s.Security.TLSCert, &s.Security.TLSKey, &s.Security.SASLPasswordFile,
		&s.RegistrySecurity.UserInfoFile, &s.RegistrySecurity.TLSCA} {
		if *p != "" && !filepath.IsAbs(*p) && s.File != "" {
			*p = filepath.Join(filepath.Dir(s.File), *p)
		}
	}
	if _, err := s.Security.Opts(); err != nil {
		return fail("security", "%v", err)
	}
	if _, err := s.RegistrySecurity.Opts(); err != nil {
		return fail("registry_security", "%v", err)
	}
	return nil
}

// LoadConfig is the loader configuration of one run of the job.
func (s *Spec) LoadConfig() loader.Config {
	cfg := loader.Config{
		Brokers:        s.Brokers,
		RegistryURL:    s.Registry,
		Topics:         s.Topics.Names,
		TopicRegex:     s.Topics.Regex,
		Warehouse:      s.Warehouse,
		MaxRecords:     s.Limits.MaxRecords,
		MaxDuration:    time.Duration(s.Limits.MaxDuration),
		FileMaxBytes:   int64(s.Files.MaxBytes),
		FileMaxRecords: s.Files.MaxRecords,
		Codec:          s.Files.Codec,
		SuccessGrace:   time.Duration(s.SuccessGrace),
		OnDataLoss:     s.OnDataLoss,
		StartAt:        s.StartAt,
		LockTTL:        s.lockTTL(),
		Holder:         "job " + s.Name,
		HeaderField:    s.HeaderField,

		Security:         s.Security,
		RegistrySecurity: s.RegistrySecurity,
	}
	if s.Audit {
		cfg.Audit = &loader.AuditConfig{}
	}
	cfg.MaxErrors = loader.DefaultMaxErrors
	if s.Limits.MaxErrors != nil {
		cfg.MaxErrors = *s.Limits.MaxErrors
	}
	return cfg
}

func (s *Spec) lockTTL() time.Duration {
	if s.LockTTL > 0 {
		return time.Duration(s.LockTTL)
	}
	return DefaultLockTTL
}

func (s *Spec) retries() (attempts int, backoff, maxBackoff time.Duration) {
	attempts, backoff, maxBackoff = DefaultRetryAttempts, DefaultBackoff, DefaultMaxBackoff
	if s.Retry.Attempts != nil {
		attempts = *s.Retry.Attempts
	}
	if s.Retry.Backoff > 0 {
		backoff = time.Duration(s.Retry.Backoff)
	}
	if s.Retry.MaxBackoff > 0 {
		maxBackoff = time.Duration(s.Retry.MaxBackoff)
	}
	return
}

// LoadDir reads every *.yaml and *.yml spec in dir. Job names must be
// unique.
func LoadDir(dir string) ([]*Spec, error) {
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("jobs directory: %w", err)
		}
	}
	var specs []*Spec
	byName := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s, err := ParseSpec(f, data)
		if err != nil {
			return nil, err
		}
		if other, dup := byName[s.Name]; dup {
			return nil, &SpecError{File: f, Field: "name", Msg: fmt.Sprintf("job %q is also defined in %s", s.Name, other)}
		}
		byName[s.Name] = f
		specs = append(specs, s)
	}
	return specs, nil
}

// Find returns the job called name among specs.
func Find(specs []*Spec, name string) (*Spec, error) {
	var names []string
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return nil, fmt.Errorf("no job named %q (jobs: %s)", name, strings.Join(names, ", "))
}
