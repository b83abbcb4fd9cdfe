package system_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// The "Securing Tributary" recipe of docs/security.md works as printed: its three
// marked shell blocks (setup, broker, clients) run with bash in an empty
// directory, with bin/tributary the binary under test and the broker's
// port a free one, and alice's records come back from our consumer and
// from kcat. The page cannot drift from the commands and flags it shows.
func TestDocsSecuringRecipe(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.Kcat, testenv.Program("bash"))
	for _, tool := range []string{"bash", "openssl", "kcat"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the recipe needs %s: %v", tool, err)
		}
	}
	blocks := docBlocks(t, "../../docs/security.md", "securing-recipe:")
	addr := testenv.FreeAddr(t)
	script := func(name string) string {
		t.Helper()
		s, ok := blocks[name]
		if !ok {
			t.Fatalf("docs/security.md has no block marked <!-- securing-recipe:%s -->", name)
		}
		s = strings.ReplaceAll(s, "bin/tributary", testenv.Binary(t))
		return strings.ReplaceAll(s, "127.0.0.1:9093", addr)
	}
	dir := t.TempDir()
	bash := func(name string) *exec.Cmd {
		cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script(name))
		cmd.Dir = dir
		return cmd
	}

	if out, err := bash("setup").CombinedOutput(); err != nil {
		t.Fatalf("setup block: %v\n%s", err, out)
	}

	// The broker block runs in its own process group, so that the broker
	// goes with bash whether or not bash ran it as a child.
	brokerCmd := bash("broker")
	brokerOut := &testenv.SyncBuffer{}
	brokerCmd.Stdout, brokerCmd.Stderr = brokerOut, brokerOut
	brokerCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := brokerCmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { brokerCmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-brokerCmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("broker block output:\n%s", brokerOut.String())
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("the broker block exited:\n%s", brokerOut.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker block listens not on %s after 60s:\n%s", addr, brokerOut.String())
		}
	}

	clients := bash("clients")
	var stderr strings.Builder
	clients.Stderr = &stderr
	out, err := clients.Output()
	if err != nil {
		t.Fatalf("clients block: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	// Our consumer's two records, the refusal, then kcat's three.
	const want = "order-1\norder-2\nalice may not write payments\norder-1\norder-2\norder-3\n"
	if !strings.HasSuffix(string(out), want) {
		t.Fatalf("clients block: stdout does not end with\n%s\ngot:\n%s\nstderr:\n%s", want, out, stderr.String())
	}
	for _, want := range []string{
		"ALLOW User:alice * WRITE topic literal orders",
		"ALLOW User:alice * READ topic literal orders",
	} {
		if !testenv.HasRow(string(out), want) {
			t.Fatalf("clients block: acls list lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("clients block: alice's produce to payments was not refused by the authorizer:\n%s", stderr.String())
	}
}

// docBlocks returns the fenced sh blocks of path each marked by an
// HTML comment `<!-- <prefix><name> -->` on the line before, by name.
func docBlocks(t *testing.T, path, prefix string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks := map[string]string{}
	var name string // of the block being read, or marked for the next line
	var body strings.Builder
	inBlock := false
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case inBlock && text == "```":
			blocks[name], name, inBlock = body.String(), "", false
			body.Reset()
		case inBlock:
			body.WriteString(text + "\n")
		case name != "" && text == "```sh":
			inBlock = true
		case name != "":
			t.Fatalf("%s:%d: the marker of block %q must be followed by a ```sh line", path, line, name)
		default:
			if m, ok := strings.CutPrefix(text, "<!-- "+prefix); ok {
				name = strings.TrimSuffix(m, " -->")
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inBlock {
		t.Fatalf("%s: block %q is not closed", path, name)
	}
	return blocks
}
