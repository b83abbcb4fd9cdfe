package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// statusLine is one line of progress redrawn in place on a terminal, for
// long CLI work (log verify, groups reset-offsets) that would otherwise
// print nothing until it ends. It draws only on a terminal, so scripts
// reading stderr see no control characters, unless TRIBUTARY_PROGRESS=always
// asks for it (the tests do). Redraws are at most every 100 ms; the final
// state always shows.
type statusLine struct {
	mu   sync.Mutex
	w    io.Writer // nil: not drawing
	last time.Time
	text string
}

func newStatusLine(f *os.File) *statusLine {
	s := &statusLine{}
	if os.Getenv("TRIBUTARY_PROGRESS") == "always" || isTerminal(f) {
		s.w = f
	}
	return s
}

// Set shows text, unless the previous redraw was under 100 ms ago.
func (s *statusLine) Set(format string, args ...any) {
	if s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = fmt.Sprintf(format, args...)
	if time.Since(s.last) < 100*time.Millisecond {
		return
	}
	s.last = time.Now()
	fmt.Fprintf(s.w, "\r\x1b[2K%s", s.text)
}

// Done shows the last text set and ends the line, so what follows starts
// on a fresh one.
func (s *statusLine) Done() {
	if s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.text != "" {
		fmt.Fprintf(s.w, "\r\x1b[2K%s\n", s.text)
	}
	s.text = ""
}
