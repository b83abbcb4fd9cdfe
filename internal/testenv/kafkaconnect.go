package testenv

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// KafkaConnectFileSource is the class of the file source connector on
// the worker's classpath (scripts/kafka/LineFileSourceConnector.java): it
// sends each complete line of the file named by its "file" setting to the
// topic named by its "topic" setting, as a string value with no key.
const KafkaConnectFileSource = "LineFileSourceConnector"

// StartKafkaConnect runs Apache Kafka Connect's distributed worker
// (connect-distributed.sh's ConnectDistributed; Maven fetches it on first
// use, as for RunKafkaTools) against bootstrap, with its three internal
// topics config, offset and status storage named from group, and returns
// the base URL of its REST API once it answers. The connector
// KafkaConnectFileSource is on its classpath. extra adds or overrides
// worker properties. The worker is killed at the end of the test; its
// output is logged if the test fails.
func StartKafkaConnect(t testing.TB, bootstrap, group string, extra map[string]string) string {
	t.Helper()
	Needs(t, JVM)
	cp, connector, err := kafkaConnect.classpath()
	if err != nil {
		t.Fatalf("Kafka Connect: %v", err)
	}
	rest := "127.0.0.1:" + strings.Split(FreeAddr(t), ":")[1]
	props := map[string]string{
		"bootstrap.servers":                 bootstrap,
		"group.id":                          group,
		"key.converter":                     "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                   "org.apache.kafka.connect.json.JsonConverter",
		"config.storage.topic":              group + "-configs",
		"offset.storage.topic":              group + "-offsets",
		"status.storage.topic":              group + "-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		"offset.storage.partitions":         "1",
		"status.storage.partitions":         "1",
		"offset.flush.interval.ms":          "1000",
		"listeners":                         "http://" + rest,
		// Plugins are found by their ServiceLoader manifests, not by
		// scanning every class on the classpath, which costs seconds.
		"plugin.discovery": "service_load",
	}
	for k, v := range extra {
		props[k] = v
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	// The file source connector's manifest, beside its compiled classes.
	manifest := t.TempDir()
	services := filepath.Join(manifest, "META-INF", "services")
	if err := os.MkdirAll(services, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(services, "org.apache.kafka.connect.source.SourceConnector"), []byte(KafkaConnectFileSource+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "connect-distributed.properties")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx384m",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", strings.Join([]string{manifest, connector, cp}, string(os.PathListSeparator)), "org.apache.kafka.connect.cli.ConnectDistributed", file)
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Kafka Connect: %v (%s)", err, javaToolsInstallHint)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("Kafka Connect output:\n%s", tail(out.String(), 8000))
		}
	})
	url := "http://" + rest
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			t.Fatalf("Kafka Connect exited before its REST API answered:\n%s", tail(out.String(), 8000))
		default:
		}
		if resp, err := http.Get(url + "/connectors"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("Kafka Connect's REST API did not answer within 3 minutes")
	return ""
}

// kafkaConnect resolves Connect's runtime (scripts/kafka/connect-pom.xml)
// and compiles the file source connector against it.
var kafkaConnect = javaLauncher{
	dir: "kafka", pom: "connect-pom.xml", main: KafkaConnectFileSource,
	cacheName: "kafka-connect-" + KafkaVersion, mvnArgs: []string{"-DincludeScope=runtime"},
	what: "Apache Kafka Connect " + KafkaVersion, installHint: javaToolsInstallHint,
}
