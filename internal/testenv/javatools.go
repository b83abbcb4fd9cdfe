package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// KafkaVersion is the Apache Kafka release whose command-line tools the
// compatibility tests run.
const KafkaVersion = "4.4.0"

// Main classes of Apache Kafka's tools, as the kafka-*.sh scripts run them.
const (
	KafkaTopics          = "org.apache.kafka.tools.TopicCommand"                        // kafka-topics.sh
	KafkaConfigs         = "org.apache.kafka.tools.ConfigCommand"                       // kafka-configs.sh
	KafkaGetOffsets      = "org.apache.kafka.tools.GetOffsetShell"                      // kafka-get-offsets.sh
	KafkaDeleteRecords   = "org.apache.kafka.tools.DeleteRecordsCommand"                // kafka-delete-records.sh
	KafkaConsumerGroups  = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand" // kafka-consumer-groups.sh
	KafkaLogDirs         = "org.apache.kafka.tools.LogDirsCommand"                      // kafka-log-dirs.sh
	KafkaReassign        = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"  // kafka-reassign-partitions.sh
	KafkaAcls            = "org.apache.kafka.tools.AclCommand"                          // kafka-acls.sh
	KafkaConsoleProducer = "org.apache.kafka.tools.ConsoleProducer"                     // kafka-console-producer.sh
	KafkaConsoleConsumer = "org.apache.kafka.tools.consumer.ConsoleConsumer"            // kafka-console-consumer.sh
)

// KafkaToolRun is one run of a Kafka tool: its main class and arguments,
// and what it reads on standard input (kafka-console-producer reads its
// records there). A run without Stdin reads an empty input, never the
// launcher's own.
type KafkaToolRun struct {
	Class string
	Args  []string
	Stdin string
}

// KafkaToolResult is what one run left: its exit code and output.
type KafkaToolResult struct {
	Run    KafkaToolRun
	Exit   int
	Stdout string
	Stderr string
}

func (r KafkaToolResult) String() string {
	return fmt.Sprintf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", r.Run.Class, strings.Join(r.Run.Args, " "), r.Exit, r.Stdout, r.Stderr)
}

// javaToolsInstallHint says how to get what RunKafkaTools needs.
const javaToolsInstallHint = "apt-get install -y default-jdk-headless maven (scripts/install-deps.sh does it); Maven then fetches Kafka's tools from Maven Central once"

// RunKafkaTools runs Apache Kafka's command-line tools one after another
// in one JVM (a JVM start costs seconds; a tool run in a warm JVM far
// less) and returns each run's exit code and output, in order. Each run
// sees the effects of those before it. The tools' jars come from Maven
// Central on first use and are cached in ~/.m2; the classpath and the
// compiled launcher are cached under the user cache directory.
func RunKafkaTools(t testing.TB, runs ...KafkaToolRun) []KafkaToolResult {
	t.Helper()
	Needs(t, JVM)
	cp, classes, err := kafkaTools.classpath()
	if err != nil {
		t.Fatalf("Kafka's tools: %v", err)
	}
	var in bytes.Buffer
	stdinDir := ""
	for i, r := range runs {
		fields := append([]string{r.Class}, r.Args...)
		for _, a := range fields {
			if strings.ContainsAny(a, "\n\x1f") {
				t.Fatalf("argument %q of %s holds a newline or 0x1f, which the launcher uses as separators", a, r.Class)
			}
		}
		if r.Stdin != "" {
			// The launcher reads the runs on its own standard input, so
			// a run's input goes through a file named in a first field.
			if stdinDir == "" {
				stdinDir = t.TempDir()
			}
			f := filepath.Join(stdinDir, fmt.Sprintf("stdin-%d", i))
			if err := os.WriteFile(f, []byte(r.Stdin), 0o600); err != nil {
				t.Fatal(err)
			}
			if strings.ContainsAny(f, "\n\x1f") {
				t.Fatalf("temporary file %q holds a newline or 0x1f", f)
			}
			fields = append([]string{"stdin=" + f}, fields...)
		}
		in.WriteString(strings.Join(fields, "\x1f"))
		in.WriteByte('\n')
	}
	// Warnings and errors of the tools' clients go to the run's stderr
	// (slf4j-simple writes to System.err as it is at each line).
	cmd := exec.Command("java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx256m",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", classes+string(os.PathListSeparator)+cp, "KafkaToolBatch")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting java: %v (%s)", err, javaToolsInstallHint)
	}
	timer := time.AfterFunc(5*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	results, perr := readToolResults(bufio.NewReader(out), runs)
	werr := cmd.Wait()
	if perr != nil || werr != nil || len(results) != len(runs) {
		t.Fatalf("running Kafka's tools: %v %v; %d of %d runs reported\njava stderr:\n%s", perr, werr, len(results), len(runs), tail(stderr.String(), 4000))
	}
	return results
}

// readToolResults reads the launcher's "RUN <exit> <out> <err>" records.
func readToolResults(r *bufio.Reader, runs []KafkaToolRun) ([]KafkaToolResult, error) {
	var results []KafkaToolResult
	for len(results) < len(runs) {
		line, err := r.ReadString('\n')
		if err != nil {
			return results, err
		}
		var res KafkaToolResult
		var no, ne int
		if _, err := fmt.Sscanf(line, "RUN %d %d %d\n", &res.Exit, &no, &ne); err != nil {
			return results, fmt.Errorf("launcher line %q: %w", line, err)
		}
		buf := make([]byte, no+ne)
		if _, err := io.ReadFull(r, buf); err != nil {
			return results, err
		}
		res.Run, res.Stdout, res.Stderr = runs[len(results)], string(buf[:no]), string(buf[no:])
		results = append(results, res)
	}
	return results, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// kafkaTools runs Kafka's command-line tools in one JVM (scripts/kafka).
var kafkaTools = javaLauncher{
	dir: "kafka", pom: "tools-pom.xml", main: "KafkaToolBatch",
	cacheName: "kafka-tools-" + KafkaVersion, mvnArgs: []string{"-DincludeScope=runtime"},
	what: "Apache Kafka " + KafkaVersion + "'s tools", installHint: javaToolsInstallHint,
}
