// Command h3prio is h2lab's scripted HTTP/3 client for the RFC 9218 priority test
// (src/h2lab/reprio/rfc9218.py): on one QUIC connection it asks for the early URLs at once with
// one priority field, waits until it has received -late-after bytes of their bodies, then asks
// for the late URLs with another, and prints one JSON line per URL: when it was requested and
// when its last byte came (ms from the first request), its status and bytes. It does not verify
// certificates.
//
// Usage: h3prio -resolve host:ip -early-priority "u=5, i" -late-priority "u=0" \
//
//	-late-after BYTES -late N URL...   (the last N URLs are the late ones)
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

type result struct {
	URL         string  `json:"url"`
	Late        bool    `json:"late"`
	RequestedMS float64 `json:"requested_ms"`
	EndedMS     float64 `json:"ended_ms"`
	Status      int     `json:"status"`
	Bytes       int64   `json:"bytes"`
	Proto       string  `json:"proto"`
	Error       string  `json:"error,omitempty"`
}

type fetcher struct {
	client    *http.Client
	ctx       context.Context
	start     time.Time
	earlyRead atomic.Int64
	lateAfter int64
	lateGo    chan struct{}
	lateOnce  sync.Once
}

func (f *fetcher) ms() float64 { return float64(time.Since(f.start).Microseconds()) / 1000 }

func (f *fetcher) fetch(url, priority string, late bool) result {
	r := result{URL: url, Late: late, RequestedMS: f.ms()}
	req, err := http.NewRequestWithContext(f.ctx, "GET", url, nil)
	if err == nil {
		req.Header.Set("Priority", priority)
		var resp *http.Response
		if resp, err = f.client.Do(req); err == nil {
			r.Status, r.Proto = resp.StatusCode, resp.Proto
			r.Bytes, err = f.read(resp.Body, late)
			resp.Body.Close()
		}
	}
	r.EndedMS = f.ms()
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// read drains a body, counting an early one's bytes towards the late requests' start.
func (f *fetcher) read(body io.Reader, late bool) (int64, error) {
	buf := make([]byte, 16<<10)
	var n int64
	for {
		k, err := body.Read(buf)
		n += int64(k)
		if !late && f.earlyRead.Add(int64(k)) >= f.lateAfter {
			f.lateOnce.Do(func() { close(f.lateGo) })
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func main() {
	resolve := flag.String("resolve", "", "host:ip")
	earlyPrio := flag.String("early-priority", "u=5, i", "priority field of the early requests")
	latePrio := flag.String("late-priority", "u=0", "priority field of the late requests")
	lateAfter := flag.Int64("late-after", 0, "early body bytes received before the late requests")
	nLate := flag.Int("late", 0, "how many of the URLs (the last) are late")
	timeout := flag.Duration("timeout", 60*time.Second, "overall deadline")
	flag.Parse()
	urls := flag.Args()
	host, ip, _ := strings.Cut(*resolve, ":")
	if *nLate < 0 || *nLate > len(urls) {
		fmt.Fprintln(os.Stderr, "h3prio: -late must be between 0 and the number of URLs")
		os.Exit(2)
	}
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		QUICConfig:      &quic.Config{},
		Dial: func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			if h, port, err := net.SplitHostPort(addr); err == nil && h == host {
				addr = net.JoinHostPort(ip, port)
			}
			return quic.DialAddrEarly(ctx, addr, tlsCfg, cfg)
		},
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	f := &fetcher{client: &http.Client{Transport: tr}, ctx: ctx, start: time.Now(),
		lateAfter: *lateAfter, lateGo: make(chan struct{})}
	early, late := urls[:len(urls)-*nLate], urls[len(urls)-*nLate:]
	results := make([]result, len(urls))
	var wg sync.WaitGroup
	for i, u := range early {
		wg.Go(func() { results[i] = f.fetch(u, *earlyPrio, false) })
	}
	select {
	case <-f.lateGo:
	case <-ctx.Done():
	}
	for i, u := range late {
		wg.Go(func() { results[len(early)+i] = f.fetch(u, *latePrio, true) })
	}
	wg.Wait()
	failed := false
	enc := json.NewEncoder(os.Stdout)
	for _, r := range results {
		failed = failed || r.Error != ""
		_ = enc.Encode(r)
	}
	if failed {
		os.Exit(1)
	}
}
