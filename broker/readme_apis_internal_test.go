package broker

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The README's table of served APIs is the registry's: every registered
// key at its versions, and nothing else.
func TestREADMEListsServedAPIs(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile(`\| [A-Za-z]+ \((\d+)\) \| (\d+)(?:–(\d+))?`)
	listed := map[int16]string{}
	for _, m := range cell.FindAllSubmatch(readme, -1) {
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
			t.Errorf("README lists API key %d at %q, the broker serves %s", key, listed[key], want)
		}
		delete(listed, key)
	}
	for key := range listed {
		t.Errorf("README lists API key %d, which the broker does not serve", key)
	}
}
