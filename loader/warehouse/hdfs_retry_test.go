package warehouse

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// nameNodeError is a remote exception as the HDFS client returns it.
type nameNodeError struct{ exception string }

func (e nameNodeError) Method() string    { return "create" }
func (e nameNodeError) Desc() string      { return "ERROR_APPLICATION" }
func (e nameNodeError) Exception() string { return e.exception }
func (e nameNodeError) Message() string   { return e.exception + ": not now" }
func (e nameNodeError) Error() string {
	return "create call failed with " + e.Desc() + " (" + e.exception + ")"
}

// A NameNode that says "try again" (RetriableException, as while it
// leaves safe mode after a failover) refused the call before acting, so
// every call, create and rename included, is sent again; other remote
// exceptions and cut connections are not, for calls that may have acted.
func TestNotCarriedOutRetriesRetriableExceptions(t *testing.T) {
	wrapped := func(exception string) error {
		return &os.PathError{Op: "create", Path: "/w/f", Err: nameNodeError{exception}}
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{wrapped(retriableException), true},
		{fmt.Errorf("write: %w", wrapped(retriableException)), true},
		{errors.New("no available namenodes: standby"), true},
		{wrapped("org.apache.hadoop.fs.FileAlreadyExistsException"), false},
		{wrapped("org.apache.hadoop.hdfs.server.namenode.SafeModeException"), false},
		{errors.New("SASL handshake: no available namenodes"), false},
		{nil, false},
	} {
		if got := notCarriedOut(c.err); got != c.want {
			t.Errorf("notCarriedOut(%v) = %v, want %v", c.err, got, c.want)
		}
	}

	calls := 0
	err := retryFailover(5*time.Second, func() error {
		if calls++; calls < 3 {
			return wrapped(retriableException)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("retryFailover: %v after %d calls, want success on the third", err, calls)
	}
}
