package registry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tributary-io/tributary/schema/internal/avsc"
)

// Compatibility levels, as Confluent names them. They say which earlier
// versions of a subject a new schema is checked against (the latest, or
// every live one for *_TRANSITIVE) and in which direction:
//
//	BACKWARD  consumers using the new schema can read data written with the old
//	FORWARD   consumers using the old schema can read data written with the new
//	FULL      both
//	NONE      no check
const (
	Backward           = "BACKWARD"
	BackwardTransitive = "BACKWARD_TRANSITIVE"
	Forward            = "FORWARD"
	ForwardTransitive  = "FORWARD_TRANSITIVE"
	Full               = "FULL"
	FullTransitive     = "FULL_TRANSITIVE"
	None               = "NONE"
)

// parseLevel returns the canonical name of a compatibility level, accepting
// any letter case as Confluent does, or false if s is not one.
func parseLevel(s string) (string, bool) {
	switch l := strings.ToUpper(strings.TrimSpace(s)); l {
	case Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive, None:
		return l, true
	}
	return "", false
}

// previous is an earlier, live version of a subject.
type previous struct {
	version int
	schema  *schemaDoc
}

// checkCompatibility returns why s may not follow prev (oldest first) under
// level, or nil when it may. Transitive levels check every version, the
// others only the latest; the newest failure is reported first.
func checkCompatibility(level string, s *schemaDoc, prev []previous) []string {
	if level == None || len(prev) == 0 {
		return nil
	}
	if !strings.HasSuffix(level, "_TRANSITIVE") {
		prev = prev[len(prev)-1:]
	}
	base := strings.TrimSuffix(level, "_TRANSITIVE")
	for i := len(prev) - 1; i >= 0; i-- {
		p := prev[i]
		var msgs []string
		if base == Backward || base == Full {
			if err := canRead(s, p.schema); err != nil {
				msgs = append(msgs, fmt.Sprintf("the new schema cannot read data written with version %d: %v", p.version, err))
			}
		}
		if base == Forward || base == Full {
			if err := canRead(p.schema, s); err != nil {
				msgs = append(msgs, fmt.Sprintf("version %d cannot read data written with the new schema: %v", p.version, err))
			}
		}
		if len(msgs) > 0 {
			return append(msgs,
				fmt.Sprintf("{oldSchemaVersion: %d}", p.version),
				fmt.Sprintf("{oldSchema: '%s'}", p.schema.Text),
				fmt.Sprintf("{compatibility: '%s'}", level))
		}
	}
	return nil
}

// canRead returns nil when data written with writer is valid, or readable,
// under reader, else why not.
func canRead(reader, writer *schemaDoc) error {
	switch {
	case reader.Type != writer.Type:
		return fmt.Errorf("the schema type changed from %s to %s", writer.Type, reader.Type)
	case reader.Type == typeJSON:
		return jsonCompatible(reader.json, writer.json)
	case reader.Type == typeProtobuf:
		return protoCompatible(reader.proto, writer.proto)
	}
	return avsc.Compatible(reader.avro.Avro, writer.avro.Avro)
}

// DefaultCheckTimeout is the default of Config.CheckTimeout.
const DefaultCheckTimeout = 5 * time.Second

// checkWithin runs checkCompatibility within Config.CheckTimeout.
//
// The Avro library's check cannot be interrupted, so a check that runs out
// of time is abandoned, not stopped: it keeps its slot in s.checks until
// it ends. At most GOMAXPROCS checks thus run at once, abandoned or not,
// and a request waiting for a slot counts that wait against its deadline;
// the schema limits bound how long any one check can run. A panic in the
// library is the input's fault and is answered as an invalid schema, never
// allowed to end the process (in standalone, the broker).
func (s *Server) checkWithin(ctx context.Context, level string, sch *schemaDoc, prev []previous) ([]string, *apiError) {
	if level == None || len(prev) == 0 {
		return nil, nil
	}
	deadline := time.NewTimer(s.cfg.CheckTimeout)
	defer deadline.Stop()
	tooLong := func() *apiError {
		return errInvalidSchema("checking compatibility took longer than %s (CheckTimeout, --schema-check-timeout): the schema, or the versions it is checked against, are too large to check in time; make it smaller, or raise the limit", s.cfg.CheckTimeout)
	}
	select {
	case s.checks <- struct{}{}:
	case <-deadline.C:
		return nil, tooLong()
	case <-ctx.Done():
		return nil, storeErr("Compatibility check", ctx.Err())
	}
	type result struct {
		msgs  []string
		panic any
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-s.checks }()
		defer func() {
			if p := recover(); p != nil {
				done <- result{panic: p}
			}
		}()
		done <- result{msgs: checkCompatibility(level, sch, prev)}
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			s.cfg.Logger.Error("schema registry: the compatibility check panicked; the request is refused", "panic", r.panic)
			return nil, errInvalidSchema("checking compatibility failed: %v", r.panic)
		}
		return r.msgs, nil
	case <-deadline.C:
		s.cfg.Logger.Warn("schema registry: a compatibility check ran out of time; it goes on in the background until it ends", "timeout", s.cfg.CheckTimeout)
		return nil, tooLong()
	case <-ctx.Done():
		return nil, storeErr("Compatibility check", ctx.Err())
	}
}
