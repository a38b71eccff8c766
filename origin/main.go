// Command h2lab-origin is h2lab's own origin server: it replays a page manifest over HTTP/1.1
// (cleartext and TLS), HTTP/2 (TLS with ALPN, and cleartext with prior knowledge) and HTTP/3,
// with a choice of HTTP/2 write scheduler, server push, 103 Early Hints and response delays.
//
// Usage: h2lab-origin -config FILE [-tls 1.2|1.3]
//
// FILE is JSON (see Config; written by src/h2lab/servers/origin.py); -tls is the one TLS version
// the TCP listener (h1s, h2s) offers, 1.3 by default; HTTP/3 is TLS 1.3 whatever it says.
//
//	h2lab-origin -version
//
// It prints "h2lab-origin ready" on stdout once every listener is bound and exits with status 0
// on SIGTERM or SIGINT.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/http2"
)

// sourceHash is set at build time (-ldflags "-X main.sourceHash=...") by the adapter.
var sourceHash = "dev"

// Config is the JSON file the adapter writes.
type Config struct {
	Page     string         `json:"page"`      // page folder (manifest.json, bodies/)
	StateDir string         `json:"state_dir"` // unserved.log, frames.tsv, qlog/, control.sock
	Origins  []OriginConfig `json:"origins"`
	Ports    Ports          `json:"ports"`
	// Scheduler is the write scheduler: client, rr, fcfs or rfc9218 (sched.go, h3prio.go).
	Scheduler  string             `json:"scheduler"`
	Push       Selection          `json:"push"`
	EarlyHints Selection          `json:"early_hints"`
	DelayMS    map[string]float64 `json:"delay_ms"` // content class -> delay before the response
	ThinkMS    float64            `json:"think_ms"` // delay before every response
	FrameLog   bool               `json:"framelog"` // write <state_dir>/frames.tsv
	Qlog       bool               `json:"qlog"`     // write <state_dir>/qlog/<odcid>_server.sqlog
	// QuicCC asks quic-go for "cubic" or "reno" ("": its own, Reno); QuicInitcwndPackets for
	// an initial window in packets (0: its own, 32). Only in a build with the overlay.
	QuicCC              string `json:"quic_cc"`
	QuicInitcwndPackets int    `json:"quic_initcwnd_packets"`
	// EarlyData accepts 0-RTT requests over HTTP/3 (quic-go's Allow0RTT, off by default).
	EarlyData bool `json:"early_data"`
	// AltSvc are the hosts whose every response advertises HTTP/3 on the h3 port in an
	// Alt-Svc header (h2lab's discovery = "alt-svc": the browser learns h3 as shipped).
	AltSvc []string `json:"alt_svc"`
	// NotsentLowatBytes sets TCP_NOTSENT_LOWAT on accepted TCP connections (0: kernel default),
	// so that the HTTP/2 scheduler decides late what to send rather than filling the socket buffer.
	NotsentLowatBytes int `json:"notsent_lowat_bytes"`
	// ClientTimeoutS bounds the wait for a client: for the TLS handshake, and for a request's
	// header on an h1 connection, from the connection's start for its first request
	// (h2lab.servers.WRITE_TIMEOUT_S: on an emulated slow link a TLS 1.3 client may send its
	// request before the server has its Finished, and a preconnected socket may sit unused for
	// minutes); 0: 30 s.
	ClientTimeoutS float64 `json:"client_timeout_s"`
	// IdleTimeoutS is how long a connection with no request in progress is kept open
	// (h2lab.servers.IDLE_TIMEOUT_S: a response counts as sent once it is in the kernel's send
	// buffer, which on a slow link with a deep queue takes minutes to reach the client);
	// 0: 120 s.
	IdleTimeoutS float64 `json:"idle_timeout_s"`
}

// idleTimeout is cfg.IdleTimeoutS, or 120 s when it is not set.
func (cfg *Config) idleTimeout() time.Duration {
	if cfg.IdleTimeoutS > 0 {
		return time.Duration(cfg.IdleTimeoutS * float64(time.Second))
	}
	return 120 * time.Second
}

// OriginConfig is one origin: its hostname, the address it listens on and its certificate.
type OriginConfig struct {
	Host string `json:"host"`
	IP   string `json:"ip"`
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// Ports per protocol (0: not served).
type Ports struct {
	H1c int `json:"h1c"`
	TLS int `json:"tls"`
	H2c int `json:"h2c"`
	H3  int `json:"h3"`
}

// Selection names resources to push or hint: a rule (Rules) or request targets, or nothing.
type Selection struct {
	Rule  string   `json:"rule"`
	Paths []string `json:"paths"`
}

func (s Selection) resolve(p *Page) ([]*Resource, error) {
	switch {
	case s.Rule != "" && s.Rule != "none":
		return p.Select(s.Rule)
	case len(s.Paths) > 0:
		return p.Named(s.Paths)
	}
	return nil, nil
}

// Version is the one-line version: source hash, Go, x/net and quic-go versions.
func Version() string {
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			deps[d.Path] = d.Version
		}
	}
	return fmt.Sprintf("h2lab-origin %s %s x/net %s quic-go %s", sourceHash, runtime.Version(),
		deps["golang.org/x/net"], deps["github.com/quic-go/quic-go"])
}

func main() {
	configPath := flag.String("config", "", "JSON configuration file")
	version := flag.Bool("version", false, "print the version and exit")
	tlsFlag := flag.String("tls", "1.3",
		"the one TLS version of the TCP listener (h1s, h2s): 1.2 or 1.3 (HTTP/3: always 1.3)")
	flag.Parse()
	if *version {
		fmt.Println(Version())
		return
	}
	if *configPath == "" {
		fmt.Fprintln(os.Stderr, "h2lab-origin: -config FILE is required")
		os.Exit(2)
	}
	tlsVersion, err := parseTLSVersion(*tlsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "h2lab-origin:", err)
		os.Exit(2)
	}
	if err := run(*configPath, tlsVersion); err != nil {
		fmt.Fprintln(os.Stderr, "h2lab-origin:", err)
		os.Exit(1)
	}
}

func loadConfig(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	dec := json.NewDecoder(bytesReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

func run(configPath string, tlsVersion uint16) error {
	start := time.Now()
	cfg, err := loadConfig(configPath)
	if err != nil {
		return err
	}
	page, err := LoadPage(cfg.Page)
	if err != nil {
		return err
	}
	h := &Handler{Page: page, Delay: map[string]time.Duration{},
		Think: time.Duration(cfg.ThinkMS * float64(time.Millisecond))}
	if len(cfg.AltSvc) > 0 {
		h.AltSvc = map[string]string{}
		for _, host := range cfg.AltSvc {
			h.AltSvc[host] = fmt.Sprintf(`h3=":%d"; ma=86400`, cfg.Ports.H3)
		}
	}
	for class, ms := range cfg.DelayMS {
		h.Delay[class] = time.Duration(ms * float64(time.Millisecond))
	}
	if h.Push, err = cfg.Push.resolve(page); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	if h.Hints, err = cfg.EarlyHints.resolve(page); err != nil {
		return fmt.Errorf("early_hints: %w", err)
	}
	// A server pushes only what it is authoritative for: the entry document's origin (RFC 9113
	// §8.4); rules may also pick resources of other origins (early hints may name those).
	h.Push = slices.DeleteFunc(h.Push, func(r *Resource) bool { return r.Host != page.Entry.Host })
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return err
	}
	if h.Unserved, err = OpenUnservedLog(filepath.Join(cfg.StateDir, "unserved.log")); err != nil {
		return err
	}
	defer h.Unserved.Close()
	sched, ok := newScheduler(cfg.Scheduler)
	if !ok {
		return fmt.Errorf("unknown scheduler %q (known: client, rr, fcfs, rfc9218)", cfg.Scheduler)
	}
	h.H3Priority = h3Priority(cfg.Scheduler)
	if cfg.FrameLog {
		fl, err := OpenFrameLog(filepath.Join(cfg.StateDir, "frames.tsv"), start)
		if err != nil {
			return err
		}
		defer fl.Close()
		sched = fl.Wrap(sched)
	}
	if err := setQUICCongestionControl(cfg.QuicCC, cfg.QuicInitcwndPackets); err != nil {
		return err
	}
	ledger := newQUICLedger()
	// Without its socket (a path too long for one) the server serves all the same: its trials
	// count no QUIC packets.
	if control, err := ledger.serveControl(filepath.Join(cfg.StateDir, "control.sock")); err != nil {
		fmt.Fprintf(os.Stderr, "h2lab-origin: no control socket: %v\n", err)
	} else {
		defer control.Close()
	}
	var tracer func(context.Context, bool, quic.ConnectionID) qlogTrace
	if cfg.Qlog {
		tracer = qlogTracer(filepath.Join(cfg.StateDir, "qlog"), ledger)
	}

	srv := &server{errs: make(chan error, 1), cfg: cfg, tlsVersion: tlsVersion, handler: h,
		tracer: tracer, ledger: ledger, errorLog: log.New(os.Stderr, "h2lab-origin: ", 0),
		h2: h2Conns{
			srv: &http2.Server{
				// As nginx's http2_max_concurrent_streams in servers/nginx.py: every stream of
				// the largest synthetic page at once.
				MaxConcurrentStreams: 1000,
				IdleTimeout:          cfg.idleTimeout(),
			},
			sched: sched,
			sniff: sniffs(cfg.Scheduler),
		}}
	for _, o := range cfg.Origins {
		if err := srv.listen(o); err != nil {
			srv.close()
			return err
		}
	}
	fmt.Println("h2lab-origin ready")

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sigs:
		srv.close()
		return nil
	case err := <-srv.errs:
		srv.close()
		return err
	}
}
