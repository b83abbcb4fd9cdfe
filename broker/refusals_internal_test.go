package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A client refused in a loop costs one log line a minute per feature, and
// the next line says how many refusals it stands for.
func TestRefusalsLoggedOnceAMinuteWithACount(t *testing.T) {
	var out bytes.Buffer
	b := &Broker{logger: slog.New(slog.NewTextHandler(&out, nil))}
	for range 100 {
		b.refuse("transactions", "test")
	}
	b.refuse("share groups", "test")
	if n := strings.Count(out.String(), "feature=transactions refusals=1 "); n != 1 || strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("want one line per feature, the first refusal each:\n%s", out.String())
	}
	b.refusals.by["transactions"].logged = time.Now().Add(-refusalLogInterval - time.Second)
	b.refuse("transactions", "test")
	if !strings.Contains(out.String(), "feature=transactions refusals=100 ") {
		t.Fatalf("the line after a minute should count the 99 held back and itself:\n%s", out.String())
	}
}
