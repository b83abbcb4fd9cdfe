package registry_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema/internal/srtest"
)

// TestDocsCopyRecipe runs the recipe of docs/pipeline.md for copying a registry
// (the block marked registry-recipe:copy, with bash, curl and jq) from one
// registry to an empty one: every version comes over with its id, version,
// type and references, ids left unused by hard deletes stay unused, and
// the next schema registered gets an id above every copied one; subjects
// of other contexts and data contracts come over too.
func TestDocsCopyRecipe(t *testing.T) {
	testenv.Needs(t, testenv.Program("bash"), testenv.Program("curl"))
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the recipe needs %s: %v", tool, err)
		}
	}
	recipe := docBlock(t, "../../docs/pipeline.md", "<!-- registry-recipe:copy -->")
	src, dst := srtest.Start(t), srtest.Start(t)

	call := func(base, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	must := func(base, method, path, body string) string {
		t.Helper()
		code, out := call(base, method, path, body)
		if code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, code, out)
		}
		return out
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	must(src.URL, "PUT", "/config", `{"compatibility":"NONE"}`)
	must(src.URL, "POST", "/subjects/gone/versions", `{"schema":"\"bytes\""}`) // id 1, hard-deleted below
	must(src.URL, "POST", "/subjects/com.example.Address/versions", `{"schema":`+q(addressAvro)+`}`)
	must(src.URL, "POST", "/subjects/people-value/versions", `{"schema":`+q(personAvro)+`,"references":[{"name":"com.example.Address","subject":"com.example.Address","version":1}]}`)
	must(src.URL, "POST", "/subjects/clicks%2Fvalue/versions", `{"schema":"{\"type\":\"object\"}","schemaType":"JSON"}`)
	must(src.URL, "POST", "/subjects/clicks%2Fvalue/versions", `{"schema":"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}","schemaType":"JSON"}`)
	// A subject in another context, with its own ids, and a data contract.
	must(src.URL, "POST", "/subjects/:.blue:pages/versions", `{"schema":"\"string\"","metadata":{"properties":{"owner":"web"}},"ruleSet":{"domainRules":[{"name":"r","type":"CEL","expr":"true","disabled":true}]}}`)
	must(src.URL, "DELETE", "/subjects/gone", "")
	must(src.URL, "DELETE", "/subjects/gone?permanent=true", "")

	script := strings.NewReplacer("http://old-registry:8081", src.URL, "http://127.0.0.1:8081", dst.URL).Replace(recipe)
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("recipe: %v\n%s", err, out)
	}
	if got, want := must(dst.URL, "GET", "/schemas", ""), must(src.URL, "GET", "/schemas", ""); got != want {
		t.Fatalf("after the copy the registries differ:\n got %s\nwant %s\nrecipe said:\n%s", got, want, out)
	}
	if got := must(dst.URL, "GET", "/mode", ""); strings.TrimSpace(got) != `{"mode":"READWRITE"}` {
		t.Errorf("mode after the recipe: %s", got)
	}
	if code, _ := call(dst.URL, "GET", "/schemas/ids/1", ""); code != 404 {
		t.Errorf("id 1, hard-deleted at the source, answers %d at the copy", code)
	}
	if got := must(dst.URL, "POST", "/subjects/new/versions", `{"schema":"\"long\""}`); strings.TrimSpace(got) != `{"id":6}` {
		t.Errorf("first registration after the copy: %s, want id 6", got)
	}
	// Run again, the copy changes nothing: every version answers with its id.
	must(dst.URL, "PUT", "/mode?force=true", `{"mode":"IMPORT"}`)
	again := strings.Replace(script, `$DST/mode;`, `"$DST/mode?force=true";`, 1)
	if out, err := exec.Command("bash", "-e", "-o", "pipefail", "-c", again).CombinedOutput(); err != nil || strings.Contains(string(out), "error_code") {
		t.Fatalf("recipe run again: %v\n%s", err, out)
	}
}

const (
	addressAvro = `{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}`
	personAvro  = `{"type":"record","name":"Person","namespace":"com.example","fields":[{"name":"home","type":"Address"}]}`
)

// docBlock returns the ```sh block that follows marker in path.
func docBlock(t *testing.T, path, marker string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), marker+"\n```sh\n")
	if !ok {
		t.Fatalf("%s has no ```sh block marked %s", path, marker)
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		t.Fatalf("%s: the block marked %s does not end", path, marker)
	}
	return block
}
