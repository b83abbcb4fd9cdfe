package audit_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
)

var update = flag.Bool("update", false, "rewrite the expected output of data-driven tests")

// TestReconcile runs the cases in testdata/audit/reconcile: each file is a
// story of monitoring events and the report expected after it. Commands:
//
//	event pub=P [tier=T] [seq=N] window=HH:MM [counts=topic/server[~distinct]=n,...]
//	      [no_time=topic=n,...] [malformed=topic=n,...] [published=HH:MM]
//	      [size=10m] [final] [lost] [dup] [snapshot source=S covers=t,...]
//	inspect tier=T now=HH:MM (then, like report, its expected output)
//	report now=HH:MM [from=HH:MM] [to=HH:MM] [grace=1h] [window=10m]
//	       [topics=a,b] [tiers=a,b] [expect=a,b] [threshold=99.9] [max_excess=0]
//
// An event marked lost is numbered and listed in its publisher's later
// events' previous list, but never reaches the store; dup adds the
// previous event of the publisher a second time. A report command is
// followed by "----" and the expected output, ended by a blank line; run
// with -update to rewrite them.
func TestReconcile(t *testing.T) {
	files, _ := filepath.Glob("../testdata/audit/reconcile/*.txt")
	if len(files) == 0 {
		t.Fatal("no cases in testdata/audit/reconcile")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runReconcileFile(t, f) })
	}
}

var day = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

func clock(t *testing.T, s string) time.Time {
	t.Helper()
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("bad time %q (want HH:MM)", s)
	}
	return day.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute)
}

// publisherSim numbers events and keeps the previous list as a real
// publisher does.
type publisherSim struct {
	seq  int64
	prev []audit.Prior
	last *audit.Event
}

func runReconcileFile(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out strings.Builder
	st := audit.NewStore()
	pubs := map[string]*publisherSim{}
	idn := 0
	changed := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		out.WriteString(line + "\n")
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		args, flags := parseArgs(fields[1:])
		switch fields[0] {
		case "event":
			e := buildEvent(t, args, flags, pubs, &idn)
			if !flags["lost"] {
				st.Add(e)
			}
		case "report", "inspect":
			got := runReport(t, st, args)
			if fields[0] == "inspect" {
				got = runInspect(t, st, args)
			}
			// Expected output: "----" then lines up to a blank line.
			if i+1 >= len(lines) || lines[i+1] != "----" {
				t.Fatalf("%s:%d: report without ---- and expected output", path, i+1)
			}
			j := i + 2
			for j < len(lines) && lines[j] != "" {
				j++
			}
			want := strings.Join(lines[i+2:j], "\n")
			if strings.TrimRight(got, "\n") != want {
				if !*update {
					t.Errorf("%s:%d: report\n got:\n%s\nwant:\n%s", path, i+1, got, want)
				}
				changed = true
			}
			out.WriteString("----\n" + strings.TrimRight(got, "\n") + "\n")
			i = j - 1
		default:
			t.Fatalf("%s:%d: unknown command %q", path, i+1, fields[0])
		}
	}
	if *update && changed {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parseArgs(fields []string) (map[string]string, map[string]bool) {
	args, flags := map[string]string{}, map[string]bool{}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			flags[f] = true
		}
	}
	return args, flags
}

func buildEvent(t *testing.T, args map[string]string, flags map[string]bool, pubs map[string]*publisherSim, idn *int) *audit.Event {
	t.Helper()
	pub := args["pub"]
	ps := pubs[pub]
	if ps == nil {
		ps = &publisherSim{}
		pubs[pub] = ps
	}
	if flags["dup"] {
		return ps.last
	}
	ps.seq++
	if s, ok := args["seq"]; ok {
		ps.seq, _ = strconv.ParseInt(s, 10, 64)
	}
	size := audit.DefaultWindow
	if s, ok := args["size"]; ok {
		size, _ = time.ParseDuration(s)
	}
	w := clock(t, args["window"])
	e := &audit.Event{
		Host: "host-" + pub, Tier: cmpOr(args["tier"], audit.TierProducer), Source: cmpOr(args["source"], pub),
		Publisher: pub, Sequence: ps.seq, Final: flags["final"], Snapshot: flags["snapshot"],
		Window: w, Size: size, Published: w.Add(size + time.Minute),
	}
	if p, ok := args["published"]; ok {
		e.Published = clock(t, p)
	}
	*idn++
	copy(e.ID[:], fmt.Sprintf("id-%d", *idn))
	for _, c := range list(args["counts"]) {
		ts, n := splitCount(t, c)
		topic, server, _ := strings.Cut(ts, "/")
		distinct := int64(-1)
		if s, d, ok := strings.Cut(server, "~"); ok { // clicks/s1~70=100: 70 of 100 distinct
			server = s
			distinct, _ = strconv.ParseInt(d, 10, 64)
		}
		e.Counts = append(e.Counts, audit.Count{Topic: topic, Server: server, N: n, Distinct: distinct})
	}
	for _, c := range list(args["no_time"]) {
		topic, n := splitCount(t, c)
		e.NoTime = append(e.NoTime, audit.TopicCount{Topic: topic, N: n})
	}
	for _, c := range list(args["malformed"]) {
		topic, n := splitCount(t, c)
		e.Malformed = append(e.Malformed, audit.TopicCount{Topic: topic, N: n})
	}
	e.Covers = list(args["covers"])
	e.Previous = append([]audit.Prior(nil), ps.prev...)
	topics := map[string]bool{}
	for _, c := range e.Counts {
		topics[c.Topic] = true
	}
	for _, c := range append(e.NoTime, e.Malformed...) {
		topics[c.Topic] = true
	}
	var ts []string
	for tp := range topics {
		ts = append(ts, tp)
	}
	slices.Sort(ts)
	ps.prev = append([]audit.Prior{{Sequence: e.Sequence, Window: w, Topics: ts}}, ps.prev...)
	if len(ps.prev) > 16 {
		ps.prev = ps.prev[:16]
	}
	ps.last = e
	return e
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func splitCount(t *testing.T, s string) (string, int64) {
	t.Helper()
	i := strings.LastIndex(s, "=")
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if i < 0 || err != nil {
		t.Fatalf("bad count %q (want name=n)", s)
	}
	return s[:i], n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func runReport(t *testing.T, st *audit.Store, args map[string]string) string {
	t.Helper()
	o := audit.Options{Now: clock(t, args["now"]), Topics: list(args["topics"]), Tiers: list(args["tiers"]), Expect: list(args["expect"])}
	if s, ok := args["from"]; ok {
		o.From = clock(t, s)
	}
	if s, ok := args["to"]; ok {
		o.To = clock(t, s)
	}
	if s, ok := args["grace"]; ok {
		o.Grace, _ = time.ParseDuration(s)
	}
	if s, ok := args["window"]; ok {
		o.Window, _ = time.ParseDuration(s)
	}
	r := st.Report(o)
	var b strings.Builder
	hm := func(w time.Time) string { return w.Format("15:04") }
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%s %s %s produced=%d received=%d missing=%d excess=%d", row.Topic, hm(row.WindowStart), row.Tier, row.Produced, row.Received, row.Missing, row.Excess)
		if row.Duplicates > 0 {
			fmt.Fprintf(&b, " duplicates=%d", row.Duplicates)
		}
		fmt.Fprintf(&b, " completeness=%v no_time=%d malformed=%d %s", row.Completeness, row.NoTime, row.Malformed, row.Status)
		if row.Note != "" {
			fmt.Fprintf(&b, " (%s)", row.Note)
		}
		b.WriteString("\n")
	}
	for _, l := range r.Lost {
		if l.Located {
			fmt.Fprintf(&b, "lost: %s %s seq %d window %s topics %s\n", l.Tier, l.Publisher, l.Sequence, hm(l.Window), strings.Join(l.Topics, ","))
		} else {
			fmt.Fprintf(&b, "lost: %s %s seq %d, not located\n", l.Tier, l.Publisher, l.Sequence)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if s, ok := args["threshold"]; ok {
		th, _ := strconv.ParseFloat(s, 64)
		for _, row := range r.Below(th) {
			fmt.Fprintf(&b, "below %s: %s %s %s completeness=%v missing=%d\n", s, row.Topic, hm(row.WindowStart), row.Tier, row.Completeness, row.Missing)
		}
	}
	if s, ok := args["max_excess"]; ok {
		m, _ := strconv.ParseInt(s, 10, 64)
		for _, row := range r.Over(m) {
			fmt.Fprintf(&b, "over %s: %s %s %s duplicates=%d excess=%d\n", s, row.Topic, hm(row.WindowStart), row.Tier, row.Duplicates, row.Excess)
		}
	}
	return b.String()
}

func runInspect(t *testing.T, st *audit.Store, args map[string]string) string {
	t.Helper()
	in := st.Inspect(args["tier"], audit.Options{Now: clock(t, args["now"])})
	var b strings.Builder
	for _, p := range in.Publishers {
		fmt.Fprintf(&b, "publisher %s events=%d seq=%d-%d missing=%d final=%v\n", p.ID, p.Events, p.First, p.Last, p.Missing, p.Final)
	}
	for _, c := range in.Counts {
		fmt.Fprintf(&b, "count %s %s %s n=%d distinct=%d\n", c.Topic, c.Window.Format("15:04"), c.Server, c.N, c.Distinct)
	}
	return b.String()
}
