package testenv

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// IcebergREST is a real Iceberg REST catalog server: Apache Iceberg's own
// reference server (org.apache.iceberg.rest.RESTCatalogServer from the
// test-fixtures jar of iceberg-open-api on Maven Central,
// scripts/iceberg-rest/pom.xml), backed by a JDBC catalog in an in-memory
// SQLite database and writing table metadata through Hadoop's file IO.
type IcebergREST struct {
	URI string // http://127.0.0.1:port
}

const icebergRESTInstallHint = "apt-get install -y default-jdk-headless maven (scripts/install-deps.sh does it); Maven then fetches Iceberg's REST catalog server from Maven Central once"

var icebergRESTServer = javaLauncher{
	dir: "iceberg-rest", pom: "pom.xml", cacheName: "iceberg-rest", mvnArgs: []string{"-DincludeScope=runtime"},
	what: "Iceberg's REST catalog server", installHint: icebergRESTInstallHint,
}

// StartIcebergREST starts a REST catalog server of its own for the test,
// whose default warehouse is warehouse (a file:// URL): tables created
// without a location go there. It stops when the test ends, and when the
// test binary exits however it exits.
func StartIcebergREST(t testing.TB, warehouse string) *IcebergREST {
	t.Helper()
	Needs(t, JVM)
	cp, _, err := icebergRESTServer.classpath()
	if err != nil {
		t.Fatalf("Iceberg's REST catalog server: %v", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("java is not installed; install it with: %s", icebergRESTInstallHint)
	}
	var last error
	for range 3 { // a free port can be taken before the server binds it
		s, err := startIcebergREST(t, java, cp, warehouse)
		if err == nil {
			return s
		}
		last = err
	}
	t.Fatalf("starting Iceberg's REST catalog server: %v", last)
	return nil
}

func startIcebergREST(t testing.TB, java, cp, warehouse string) (*IcebergREST, error) {
	dir, err := os.MkdirTemp("", "tributary-iceberg-rest-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &IcebergREST{URI: fmt.Sprintf("http://127.0.0.1:%d", port)}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdog, "iceberg-rest-watchdog",
		"-Xmx512m", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, "org.apache.iceberg.rest.RESTCatalogServer")
	// The server reads its catalog's properties from CATALOG_* variables:
	// CATALOG_REST_PORT is rest.port, CATALOG_WAREHOUSE the warehouse.
	cmd.Env = append(os.Environ(), "JAVA="+java, "ZKDIR="+dir,
		fmt.Sprintf("CATALOG_REST_PORT=%d", port), "CATALOG_WAREHOUSE="+warehouse)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting Iceberg's REST catalog server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		stdin.Close()
		<-exited
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.URI + "/v1/config"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return s, nil
			}
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("the server exited before answering on %s (%v); its log:\n%s", s.URI, err, logTail(logPath))
		case <-time.After(100 * time.Millisecond):
		}
	}
	tail := logTail(logPath)
	stop()
	return nil, fmt.Errorf("the server did not answer on %s within 90s; its log:\n%s", s.URI, tail)
}
