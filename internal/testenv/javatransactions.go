package testenv

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// RunJavaTransactions runs scripts/kafka/JavaTransactions.java, Apache
// Kafka's Java transactional producer (args "produce", bootstrap, topic,
// transactional id, number of transactions) or consumer ("consume",
// bootstrap, topic, isolation level, records to read), in its own JVM, and
// returns what it printed on stdout. The test fails if it exits with an
// error or runs over three minutes.
func RunJavaTransactions(t testing.TB, args ...string) string {
	t.Helper()
	Needs(t, JVM)
	cp, classes, err := javaTransactions.classpath()
	if err != nil {
		t.Fatalf("Kafka's Java clients: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", append([]string{"-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx128m",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", classes + string(os.PathListSeparator) + cp, "JavaTransactions"}, args...)...)
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("JavaTransactions %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, tail(string(out), 4000), tail(stderr.String(), 4000))
	}
	return string(out)
}

// javaTransactions builds scripts/kafka/JavaTransactions.java on Kafka's
// clients (the tools' pom brings them).
var javaTransactions = javaLauncher{
	dir: "kafka", pom: "tools-pom.xml", main: "JavaTransactions",
	cacheName: "kafka-transactions-" + KafkaVersion, mvnArgs: []string{"-DincludeScope=runtime"},
	what: "Apache Kafka " + KafkaVersion + "'s clients", installHint: javaToolsInstallHint,
}
