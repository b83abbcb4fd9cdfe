package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
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
		a := apiVersionsOf(key)
		if want := fmt.Sprintf("%d-%d", a.Min, a.Max); listed[key] != want {
			t.Errorf("docs/kafka-compatibility.md lists API key %d at %q, the broker serves %s", key, listed[key], want)
		}
		delete(listed, key)
	}
	for key := range listed {
		t.Errorf("docs/kafka-compatibility.md lists API key %d, which the broker does not serve", key)
	}
}

// Every relative link of README.md and docs/*.md names a file of the
// repository, and a #fragment a heading of the page it points to: moving
// or renaming a page or a section cannot leave a dead link behind.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	for _, bad := range brokenLinks(t, pages) {
		t.Error(bad)
	}
}

// The checker itself finds a missing file, a missing heading and a link
// into a fenced block is ignored, so TestDocsLinksResolve can fail.
func TestDocsLinksCheckerFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "a.md")
	text := "# A page\n\n## Its `second` section: here\n\n" +
		"[ok](#its-second-section-here) [ok](a.md#a-page) [web](https://example.com/x)\n" +
		"[gone](missing.md) [no heading](a.md#nowhere)\n\n```sh\necho [x](not-a-link.md)\n```\n"
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(brokenLinks(t, []string{page}), "\n")
	for _, want := range []string{"missing.md", "a.md#nowhere"} {
		if !strings.Contains(got, want) {
			t.Errorf("broken link %s not reported; got:\n%s", want, got)
		}
	}
	if n := len(brokenLinks(t, []string{page})); n != 2 {
		t.Errorf("%d broken links reported, want 2:\n%s", n, got)
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// brokenLinks returns, for each relative link of pages (outside fenced
// blocks) whose file or heading does not exist, "page:line: link".
func brokenLinks(t *testing.T, pages []string) []string {
	t.Helper()
	var bad []string
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				link := m[1]
				if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
					continue
				}
				target, frag, _ := strings.Cut(link, "#")
				file := page
				if target != "" {
					file = filepath.Join(filepath.Dir(page), target)
				}
				if _, err := os.Stat(file); err != nil {
					bad = append(bad, fmt.Sprintf("%s:%d: %s: %v", page, i+1, link, err))
					continue
				}
				if frag != "" && strings.HasSuffix(file, ".md") && !headingAnchors(t, file)[frag] {
					bad = append(bad, fmt.Sprintf("%s:%d: %s: %s has no such heading", page, i+1, link, file))
				}
			}
		}
	}
	return bad
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation but '-' and '_' dropped, spaces
// as '-', a repeated anchor suffixed -1, -2, ...
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		var slug strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		a := slug.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}
