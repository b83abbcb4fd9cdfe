package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/logstorm"
)

// Every command's log cuts a storm of one message to its burst (the
// summary follows when the window closes), and lets everything through at
// debug level, where an operator asked to see it all.
func TestCommandLogsCutStorms(t *testing.T) {
	level := logLevelVar.Level()
	t.Cleanup(func() { logLevelVar.Set(level) })

	storm := func() int {
		var buf bytes.Buffer
		l := slog.New(newLogHandler(&buf))
		for p := range 500 {
			l.Warn("changing the isr failed", "topic", "clicks", "partition", p)
		}
		return strings.Count(buf.String(), "changing the isr failed")
	}
	logLevelVar.Set(slog.LevelInfo)
	if n := storm(); n != logstorm.DefaultBurst {
		t.Fatalf("%d of 500 like lines written at info level, want the burst only", n)
	}
	logLevelVar.Set(slog.LevelDebug)
	if n := storm(); n != 500 {
		t.Fatalf("%d of 500 like lines written at debug level, want all", n)
	}
}
