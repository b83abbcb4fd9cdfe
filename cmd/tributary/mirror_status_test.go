package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The status port answers from the start: 503 "starting" while the mirror
// is being built (looking in the target for what a killed mirror left),
// then the mirror's own status.
func TestMirrorStatusListensWhileStarting(t *testing.T) {
	st, err := listenStatus("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	get := func() (int, string) {
		resp, err := http.Get("http://" + st.addr.String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, `"starting"`) {
		t.Fatalf("while starting: %d %q, want 503 with the state starting", code, body)
	}
	st.ready(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"sources":[]}`) }))
	if code, body := get(); code != http.StatusOK || body != `{"sources":[]}` {
		t.Fatalf("once ready: %d %q, want the mirror's status", code, body)
	}
}
