package audit

import (
	"context"

	"github.com/tributary-io/tributary/schema"
)

// DecodeEvent is decodeEvent, for the fuzz target.
func DecodeEvent(ctx context.Context, des *schema.Deserializer, value []byte) (*Event, error) {
	return decodeEvent(ctx, des, value)
}

// EventNative is an event in the form it is published in.
func EventNative(e *Event) map[string]any { return e.native() }

// SetDrop makes p lose the monitoring events f returns true for, as a
// network would: never sent, yet taken for acknowledged.
func SetDrop(p *Publisher, f func(*Event) bool) {
	p.sendMu.lock(context.Background()) // send reads drop with sendMu held
	p.drop = f
	p.sendMu.unlock()
}

// ErrNotEvent is errNotEvent.
var ErrNotEvent = errNotEvent

// SetWALRotateBytes sets the size past which a WAL file is replaced by a
// checkpoint, until restore is called.
func SetWALRotateBytes(n int64) (restore func()) {
	old := walRotateBytes
	walRotateBytes = n
	return func() { walRotateBytes = old }
}
