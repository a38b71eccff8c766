package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// writePage lays out a page folder: url -> (content type, body).
func writePage(t *testing.T, entry string, resources [][3]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bodies"), 0o755); err != nil {
		t.Fatal(err)
	}
	var rs []map[string]any
	for _, r := range resources {
		sum := sha256.Sum256([]byte(r[2]))
		sha := hex.EncodeToString(sum[:])
		if err := os.WriteFile(filepath.Join(dir, "bodies", sha), []byte(r[2]), 0o644); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, map[string]any{"url": r[0], "method": "GET", "status": 200,
			"content_type": r[1], "size_bytes": len(r[2]), "body_sha256": sha})
	}
	raw, _ := json.Marshal(map[string]any{"format": "h2lab-page/1", "entry": entry, "resources": rs})
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func testPage(t *testing.T) *Page {
	html := `<link rel=stylesheet href="/late.css"><link href='b.css' rel=stylesheet>` +
		`<script src="/s.js?v=1"></script><img src=//cdn.test/i.png>`
	p, err := LoadPage(writePage(t, "https://a.test/", [][3]string{
		{"https://a.test/", "text/html", html},
		{"https://a.test/b.css", "text/css", "b"},
		{"https://a.test/late.css", "text/css", "late"},
		{"https://a.test/s.js?v=1", "application/javascript", "s1"},
		{"https://a.test/s.js?v=2", "application/javascript", "s2"},
		{"https://a.test/a%20b.png", "image/png", "ab"},
		{"https://cdn.test/i.png", "image/png", "i"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLookupExactThenSamePathElseNothing(t *testing.T) {
	p := testPage(t)
	for _, c := range []struct{ host, target, want string }{
		{"a.test", "/s.js?v=2", "s2"},  // exact
		{"A.TEST", "/s.js?v=9", "s1"},  // same path, first recorded; host case-insensitive
		{"a.test", "/a%20b.png", "ab"}, // exact, as recorded
		{"a.test", "/a b.png", "ab"},   // same decoded path
		{"cdn.test", "/i.png", "i"},
	} {
		r := p.Lookup("GET", c.host, c.target)
		if r == nil || string(r.Body) != c.want {
			t.Errorf("%s%s: got %v, want body %q", c.host, c.target, r, c.want)
		}
	}
	if r := p.Lookup("GET", "a.test", "/missing"); r != nil {
		t.Errorf("/missing: got %s", r.URL)
	}
	if r := p.Lookup("POST", "a.test", "/b.css"); r == nil {
		t.Error("POST /b.css: another method falls back to the same path")
	}
}

func TestLookupByClosestQuery(t *testing.T) {
	p, err := LoadPage(writePage(t, "https://a.test/", [][3]string{
		{"https://a.test/", "text/html", "x"},
		{"https://a.test/poll?t=1520301377&x=a", "application/json", "first"},
		{"https://a.test/poll?t=1520301399&x=b", "application/json", "second"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ target, want string }{
		{"/poll?t=1520301390&x=a", "second"}, // "t=15203013" beats "t=1520301"
		{"/poll?t=1795656749&x=b", "first"},  // "t=1" ties: the first recorded
		{"/poll", "first"},
	} {
		if r := p.Lookup("GET", "a.test", c.target); r == nil || string(r.Body) != c.want {
			t.Errorf("%s: got %v, want body %q", c.target, r, c.want)
		}
	}
}

func urls(rs []*Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.URL)
	}
	return out
}

func TestRulesFollowTheEntryDocumentOrderThenTheManifest(t *testing.T) {
	p := testPage(t)
	for rule, want := range map[string][]string{
		"critical-css": {"https://a.test/late.css"},
		"css-js": {"https://a.test/late.css", "https://a.test/b.css", "https://a.test/s.js?v=1",
			"https://a.test/s.js?v=2"},
		"images": {"https://cdn.test/i.png", "https://a.test/a%20b.png"},
	} {
		got, err := p.Select(rule)
		if err != nil {
			t.Fatal(err)
		}
		if g := urls(got); len(g) != len(want) || func() bool {
			for i := range g {
				if g[i] != want[i] {
					return true
				}
			}
			return false
		}() {
			t.Errorf("%s: got %v, want %v", rule, g, want)
		}
	}
	if all, _ := p.Select("all"); len(all) != 6 {
		t.Errorf("all: got %d resources, want every one but the entry (6)", len(all))
	}
	if _, err := p.Select("fonts"); err == nil {
		t.Error("unknown rule accepted")
	}
}

func TestNamedPathsMustBeOnTheEntryOrigin(t *testing.T) {
	p := testPage(t)
	if got, err := p.Named([]string{"/b.css"}); err != nil || len(got) != 1 {
		t.Errorf("/b.css: %v %v", got, err)
	}
	if _, err := p.Named([]string{"/nope.css"}); err == nil {
		t.Error("/nope.css accepted")
	}
}

func TestContentClasses(t *testing.T) {
	for ct, want := range map[string]string{
		"text/html; charset=utf-8": "html", "text/css": "css", "application/javascript": "js",
		"text/javascript": "js", "image/webp": "image", "font/woff2": "font",
		"application/font-woff": "font", "application/json": "other",
	} {
		if got := contentClass(ct); got != want {
			t.Errorf("%s: got %s, want %s", ct, got, want)
		}
	}
}
