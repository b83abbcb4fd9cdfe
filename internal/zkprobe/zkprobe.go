// Package zkprobe asks a ZooKeeper server whether it runs, for the tools
// that start one (the test environment, the bench's clusters). A server
// that answers may not hand out sessions yet: callers that need one wait
// for a session too.
package zkprobe

import (
	"io"
	"net"
	"time"
)

// Ruok sends ZooKeeper's four-letter health check to addr and reports
// whether it answered "imok".
func Ruok(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	answer, _ := io.ReadAll(io.LimitReader(c, 16))
	return string(answer) == "imok"
}
