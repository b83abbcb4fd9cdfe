// Package logstorm keeps a storm of like log lines to a few lines and a
// count.
//
// At thousands of partitions one event (a broker dying, a restart, a
// disk filling) makes every partition log the same line: 3,000 "follower
// left the isr" lines in a second bury the line that says why. A Handler
// passes the first Burst records of one message and level in each Window
// and counts the rest; when the window closes it writes one record of
// that message and level with suppressed=N (and, under first., the
// attributes of the first record it left out), so a search for the message still finds the
// storm and its size. Debug records pass untouched: debug logging is
// asked for, and is for seeing everything.
package logstorm

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults for New: 20 lines of one message per 10 s.
const (
	DefaultBurst  = 20
	DefaultWindow = 10 * time.Second
)

// maxKeys bounds the messages remembered at once; past it the table is
// cleared (messages are mostly constants, so this is a safety net).
const maxKeys = 4096

// Handler limits like records on their way to the next handler.
type Handler struct {
	next slog.Handler
	s    *state
}

type state struct {
	burst  int
	window time.Duration
	// pass says whether to let everything through (the level is Debug).
	pass func() bool

	mu   sync.Mutex
	keys map[key]*window
}

type key struct {
	level slog.Level
	msg   string
}

// window is one message's current window.
type window struct {
	start   time.Time
	passed  int
	dropped int
	first   slog.Record  // the first record left out, for the summary's attributes
	via     slog.Handler // the handler it came through (its With attributes)
	timer   *time.Timer
}

// New wraps next: at most burst records of one message and level per
// window pass; pass (may be nil) lets everything through while it says so.
func New(next slog.Handler, burst int, every time.Duration, pass func() bool) *Handler {
	if pass == nil {
		pass = func() bool { return false }
	}
	return &Handler{next: next, s: &state{burst: burst, window: every, pass: pass, keys: map[key]*window{}}}
}

// Enabled is the next handler's.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// WithAttrs keeps the limits shared: a logger's children count together.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(as), s: h.s}
}

// WithGroup keeps the limits shared.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), s: h.s}
}

// Handle passes r on unless its message's burst in this window is spent.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelInfo || h.s.burst <= 0 || h.s.pass() {
		return h.next.Handle(ctx, r)
	}
	if h.s.admit(h, r) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

// admit counts r in its message's window and says whether it passes.
func (s *state) admit(h *Handler, r slog.Record) bool {
	k := key{r.Level, r.Message}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.keys[k]
	if w == nil || (w.dropped == 0 && now.Sub(w.start) >= s.window) {
		if w == nil && len(s.keys) >= maxKeys {
			clear(s.keys) // pending summaries still fire from their timers
		}
		w = &window{start: now}
		s.keys[k] = w
	}
	if w.passed < s.burst {
		w.passed++
		return true
	}
	w.dropped++
	if w.dropped == 1 {
		w.first, w.via = r.Clone(), h.next
		w.timer = time.AfterFunc(max(s.window-now.Sub(w.start), 0), func() { s.summarize(k, w) })
	}
	return false
}

// summarize ends w's window: one record says how many lines it left out.
func (s *state) summarize(k key, w *window) {
	s.mu.Lock()
	n := w.dropped
	if s.keys[k] == w {
		delete(s.keys, k) // the next line of this message opens a new window
	}
	s.mu.Unlock()
	r := slog.NewRecord(time.Now(), k.level, k.msg, 0)
	r.AddAttrs(slog.Int("suppressed", n), slog.Duration("window", s.window))
	var first []any
	w.first.Attrs(func(a slog.Attr) bool {
		first = append(first, a)
		return true
	})
	if len(first) > 0 {
		r.AddAttrs(slog.Group("first", first...))
	}
	w.via.Handle(context.Background(), r)
}
