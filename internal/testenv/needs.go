package testenv

import (
	"strings"
	"testing"
)

// Service is something a test starts outside its own process: a server, a
// JVM, a program it runs. Tests that start one are integration tests;
// `go test -short` (make test-short) leaves them out and runs unit tests
// only.
type Service string

// The services tests start. Each starter of this package (StartZooKeeper,
// StartHDFS, RunKafkaTools, Binary and those built on them) declares its
// own, so a test that starts a service through them skips under -short
// even if it forgets to say so.
const (
	ZooKeeper Service = "ZooKeeper"
	HDFS      Service = "an HDFS mini cluster"
	JVM       Service = "a JVM"
	Tributary Service = "a tributary process"
	Kcat      Service = "kcat"
	Python    Service = "Python"
	// Helper is a copy of the test binary run as its own process (a
	// consumer or a registry node a test can kill -9).
	Helper Service = "a helper process"
)

// Program is an external program that has no name above (promtool,
// chromium, prlimit).
func Program(name string) Service { return Service(name) }

// Needs declares what the test starts, at its top so a reader sees it
// first, and skips the test under -short, saying why. Outside -short it
// does nothing: a test whose service is missing fails with the install
// hint of whatever starts it, because a skipped integration test hides
// real bugs.
//
// Call it from the test's goroutine (t.Skip ends the goroutine it runs on).
func Needs(t testing.TB, s Service, more ...Service) {
	t.Helper()
	if !testing.Short() {
		return
	}
	names := []string{string(s)}
	for _, m := range more {
		names = append(names, string(m))
	}
	t.Skipf("starts %s: skipped with -short (unit tests only)", strings.Join(names, ", "))
}

// Slow marks a test that starts no service but takes seconds by design:
// it waits out throttles, session lifetimes or a simulated slow disk, or
// opens thousands of partitions. Under -short it is skipped, saying why,
// so that make test-short stays a quick run of unit tests; make test runs
// it. why says what takes the time.
//
// Call it from the test's goroutine (t.Skip ends the goroutine it runs on).
func Slow(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: skipped with -short (unit tests only)", why)
	}
}
