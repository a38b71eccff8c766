package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Resource is one recorded response of a page manifest (docs/pages.md, format h2lab-page/1).
type Resource struct {
	URL         string       `json:"url"`
	Method      string       `json:"method"`
	Status      int          `json:"status"`
	ContentType string       `json:"content_type"`
	SizeBytes   int          `json:"size_bytes"`
	BodySHA256  *string      `json:"body_sha256"`
	Headers     [][2]string  `json:"headers"`
	DelayMS     float64      `json:"delay_ms"`
	Request     *RequestBody `json:"request"`

	Host   string `json:"-"` // lower-case hostname
	Path   string `json:"-"` // path as recorded (not decoded)
	Target string `json:"-"` // path and query, as recorded
	Body   []byte `json:"-"`
}

// Class is the content class used by per-type delays and push/hint rules.
func (r *Resource) Class() string { return contentClass(r.ContentType) }

func contentClass(ct string) string {
	ct = strings.ToLower(ct)
	switch {
	case strings.HasPrefix(ct, "text/html"), strings.HasPrefix(ct, "application/xhtml"):
		return "html"
	case strings.HasPrefix(ct, "text/css"):
		return "css"
	case strings.Contains(ct, "javascript"), strings.Contains(ct, "ecmascript"):
		return "js"
	case strings.HasPrefix(ct, "image/"):
		return "image"
	case strings.HasPrefix(ct, "font/"), strings.Contains(ct, "woff"), strings.Contains(ct, "opentype"),
		strings.Contains(ct, "truetype"):
		return "font"
	}
	return "other"
}

// Classes are the content classes a delay can name (delay_<class>).
var Classes = []string{"html", "css", "js", "image", "font", "other"}

// Page is a loaded manifest with every body in memory (bodies are written with one Write, so
// x/net queues a whole response at once and its write scheduler sees every ready stream).
type Page struct {
	Entry     *Resource
	Resources []*Resource
	exact     map[string]*Resource   // "METHOD host target"
	byBody    map[string][]*Resource // "METHOD host target" of requests recorded with a body
	byQuery   map[string][]*Resource // "METHOD host decoded-path", in recording order
	byPath    map[string]*Resource   // "host decoded-path"
}

type manifestFile struct {
	Format    string      `json:"format"`
	Entry     string      `json:"entry"`
	Resources []*Resource `json:"resources"`
}

// LoadPage reads <folder>/manifest.json and the bodies it names.
func LoadPage(folder string) (*Page, error) {
	raw, err := os.ReadFile(filepath.Join(folder, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m manifestFile
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if m.Format != "h2lab-page/1" {
		return nil, fmt.Errorf("manifest.json: format %q, expected h2lab-page/1", m.Format)
	}
	p := &Page{Resources: m.Resources, exact: map[string]*Resource{},
		byQuery: map[string][]*Resource{}, byPath: map[string]*Resource{},
		byBody: map[string][]*Resource{}}
	bodies := map[string][]byte{}
	for i, r := range p.Resources {
		u, err := url.Parse(r.URL)
		if err != nil {
			return nil, fmt.Errorf("manifest.json: resources[%d].url: %w", i, err)
		}
		r.Host = strings.ToLower(u.Hostname())
		r.Path = u.EscapedPath()
		if r.Path == "" {
			r.Path = "/"
		}
		r.Target = r.Path
		if u.RawQuery != "" {
			r.Target += "?" + u.RawQuery
		}
		if r.Method == "" {
			r.Method = "GET"
		}
		var file string
		if r.BodySHA256 != nil {
			// a body is named by its hash only, so a manifest cannot name a file outside
			// the page's folder (h2lab.pages.confine holds the same rules)
			if !sha256Hex.MatchString(*r.BodySHA256) {
				return nil, fmt.Errorf("resources[%d] body_sha256: expected 64 hex digits", i)
			}
			file = filepath.Join(folder, "bodies", *r.BodySHA256)
		} else if r.SizeBytes > 0 {
			return nil, fmt.Errorf("resources[%d] body_sha256: null, but size_bytes is not 0", i)
		}
		if file != "" {
			if b, ok := bodies[file]; ok {
				r.Body = b
			} else if r.Body, err = os.ReadFile(file); err != nil {
				return nil, fmt.Errorf("resources[%d] body: %w", i, err)
			}
			bodies[file] = r.Body
		}
		if _, ok := p.exact[r.Method+" "+r.Host+r.Target]; !ok {
			p.exact[r.Method+" "+r.Host+r.Target] = r
		}
		p.byBody[r.Method+" "+r.Host+r.Target] = append(p.byBody[r.Method+" "+r.Host+r.Target], r)
		key := r.Method + " " + r.Host + u.Path
		p.byQuery[key] = append(p.byQuery[key], r)
		if _, ok := p.byPath[r.Host+u.Path]; !ok {
			p.byPath[r.Host+u.Path] = r
		}
		if p.Entry == nil && sameURL(r.URL, m.Entry) {
			p.Entry = r
		}
	}
	if p.Entry == nil {
		return nil, fmt.Errorf("manifest.json: entry %q is not among the resources", m.Entry)
	}
	return p, nil
}

func sameURL(a, b string) bool {
	strip := func(s string) string { return strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://") }
	return strip(a) == strip(b)
}

// LookupRequest is Lookup of a request that may have a body: of several resources recorded for
// its method + host + target, the one its body matches (bestByBody; read here, at most
// maxRequestBody bytes); else Lookup.
func (p *Page) LookupRequest(r *http.Request, host, target string) *Resource {
	same := p.byBody[r.Method+" "+strings.ToLower(host)+target]
	if len(same) > 1 && r.Method != http.MethodGet && r.Method != http.MethodHead {
		return bestByBody(same, fingerprint(readBody(r), r.Header.Get("Content-Type")))
	}
	return p.Lookup(r.Method, host, target)
}

// Lookup is the replay rule of docs/pages.md: exact method + host + request target; else, of
// the resources with the same method, host and (decoded) path, the one whose query shares the
// longest prefix with the request's (the first of those; Mahimahi's rule, h2lab.pages.closest);
// else the first resource with the same host and path; else nil.
func (p *Page) Lookup(method, host, target string) *Resource {
	host = strings.ToLower(host)
	if r, ok := p.exact[method+" "+host+target]; ok {
		return r
	}
	path, query, _ := strings.Cut(target, "?")
	if dec, err := url.PathUnescape(path); err == nil {
		path = dec
	}
	if same := p.byQuery[method+" "+host+path]; len(same) > 0 {
		return closest(same, query)
	}
	return p.byPath[host+path]
}

// closest is the resource of same (not empty) whose raw query shares the longest prefix with
// query; the first of the longest.
func closest(same []*Resource, query string) *Resource {
	best, bestLen := same[0], -1
	for _, r := range same {
		_, q, _ := strings.Cut(r.Target, "?")
		n := 0
		for n < len(q) && n < len(query) && q[n] == query[n] {
			n++
		}
		if n > bestLen {
			best, bestLen = r, n
		}
	}
	return best
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

var refRE = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))`)

// references lists the page's resources the entry HTML refers to (href=, src=), in document
// order, each once.
func (p *Page) references() []*Resource {
	base, err := url.Parse(p.Entry.URL)
	if err != nil {
		return nil
	}
	var out []*Resource
	seen := map[*Resource]bool{}
	for _, m := range refRE.FindAllSubmatch(p.Entry.Body, -1) {
		ref := string(m[1]) + string(m[2]) + string(m[3])
		u, err := base.Parse(ref)
		if err != nil {
			continue
		}
		target := u.EscapedPath()
		if u.RawQuery != "" {
			target += "?" + u.RawQuery
		}
		if r := p.Lookup("GET", u.Hostname(), target); r != nil && !seen[r] && r != p.Entry {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// Rules name sets of resources to push or hint (seed 000, §6.2, Fig. 6): the single critical
// CSS file, every CSS and JS file, every image, or everything.
var Rules = []string{"critical-css", "css-js", "images", "all"}

// Select returns the resources a rule names: the entry document's subresources (GET, 200, with
// a body), those the entry HTML refers to first in document order, then the others in manifest
// order. critical-css is the first CSS file the entry refers to (or of the manifest).
func (p *Page) Select(rule string) ([]*Resource, error) {
	want := map[string]func(*Resource) bool{
		"critical-css": func(r *Resource) bool { return r.Class() == "css" },
		"css-js":       func(r *Resource) bool { c := r.Class(); return c == "css" || c == "js" },
		"images":       func(r *Resource) bool { return r.Class() == "image" },
		"all":          func(*Resource) bool { return true },
	}[rule]
	if want == nil {
		return nil, fmt.Errorf("unknown rule %q (known: %s)", rule, strings.Join(Rules, ", "))
	}
	var out []*Resource
	seen := map[*Resource]bool{}
	for _, r := range append(p.references(), p.Resources...) {
		if seen[r] || r == p.Entry || r.Method != "GET" || r.Status != 200 || r.Body == nil || !want(r) {
			continue
		}
		seen[r] = true
		out = append(out, r)
		if rule == "critical-css" {
			break
		}
	}
	return out, nil
}

// Named returns the resources of the entry's origin with the given request targets.
func (p *Page) Named(targets []string) ([]*Resource, error) {
	var out []*Resource
	for _, t := range targets {
		r := p.Lookup("GET", p.Entry.Host, t)
		if r == nil || r.Host != p.Entry.Host {
			return nil, fmt.Errorf("%s is not a resource of %s", t, p.Entry.Host)
		}
		out = append(out, r)
	}
	return out, nil
}

// preloadAs is the Link rel=preload "as" value for a resource (HTML spec, "as" keywords).
func preloadAs(r *Resource) string {
	switch r.Class() {
	case "css":
		return "style"
	case "js":
		return "script"
	case "image":
		return "image"
	case "font":
		return "font"
	}
	return "fetch"
}
