package broker

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The table of served APIs in docs/kafka-compatibility.md is the
// registry's: every registered key at its versions, and nothing else.
func TestDocsListServedAPIs(t *testing.T) {
	doc, err := os.ReadFile("../docs/kafka-compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile(`\| [A-Za-z]+ \((\d+)\) \| (\d+)(?:–(\d+))?`)
	listed := map[int16]string{}
	for _, m := range cell.FindAllSubmatch(doc, -1) {
		key, _ := strconv.Atoi(string(m[1]))
		lo, hi := string(m[2]), string(m[3])
		if hi == "" {
			hi = lo
		}
		listed[int16(key)] = lo + "-" + hi
	}
	for _, key := range registeredKeys() {
		a := supported[key]
		if want := fmt.Sprintf("%d-%d", a.min, a.max); listed[key] != want {
			t.Errorf("docs/kafka-compatibility.md lists API key %d at %q, the broker serves %s", key, listed[key], want)
		}
		delete(listed, key)
	}
	for key := range listed {
		t.Errorf("docs/kafka-compatibility.md lists API key %d, which the broker does not serve", key)
	}
}
