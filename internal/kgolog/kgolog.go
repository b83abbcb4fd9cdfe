// Package kgolog is the one bridge from franz-go's client logging to
// log/slog for every Kafka client Tributary runs (consumer, producer,
// mirror): franz-go's own kslog plugin, passing on warnings and errors
// only. kgo's info and debug lines are per-request chatter that would
// drown what an operator needs, even in a logger set to debug.
package kgolog

import (
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"
)

// New returns a kgo.Logger that writes kgo's warnings and errors to l, at
// slog's warn and error levels.
func New(l *slog.Logger) kgo.Logger { return warnAndAbove{kslog.New(l)} }

// warnAndAbove caps the level kslog takes from l's handler at warnings.
type warnAndAbove struct{ *kslog.Logger }

func (w warnAndAbove) Level() kgo.LogLevel { return min(w.Logger.Level(), kgo.LogLevelWarn) }
