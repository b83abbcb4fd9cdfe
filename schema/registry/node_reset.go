package registry

import (
	"context"
	"errors"
	"net/http"
)

// AcceptResetPath is the node's admin route that accepts the loss of its
// topic's records without a restart: POST it (admin role) once writes are
// refused because the topic was deleted or rewound. In `tributary
// standalone` a restart with --registry-accept-reset would stop the broker
// too.
const AcceptResetPath = "/tributary/accept-reset"

// acceptReset replaces the node's Server with one started with
// AcceptReset, as a restart with the flag would: it reads the topic afresh
// (so the node serves what the topic holds, as every other node does),
// appends the id floor from the checkpoint, and takes writes again.
func (n *Node) acceptReset(w http.ResponseWriter, r *http.Request) {
	n.resetMu.Lock()
	defer n.resetMu.Unlock()
	srv, down := n.Server()
	switch {
	case srv == nil:
		writeError(w, errUnavailable(down))
		return
	case srv.refused.Load() == nil:
		writeError(w, errNotPermitted("writes are not refused: there is no loss of the "+n.cfg.Topic+" topic to accept"))
		return
	case n.cfg.Checkpoint == "":
		writeError(w, errNotPermitted("this node keeps no checkpoint (--registry-checkpoint), so it cannot tell which schema ids new ones must stay above"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*n.cfg.SyncTimeout)
	defer cancel()
	l, err := n.open(ctx)
	if err != nil {
		writeError(w, storeErr("Accept reset", err))
		return
	}
	// The old Server stops first: one writer of the checkpoint at a time.
	n.mu.Lock()
	n.srv, n.down = nil, errors.New("accepting the loss of the "+n.cfg.Topic+" topic's records ("+AcceptResetPath+")")
	n.mu.Unlock()
	srv.Close()
	cfg := n.cfg
	cfg.AcceptReset = true
	next, err := NewWithLog(ctx, l, cfg)
	n.mu.Lock()
	if err == nil {
		n.srv, n.down = next, nil
	} else {
		n.down = err
	}
	n.mu.Unlock()
	if err != nil {
		n.cfg.Logger.Error("schema registry: accepting the loss of its topic failed; restart it with --registry-accept-reset", "err", err)
		writeError(w, storeErr("Accept reset", errors.New(err.Error()+"; restart the node with --registry-accept-reset")))
		return
	}
	if aerr := next.writesRefused(); aerr != nil {
		writeError(w, aerr) // the checkpoint itself is unusable
		return
	}
	writeJSON(w, struct {
		Accepted bool `json:"accepted"`
	}{true})
}
