package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// A schema id, once handed out, is in records everywhere; given to another
// schema, it makes every old record carrying it decode with the wrong
// schema. The _schemas topic is the registry's only state, so whatever
// empties it — a mistaken delete, a broker restored from an old copy, a
// client passing itself off as ours — would make a node that replays it
// count from 1 again. So each node keeps, apart from the topic, a
// checkpoint: which topic it read (its id, which changes when the topic
// is deleted and created again), the highest schema id handed out, and
// the offset the topic had reached.
//
//   - A new id is written to the checkpoint before the record that hands
//     it out is appended, so no id on the topic is missing from it.
//   - A node that finds its topic deleted or rewound, at start or before a
//     write, serves reads from what the topic holds but refuses every
//     write (50001 saying what happened and what to do) until it is
//     restarted with Config.AcceptReset.
//   - AcceptReset appends an id floor (a NOOP record whose key holds
//     tributaryIdFloor, the checkpoint's highest id) that every node
//     replaying the topic applies, so new ids stay above every id handed
//     out before, on this node and on nodes without a checkpoint.

// checkpoint is the content of the checkpoint file.
type checkpoint struct {
	Topic     string `json:"topic"`
	TopicID   string `json:"topic_id"` // "" for logs without ids
	HighestID int    `json:"highest_id"`
	EndOffset int64  `json:"end_offset"`
}

// identifiedLog is a Log whose topic can be told apart from one deleted
// and created again under the same name.
type identifiedLog interface {
	TopicID(ctx context.Context) (string, error)
}

func logTopicID(ctx context.Context, l Log) (string, error) {
	if il, ok := l.(identifiedLog); ok {
		return il.TopicID(ctx)
	}
	return "", nil
}

// readCheckpoint returns the checkpoint at path, nil if there is none yet.
// It is strict: a file this code did not write is refused, not guessed at.
func readCheckpoint(path string) (*checkpoint, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var cp checkpoint
	if err := dec.Decode(&cp); err != nil {
		return nil, fmt.Errorf("not a schema registry checkpoint: %w", err)
	}
	if dec.More() || cp.Topic == "" || cp.HighestID < 0 || cp.HighestID > maxID31 || cp.EndOffset < 0 {
		return nil, errors.New("not a schema registry checkpoint: trailing data, no topic, or a highest id or offset out of range")
	}
	return &cp, nil
}

// openCheckpoint compares the replayed topic with the checkpoint, once at
// start, and either refuses writes, accepts the loss (AcceptReset), or
// records the topic as it is. It returns an error only when the
// checkpoint cannot be written.
func (s *Server) openCheckpoint(ctx context.Context) error {
	id, err := logTopicID(ctx, s.log)
	if err != nil {
		return fmt.Errorf("registry: read the id of topic %s: %w", s.cfg.Topic, err)
	}
	s.topicID = id
	path := s.cfg.Checkpoint
	if path == "" {
		return nil
	}
	cp, err := readCheckpoint(path)
	if err != nil {
		s.refuseWrites(fmt.Sprintf("its checkpoint %s cannot be used (%v), so it cannot tell which schema ids were handed out. Restore the file, or, if topic %s is intact, remove it and restart", path, err, s.cfg.Topic))
		return nil
	}
	// The topic's end, not the offset after the last record read: a
	// compacted topic may have lost its last records, never its end.
	var lost string
	switch {
	case cp == nil:
	case cp.Topic != s.cfg.Topic:
		lost = fmt.Sprintf("its checkpoint %s is of topic %s, not %s", path, cp.Topic, s.cfg.Topic)
	case cp.TopicID != "" && id != "" && cp.TopicID != id:
		lost = fmt.Sprintf("topic %s was deleted and created again since this node last ran (its id was %s, now %s)", s.cfg.Topic, cp.TopicID, id)
	default:
		// The topic's end, not the offset after the last record read: a
		// compacted topic may have lost its last records, never its end.
		end, err := s.endReaches(ctx, cp.EndOffset)
		switch {
		case err != nil:
			return fmt.Errorf("registry: read the end of topic %s: %w", s.cfg.Topic, err)
		case end < cp.EndOffset:
			lost = fmt.Sprintf("topic %s ends at offset %d, but had reached offset %d: it was rewound (restored from an older copy?)", s.cfg.Topic, end, cp.EndOffset)
		}
		// Fewer ids on the topic than the checkpoint holds is no loss: an
		// id is recorded before the record giving it out is appended, and
		// that append may have failed.
	}
	switch {
	case lost != "" && !s.cfg.AcceptReset:
		s.refuseWrites(fmt.Sprintf("%s. Schema ids up to %d were handed out and may be in records, so no id at or below %d may be given out again. Restore the topic if you can; otherwise restart this node with --registry-accept-reset (Config.AcceptReset), or POST %s as an admin: the schemas the topic lost stay lost, and new ids continue above %d on every node",
			lost, cp.HighestID, cp.HighestID, AcceptResetPath, cp.HighestID))
		return nil
	case lost != "":
		if aerr := s.append(ctx, "Accept reset", idFloorRecord(cp.HighestID)); aerr != nil {
			return fmt.Errorf("registry: write the id floor %d to %s: %s", cp.HighestID, s.cfg.Topic, aerr.Message)
		}
		s.cfg.Logger.Warn("schema registry: accepted the loss of its topic's records (--registry-accept-reset); new schema ids continue above the highest handed out",
			"topic", s.cfg.Topic, "what_happened", lost, "id_floor", cp.HighestID)
		cp = nil // the old topic's offsets no longer apply
	case s.cfg.AcceptReset:
		s.cfg.Logger.Info("schema registry: --registry-accept-reset given but the topic is as the checkpoint left it; nothing to accept", "topic", s.cfg.Topic)
	}
	s.cp = cp
	s.cpOpen.Store(true)
	return s.saveCheckpoint(0)
}

// saveCheckpoint records the state applied so far, and reserve as handed
// out; it never lowers what the checkpoint holds. It does nothing without
// a checkpoint, before openCheckpoint has compared it with the topic, or
// while writes are refused (the old checkpoint is what tells the operator
// what was lost, and what the floor must be).
func (s *Server) saveCheckpoint(reserve int) error {
	if s.cfg.Checkpoint == "" || !s.cpOpen.Load() || s.refused.Load() != nil {
		return nil
	}
	s.mu.RLock()
	next := checkpoint{Topic: s.cfg.Topic, TopicID: s.topicID, HighestID: max(s.st.highestID(), reserve), EndOffset: s.st.next}
	s.mu.RUnlock()
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	if s.cp != nil {
		next.HighestID = max(next.HighestID, s.cp.HighestID)
		next.EndOffset = max(next.EndOffset, s.cp.EndOffset)
		if next == *s.cp {
			return nil
		}
	}
	b, _ := json.Marshal(next)
	if err := atomicfile.Write(s.cfg.Checkpoint, append(b, '\n')); err != nil {
		return fmt.Errorf("write the schema registry checkpoint %s: %w", s.cfg.Checkpoint, err)
	}
	s.cp = &next
	return nil
}

// refuseWrites makes every later write answer 50001 with why, until the
// node is restarted.
func (s *Server) refuseWrites(why string) {
	msg := "Schema registry refuses writes: " + why
	if s.refused.CompareAndSwap(nil, &msg) {
		s.cfg.Logger.Error("schema registry: refusing writes; reads are served", "topic", s.cfg.Topic, "reason", why)
	}
}

// writesRefused returns the refusal every write gets, or nil.
func (s *Server) writesRefused() *apiError {
	if msg := s.refused.Load(); msg != nil {
		return &apiError{codeStoreError, *msg}
	}
	return nil
}

// checkTopic finds, before a write, a topic deleted or rewound while the
// node ran: the node's state still holds every id, but the topic no
// longer does, so a restart would forget them.
func (s *Server) checkTopic(ctx context.Context) *apiError {
	id, err := logTopicID(ctx, s.log)
	if err != nil {
		return storeErr("Check topic", err)
	}
	s.mu.RLock()
	applied, highest := s.st.next, s.st.highestID()
	s.mu.RUnlock()
	var end int64
	if id == s.topicID {
		if end, err = s.endReaches(ctx, applied); err != nil {
			return storeErr("Check topic", err)
		}
	}
	switch {
	case id != s.topicID:
		s.refuseWrites(fmt.Sprintf("topic %s was deleted and created again while this node ran (its id was %s, now %s). Schema ids up to %d were handed out and may be in records. Restore the topic if you can; otherwise restart this node with --registry-accept-reset (Config.AcceptReset, with a checkpoint), or POST %s as an admin: new ids continue above the highest handed out",
			s.cfg.Topic, s.topicID, id, highest, AcceptResetPath))
	case end < applied:
		s.refuseWrites(fmt.Sprintf("topic %s ends at offset %d, but this node has read up to offset %d: it was rewound. Schema ids up to %d were handed out and may be in records. Restore the topic if you can; otherwise restart this node with --registry-accept-reset (Config.AcceptReset, with a checkpoint), or POST %s as an admin: new ids continue above the highest handed out",
			s.cfg.Topic, end, applied, highest, AcceptResetPath))
	}
	return s.writesRefused()
}

// rewindGrace is how long the topic's end may stay below an offset the
// node has read before the topic counts as rewound. The end a broker
// reports can trail, for a moment, records a fetch already returned
// (seen with several nodes writing at once); a rewound topic stays short.
const rewindGrace = 2 * time.Second

// endReaches returns the topic's end once it reaches offset, or the end
// it still has after rewindGrace.
func (s *Server) endReaches(ctx context.Context, offset int64) (int64, error) {
	deadline := time.Now().Add(rewindGrace)
	for {
		end, err := s.log.End(ctx)
		if err != nil || end >= offset || time.Now().After(deadline) {
			return end, err
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
