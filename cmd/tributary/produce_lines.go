package main

import (
	"bufio"
	"context"
	"io"
)

// stdinLines reads r line by line on its own goroutine, so that a caller
// waiting for the next line still sees ctx end: on SIGTERM, `tributary
// produce` stops reading at once instead of at the next line or EOF. The
// lines channel closes at EOF or on a read error, which err then returns.
type stdinLines struct {
	lines chan []byte
	err   error // set before lines closes
}

func readLines(r io.Reader) *stdinLines {
	l := &stdinLines{lines: make(chan []byte, 64)}
	go func() {
		defer close(l.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			l.lines <- append([]byte(nil), sc.Bytes()...)
		}
		l.err = sc.Err()
	}()
	return l
}

// next returns the next line; ok is false at the end of input or when ctx
// is done.
func (l *stdinLines) next(ctx context.Context) (line []byte, ok bool) {
	select {
	case line, ok = <-l.lines:
		return line, ok
	case <-ctx.Done():
		return nil, false
	}
}
