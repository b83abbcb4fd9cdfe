package testenv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// KafkaStreamsApp is scripts/kafka/StreamsWordCount.java, a stateful Kafka
// Streams application (word count: a repartition by word, then a count
// kept in a changelog-backed store), running as its own JVM.
type KafkaStreamsApp struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *SyncBuffer
	done  chan struct{}
	err   error // the process's exit, once done is closed
}

// StartKafkaStreamsWordCount starts the word-count application with
// application id appID against bootstrap: it counts the words of input's
// lines and writes every count update to output (key: the word; value:
// the count, an 8-byte big-endian long). Streams creates the internal
// topics appID-words-repartition and appID-counts-changelog itself. The
// jars come from Maven Central on first use (cached in ~/.m2; the
// classpath and the compiled application under the user cache directory).
// The application is killed at the end of the test if still running; its
// output is logged if the test fails. A guarantee (exactly_once_v2) sets
// processing.guarantee.
func StartKafkaStreamsWordCount(t testing.TB, bootstrap, appID, input, output string, guarantee ...string) *KafkaStreamsApp {
	t.Helper()
	Needs(t, JVM)
	cp, classes, err := kafkaStreams.classpath()
	if err != nil {
		t.Fatalf("Kafka Streams: %v", err)
	}
	args := []string{"-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx256m",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", classes + string(os.PathListSeparator) + cp,
		"StreamsWordCount", bootstrap, appID, t.TempDir(), input, output}
	cmd := exec.Command("java", append(args, guarantee...)...)
	app := &KafkaStreamsApp{cmd: cmd, out: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = app.out, app.out
	if app.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the Kafka Streams application: %v (%s)", err, javaToolsInstallHint)
	}
	go func() { app.err = cmd.Wait(); close(app.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-app.done
		if t.Failed() {
			t.Logf("Kafka Streams application output:\n%s", tail(app.out.String(), 8000))
		}
	})
	return app
}

// Done is closed when the application has exited. It exits on its own
// only when Streams failed.
func (a *KafkaStreamsApp) Done() <-chan struct{} { return a.done }

// Output is what the application printed so far (its state changes, and
// Streams' warnings and errors).
func (a *KafkaStreamsApp) Output() string { return a.out.String() }

// Kill stops the application with SIGKILL (kill -9): nothing committed,
// no group left, its open transaction left for the broker to abort.
func (a *KafkaStreamsApp) Kill() {
	a.cmd.Process.Kill()
	<-a.done
}

// Close asks the application to close Streams cleanly (which commits its
// offsets and leaves its group) and waits for it to exit. It reports an
// error if the application failed or did not exit within a minute.
func (a *KafkaStreamsApp) Close() error {
	a.stdin.Close()
	select {
	case <-a.done:
	case <-time.After(time.Minute):
		a.cmd.Process.Kill()
		<-a.done
		return fmt.Errorf("the Kafka Streams application did not close within a minute")
	}
	if a.err != nil {
		return fmt.Errorf("the Kafka Streams application exited: %v", a.err)
	}
	return nil
}

// kafkaStreams builds and runs scripts/kafka/StreamsWordCount.java.
var kafkaStreams = javaLauncher{
	dir: "kafka", pom: "streams-pom.xml", main: "StreamsWordCount",
	cacheName: "kafka-streams-" + KafkaVersion, mvnArgs: []string{"-DincludeScope=runtime"},
	what: "Apache Kafka Streams " + KafkaVersion, installHint: javaToolsInstallHint,
}
