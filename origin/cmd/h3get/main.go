// Command h3get fetches URLs over HTTP/3 on one QUIC connection per origin and prints one line
// per URL: "status bytes ttfb_ms total_ms proto url". It is h2lab's HTTP/3 test client (Debian's
// curl has no HTTP/3); it does not verify certificates.
//
// Usage: h3get [-resolve host:ip]... URL...
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

type resolves map[string]string

func (r resolves) String() string { return fmt.Sprint(map[string]string(r)) }
func (r resolves) Set(v string) error {
	host, ip, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("want host:ip, got %q", v)
	}
	r[host] = ip
	return nil
}

func main() {
	res := resolves{}
	flag.Var(res, "resolve", "host:ip (repeatable)")
	timeout := flag.Duration("timeout", 30*time.Second, "overall deadline")
	flag.Parse()
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		QUICConfig:      &quic.Config{},
		Dial: func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if ip, ok := res[host]; ok {
				addr = net.JoinHostPort(ip, port)
			}
			return quic.DialAddrEarly(ctx, addr, tlsCfg, cfg)
		},
	}
	defer tr.Close()
	client := &http.Client{Transport: tr, Timeout: *timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	lines := make([]string, flag.NArg())
	var wg sync.WaitGroup
	failed := false
	var mu sync.Mutex
	for i, u := range flag.Args() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			var first time.Duration
			trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Since(start) }}
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), "GET", u, nil)
			if err == nil {
				var resp *http.Response
				if resp, err = client.Do(req); err == nil {
					n, rerr := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					err = rerr
					lines[i] = fmt.Sprintf("%d %d %.1f %.1f %s %s", resp.StatusCode, n,
						first.Seconds()*1000, time.Since(start).Seconds()*1000, resp.Proto, u)
				}
			}
			if err != nil {
				mu.Lock()
				failed = true
				mu.Unlock()
				lines[i] = fmt.Sprintf("error %s: %v", u, err)
			}
		}()
	}
	wg.Wait()
	for _, l := range lines {
		fmt.Println(l)
	}
	if failed {
		os.Exit(1)
	}
}
