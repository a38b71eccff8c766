package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Handler replays a page: every request is answered from the manifest (Page.Lookup), after
// the configured delays; the entry document's response carries the push promises and is
// preceded by a 103 Early Hints response, as configured.
type Handler struct {
	Page *Page
	// Push is pushed (HTTP/2 only) before the entry document's response.
	Push []*Resource
	// Hints are announced in a 103 with Link: rel=preload before the entry document's response.
	Hints []*Resource
	// Delay is added before the response headers of each resource of a content class.
	Delay map[string]time.Duration
	// Think is added before every response (server think time).
	Think    time.Duration
	Unserved *UnservedLog
	// H3Priority, when set, replaces the client's priority of every HTTP/3 response (h3prio.go).
	H3Priority *Urgency
	// AltSvc is the Alt-Svc header of every response, by host (none for a host not in it).
	AltSvc map[string]string
}

// UnservedLog is unserved.log: one "METHOD scheme://host/target" line per request that no
// resource answers (as nginx writes it).
type UnservedLog struct {
	mu sync.Mutex
	f  *os.File
}

func OpenUnservedLog(path string) (*UnservedLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &UnservedLog{f: f}, nil
}

func (l *UnservedLog) Write(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.f, line)
}

func (l *UnservedLog) Close() error { return l.f.Close() }

func requestTarget(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

func requestHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		return h
	}
	return r.Host
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.H3Priority != nil && r.ProtoMajor == 3 {
		setH3Priority(w, *h.H3Priority)
	}
	host, target := requestHost(r), requestTarget(r)
	if v, ok := h.AltSvc[host]; ok {
		w.Header().Set("Alt-Svc", v)
	}
	res := h.Page.LookupRequest(r, host, target)
	if res == nil {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		h.Unserved.Write(fmt.Sprintf("%s %s://%s%s", r.Method, scheme, host, target))
		http.Error(w, "404 not in the page manifest", http.StatusNotFound)
		return
	}
	if res == h.Page.Entry {
		h.hint(w)
		h.push(w, r)
	}
	if d := h.Think + h.Delay[res.Class()] + time.Duration(res.DelayMS*float64(time.Millisecond)); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	writeResource(w, res)
}

func (h *Handler) hint(w http.ResponseWriter) {
	if len(h.Hints) == 0 {
		return
	}
	hdr := w.Header()
	for _, res := range h.Hints {
		link := res.Target
		if res.Host != h.Page.Entry.Host {
			link = "//" + res.Host + res.Target
		}
		v := fmt.Sprintf("<%s>; rel=preload; as=%s", link, preloadAs(res))
		if preloadAs(res) == "font" {
			v += "; crossorigin" // fonts are fetched in CORS mode (HTML spec, "font" destination)
		}
		hdr.Add("Link", v)
	}
	w.WriteHeader(http.StatusEarlyHints)
	hdr.Del("Link")
}

func (h *Handler) push(w http.ResponseWriter, r *http.Request) {
	pusher, ok := w.(http.Pusher)
	if !ok || r.ProtoMajor != 2 || len(h.Push) == 0 {
		return
	}
	for _, res := range h.Push {
		// Fails when the client disabled push (SETTINGS_ENABLE_PUSH=0): nothing to do then.
		if err := pusher.Push(res.Target, nil); err != nil {
			return
		}
	}
}

// writeResource writes a recorded response: status, content type, kept headers, body.
func writeResource(w http.ResponseWriter, res *Resource) {
	hdr := w.Header()
	ct := res.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	hdr.Set("Content-Type", ct)
	for _, kv := range res.Headers {
		hdr.Add(kv[0], kv[1])
	}
	bodiless := res.Status < 200 || res.Status == http.StatusNoContent || res.Status == http.StatusNotModified
	redirect := res.Status >= 300 && res.Status < 400 && hdr.Get("Location") != ""
	if bodiless || redirect || res.Body == nil {
		hdr.Del("Content-Type")
		if !bodiless {
			hdr.Set("Content-Length", "0")
		}
		w.WriteHeader(res.Status)
		return
	}
	hdr.Set("Content-Length", strconv.Itoa(len(res.Body)))
	w.WriteHeader(res.Status)
	_, _ = w.Write(res.Body) // one Write: x/net queues the whole body as one DATA write request
}
