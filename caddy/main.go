// Caddy 2.11 for h2lab's caddy@2.11 server (src/h2lab/servers/caddy.py): the stock command with
// Caddy's standard modules, built from the Go module proxy at the version go.mod pins. Debian 13's
// Caddy 2.6 has no qlog; 2.11's HTTP/3 server writes one per QUIC connection into QLOGDIR.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func main() {
	caddycmd.Main()
}
