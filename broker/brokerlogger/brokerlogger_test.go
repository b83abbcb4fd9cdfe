package brokerlogger

import (
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/kafkaerr"
)

// TestKafkaLevelNames: each Kafka level names the slog level it logs at,
// and a level between two is shown as the finer Kafka level above it.
func TestKafkaLevelNames(t *testing.T) {
	for _, c := range []struct {
		name  string
		level slog.Level
	}{
		{"TRACE", slog.LevelDebug - 4}, {"DEBUG", slog.LevelDebug}, {"INFO", slog.LevelInfo},
		{"WARN", slog.LevelWarn}, {"ERROR", slog.LevelError}, {"FATAL", slog.LevelError + 4},
	} {
		if got := Name(c.level); got != c.name {
			t.Errorf("Name(%v) = %s, want %s", c.level, got, c.name)
		}
		if l, ok := Parse(c.name); !ok || l != c.level {
			t.Errorf("Parse(%s) = %v %v, want %v", c.name, l, ok, c.level)
		}
	}
	if l, ok := Parse("debug"); !ok || l != slog.LevelDebug {
		t.Errorf("Parse(debug) = %v %v: names are case-insensitive", l, ok)
	}
	if Name(slog.LevelInfo+1) != "WARN" || Name(slog.LevelError+10) != "FATAL" {
		t.Error("a level between two Kafka levels is not shown as the one above it")
	}
}

// TestAlterSetsAndDeletesTheLevel: SET changes the level at once, DELETE
// returns to the level at start, and what cannot be served is refused with
// the code the request gets, the level untouched.
func TestAlterSetsAndDeletesTheLevel(t *testing.T) {
	v := new(slog.LevelVar)
	v.Set(slog.LevelInfo)
	l := Loggers{Var: v, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Start: slog.LevelInfo}
	set := func(levels map[string]string) func(map[string]string) (map[string]string, error) {
		return func(map[string]string) (map[string]string, error) { return levels, nil }
	}
	if err := l.Alter(true, set(map[string]string{Root: "DEBUG"})); err != nil || v.Level() != slog.LevelInfo {
		t.Fatalf("validate only: %v, level %v", err, v.Level())
	}
	if err := l.Alter(false, set(map[string]string{Root: "DEBUG"})); err != nil || v.Level() != slog.LevelDebug {
		t.Fatalf("SET root=DEBUG: %v, level %v", err, v.Level())
	}
	if got := l.Levels()[Root]; got != "DEBUG" {
		t.Errorf("described level %s after SET, want DEBUG", got)
	}
	if err := l.Alter(false, set(map[string]string{})); err != nil || v.Level() != slog.LevelInfo {
		t.Fatalf("DELETE root: %v, level %v, want the level at start", err, v.Level())
	}
	for _, c := range []struct {
		levels map[string]string
		code   *kerr.Error
	}{
		{map[string]string{"kafka.server": "DEBUG"}, kerr.InvalidConfig},
		{map[string]string{Root: "VERBOSE"}, kerr.InvalidConfig},
	} {
		err := l.Alter(false, set(c.levels))
		if kafkaerr.Code(err) != c.code.Code || v.Level() != slog.LevelInfo {
			t.Errorf("%v: %v, level %v; want %s and the level untouched", c.levels, err, v.Level(), c.code.Message)
		}
	}
	fixed := Loggers{Logger: l.Logger, Start: slog.LevelInfo}
	if !fixed.ReadOnly() || fixed.Current() != slog.LevelInfo {
		t.Errorf("fixed level: read-only %v, current %v", fixed.ReadOnly(), fixed.Current())
	}
	if err := fixed.Alter(false, set(map[string]string{Root: "DEBUG"})); kafkaerr.Code(err) != kerr.InvalidRequest.Code {
		t.Errorf("altering a fixed level: %v, want INVALID_REQUEST", err)
	}
}
