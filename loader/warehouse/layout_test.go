package warehouse_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// An hour directory names its hour in UTC and parses back to it.
func TestHourDir(t *testing.T) {
	for _, tc := range []struct {
		hour time.Time
		want string
	}{
		{time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), "pageviews/2024/05/01/10"},
		{time.Date(2024, 5, 1, 10, 59, 59, 0, time.UTC), "pageviews/2024/05/01/10"},
		{time.Date(2024, 1, 1, 1, 30, 0, 0, time.FixedZone("CET", 3600)), "pageviews/2024/01/01/00"},
	} {
		got := warehouse.HourDir("pageviews", tc.hour)
		if got != tc.want {
			t.Errorf("HourDir(%v) = %q, want %q", tc.hour, got, tc.want)
		}
		start, err := warehouse.HourStart(got)
		if err != nil || !start.Equal(tc.hour.Truncate(time.Hour)) {
			t.Errorf("HourStart(%q) = %v, %v; want %v", got, start, err, tc.hour.Truncate(time.Hour))
		}
	}
	for _, dir := range []string{"2024/05/01/10", "pageviews/2024/13/01/10", "pageviews/x/05/01/10"} {
		if _, err := warehouse.HourStart(dir); err == nil {
			t.Errorf("HourStart(%q) accepted it", dir)
		}
	}
}

// Which names are topics and data files: the rule the loader writes by
// and the audit reads by.
func TestLayoutNames(t *testing.T) {
	for name, want := range map[string]bool{"pageviews": true, "_tributary": false, "_errors": false} {
		if got := warehouse.IsTopicDir(name); got != want {
			t.Errorf("IsTopicDir(%q) = %v, want %v", name, got, want)
		}
	}
	data := warehouse.DataFileName("pageviews", 3, 100, 199, 7)
	if data != "pageviews.p3.100-199.s7.avro" {
		t.Errorf("DataFileName = %q", data)
	}
	for name, want := range map[string]bool{data: true, warehouse.SuccessName: false, "x.jsonl": false} {
		if got := warehouse.IsDataFile(name); got != want {
			t.Errorf("IsDataFile(%q) = %v, want %v", name, got, want)
		}
	}
}

// Topics and Hours find what the loader wrote, in time order, and pass
// over the warehouse's own directories and anything not of the layout.
func TestTopicsAndHours(t *testing.T) {
	w, err := warehouse.Open("file://" + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h1 := time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC)
	h2 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	h3 := time.Date(2024, 1, 1, 9, 0, 0, 0, time.UTC)
	for _, dir := range []string{
		warehouse.HourDir("pageviews", h2),
		warehouse.HourDir("pageviews", h1),
		warehouse.HourDir("pageviews", h3),
		"pageviews/2024/1/01/10", // not zero-padded: not the layout's
		"pageviews/2024/01/01/10/extra",
		"pageviews/misc",
		warehouse.ErrorsDir + "/pageviews/2024/01/01",
		warehouse.LockDir,
	} {
		if err := w.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	topics, err := warehouse.Topics(w)
	if err != nil || !slices.Equal(topics, []string{"pageviews"}) {
		t.Errorf("Topics = %v, %v; want [pageviews]", topics, err)
	}
	hours, err := warehouse.Hours(w, "pageviews")
	if err != nil {
		t.Fatal(err)
	}
	want := []warehouse.Hour{
		{Dir: "pageviews/2023/12/31/23", Start: h1},
		{Dir: "pageviews/2024/01/01/00", Start: h2},
		{Dir: "pageviews/2024/01/01/09", Start: h3},
		{Dir: "pageviews/2024/01/01/10", Start: h3.Add(time.Hour)},
	}
	if !slices.EqualFunc(hours, want, func(a, b warehouse.Hour) bool { return a.Dir == b.Dir && a.Start.Equal(b.Start) }) {
		t.Errorf("Hours = %v, want %v", hours, want)
	}
	if hours, err := warehouse.Hours(w, "never-loaded"); err != nil || len(hours) != 0 {
		t.Errorf("Hours of a topic never loaded = %v, %v; want none", hours, err)
	}
}
