package kgolog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// What reaches the slog logger, by the level of the logger: kgo's chatter
// never, its warnings and errors as far as the logger lets them through.
func TestLevels(t *testing.T) {
	cases := []struct {
		logger    slog.Level
		wantLevel kgo.LogLevel
		want      []string // of kgo's lines error, warn, info, debug
	}{
		{slog.LevelDebug, kgo.LogLevelWarn, []string{"level=ERROR msg=e", "level=WARN msg=w"}},
		{slog.LevelInfo, kgo.LogLevelWarn, []string{"level=ERROR msg=e", "level=WARN msg=w"}},
		{slog.LevelWarn, kgo.LogLevelWarn, []string{"level=ERROR msg=e", "level=WARN msg=w"}},
		{slog.LevelError, kgo.LogLevelError, []string{"level=ERROR msg=e"}},
	}
	for _, c := range cases {
		t.Run(c.logger.String(), func(t *testing.T) {
			var buf bytes.Buffer
			l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
				Level:       c.logger,
				ReplaceAttr: dropTime,
			})))
			if got := l.Level(); got != c.wantLevel {
				t.Errorf("Level() = %v, want %v", got, c.wantLevel)
			}
			// kgo logs only at or below Level(), as its client does.
			for _, line := range []struct {
				level kgo.LogLevel
				msg   string
			}{{kgo.LogLevelError, "e"}, {kgo.LogLevelWarn, "w"}, {kgo.LogLevelInfo, "i"}, {kgo.LogLevelDebug, "d"}} {
				if line.level <= l.Level() {
					l.Log(line.level, line.msg, "broker", 1)
				}
			}
			var got []string
			for _, s := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if s != "" {
					got = append(got, strings.TrimSuffix(s, " broker=1"))
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("logged %q, want %q", got, c.want)
			}
		})
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
