#!/usr/bin/env bash
# Install whatever h2lab needs and is missing; quick and silent the second time.
#   Debian packages (apt-get), Rattan (cargo install --locked, pinned, cached), uv (pinned,
#   cached), the Python environment (.venv from uv.lock), two npm packages the tests check
#   against (pinned by their registry integrity, unpacked, never run by npm).
# --debian-only: the Debian packages and nothing else (the container image's own layer,
#   deploy/Containerfile: one list, this one).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${H2LAB_CACHE:-$HOME/.cache/h2lab}"
RATTAN_VERSION=0.1.1   # keep in sync with src/h2lab/net/rattan.py RATTAN_VERSION
UV_VERSION=0.13.8
# The Debian packages of the program records (src/h2lab/programs.py, where a program is
# declared): listed here because they are installed before the venv exists, and the container
# image installs them in a layer made before the sources are copied; tests/unit/test_programs.py
# holds this list equal to `python -m h2lab.programs --debian-packages`.
DEB_PACKAGES=(nginx h2o apache2 haproxy nghttp2-client curl iperf3 iproute2 iputils-ping unbound
              nftables publicsuffix util-linux procps chromium firefox-esr libnss3-tools apache2-doc
              default-jdk-headless maven   # the OkHttp client (okhttp/): Java 17+, Maven
              tcpdump tshark               # capture=pcap, and the tests that decode its pcaps
              mmdebstrap)                  # Debian 13's servers (below; src/h2lab/debian13.py)
# References the tests check h2lab against, from the npm registry as tarballs (no npm, no
# install scripts, no driver downloads): the HAR 1.2 JSON schema and browsertime's visualmetrics.
NPM_TARBALLS=(
  "har-schema 2.0.0 sha512-Oqluz6zhGX8cyRaTQlFMPw80bSJVG2x/cFb8ZPhUILGgHka9SsokCCOQgpveePerqidZOrT14ipqfJb7ILcW5Q=="
  "browsertime 28.3.0 sha512-Ko9Vd4qNt6ojP7UWrWAIVwYajFfKfwCGrIzmqFFML0RjegDaXINyHKXPBRjp+U2ux3URmxa7kj5jZSA2qQdmrw=="
)

mkdir -p "$CACHE"
t0=$(date +%s%N)
say() { printf 'setup: %s\n' "$*" >&2; }

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  # Servers are started by h2lab inside its namespaces, never as host services: keep the
  # packages' init scripts from starting them (policy-rc.d exit 101 = "action forbidden").
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; trap 'rm -f "$policy"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if trap -p EXIT | grep -q policy; then rm -f "$policy"; trap - EXIT; fi
fi
[ "${1:-}" = --debian-only ] && exit 0

RATTAN="$CACHE/rattan-$RATTAN_VERSION/bin/rattan"
if [ ! -x "$RATTAN" ]; then
  CARGO="$(command -v cargo || echo "$HOME/.cargo/bin/cargo")"
  # Rattan 0.1.1 needs Rust 1.86 or newer; Debian 12's rustc is 1.63 (rustup, or Debian 13's).
  RUSTC="$(dirname "$CARGO")/rustc"; [ -x "$RUSTC" ] || RUSTC="$(command -v rustc || true)"
  have="$("$RUSTC" --version 2>/dev/null | awk '{print $2}')"
  if [ ! -x "$CARGO" ] || [ -z "$have" ] \
     || [ "$(printf '%s\n1.86.0\n' "$have" | sort -V | head -1)" != 1.86.0 ]; then
    say "building Rattan $RATTAN_VERSION needs Rust >= 1.86 (cargo and rustc on PATH or in ~/.cargo/bin; found ${have:-none}): install it (https://rustup.rs), or put a built rattan at $RATTAN"
    exit 1
  fi
  say "building rattan $RATTAN_VERSION (cargo install --locked; a few minutes, once)"
  "$CARGO" install rattan --version "$RATTAN_VERSION" --locked --root "$CACHE/rattan-$RATTAN_VERSION" \
    >"$CACHE/rattan-build.log" 2>&1 || { tail -20 "$CACHE/rattan-build.log" >&2; exit 1; }
fi

# $CACHE/npm/<name>-<version>/ holds the package's files (the tarball's package/ folder).
for entry in "${NPM_TARBALLS[@]}"; do
  read -r name version integrity <<<"$entry"
  dest="$CACHE/npm/$name-$version"
  [ -d "$dest" ] && continue
  say "fetching $name $version from the npm registry"
  tmp="$(mktemp -d)"
  curl -fsS -o "$tmp/p.tgz" "https://registry.npmjs.org/$name/-/$name-$version.tgz"
  got="sha512-$(openssl dgst -sha512 -binary "$tmp/p.tgz" | base64 -w0)"
  [ "$got" = "$integrity" ] || { say "$name $version: integrity $got, expected $integrity"; exit 1; }
  tar xzf "$tmp/p.tgz" -C "$tmp" && mkdir -p "$CACHE/npm" && mv "$tmp/package" "$dest"
  rm -rf "$tmp"
done

UV="$CACHE/uv-$UV_VERSION/bin/uv"
if [ ! -x "$UV" ]; then
  say "installing uv $UV_VERSION"
  python3 -m venv "$CACHE/uv-$UV_VERSION"
  "$CACHE/uv-$UV_VERSION/bin/pip" install -q "uv==$UV_VERSION"
fi
# Debian's interpreter (package python3.11), not one under a home folder: every user can run
# the venv (a cluster driver needs no root), and it is the one the container image has.
UV_PYTHON_DOWNLOADS=never "$UV" sync --frozen --python /usr/bin/python3.11 --quiet

# h2lab's own origin server (Go, origin/): modules from the Go proxy once, then a build cached
# under $CACHE/origin-<source hash> (the adapter rebuilds when the sources change).
.venv/bin/python -c "from h2lab.servers.origin import ensure_built; ensure_built()" \
  || { say "building the Go origin server failed"; exit 1; }

# h2lab's OkHttp client (Java, okhttp/): OkHttp and the pinned Maven plugins from Maven Central
# once, then a jar cached under $CACHE/okhttp-<source hash> (the adapter rebuilds on a change).
.venv/bin/python -c "from h2lab.clients.okhttp_build import ensure_built; ensure_built()" \
  || { say "building the OkHttp client failed"; exit 1; }

# The Jetty server level (jetty/: Jetty 12.0, HTTP/3 over quiche, whose libquiche comes in a Maven
# jar): a jar and its libquiche under $CACHE/jetty-<source hash>, built once like the client's.
.venv/bin/python -c "from h2lab.servers.jetty import ensure_built; ensure_built()" \
  || { say "building the Jetty server failed"; exit 1; }

# Caddy 2.11 (caddy/: the stock command from the Go module proxy, as go.mod pins it), for
# caddy@2.11, whose HTTP/3 writes qlog (Debian 13's 2.6 does not): a binary under
# $CACHE/caddy-<source hash>, built once (about 2.5 min of one core).
.venv/bin/python -c "from h2lab.servers.caddy_build import ensure_built; ensure_built()" \
  || { say "building Caddy 2.11 failed"; exit 1; }

# Debian 13's nginx 1.26 (QUIC), HAProxy 3.0 (QUIC), curl 8.14 (HTTP/3) and Caddy 2.6 (quic-go
# 0.50), which Debian 12 lacks: their files once, under $CACHE/debian13-<hash>, each version
# checked; h2lab runs them through that folder's own loader (src/h2lab/debian13.py; the
# packages, paths and releases are records of src/h2lab/programs.py).
.venv/bin/python -c "from h2lab.debian13 import ensure_made; ensure_made()" \
  || { say "making Debian 13's root filesystem failed"; exit 1; }

# A shared installation: run as root, the builds above are published (hard links, read-only for
# everyone) in /var/cache/h2lab, where h2lab looks after the user's own cache
# (src/h2lab/paths.py: build_places), so every user of the machine runs h2lab with no build of
# their own. H2LAB_SYSTEM_CACHE names another place; H2LAB_NO_SYSTEM=1 skips it.
SYSTEM="${H2LAB_SYSTEM_CACHE:-/var/cache/h2lab}"
if [ "$(id -u)" = 0 ] && [ -z "${H2LAB_NO_SYSTEM:-}" ] \
   && [ "$(realpath -m "$SYSTEM")" != "$(realpath -m "$CACHE")" ]; then
  read -r origin okhttp jetty debian13 caddy < <(.venv/bin/python -c '
from h2lab import debian13
from h2lab.clients import okhttp_build
from h2lab.servers import caddy_build, jetty, origin
print(f"origin-{origin.source_hash(origin.SOURCE_DIR)}",
      okhttp_build.jar_path().parent.name, jetty.jar_path().parent.name, debian13.root().name,
      caddy_build.folder_name())')
  for name in "rattan-$RATTAN_VERSION/bin" "$origin" "$okhttp" "$jetty" "$debian13" "$caddy"; do
    [ -e "$SYSTEM/$name" ] || [ ! -d "$CACHE/$name" ] && continue
    say "publishing $name in $SYSTEM (for every user of this machine)"
    mkdir -p "$(dirname "$SYSTEM/$name")"
    tmp="$(dirname "$SYSTEM/$name")/.$(basename "$name").tmp-$$"
    cp -al "$CACHE/$name" "$tmp" 2>/dev/null || { rm -rf "$tmp"; cp -a "$CACHE/$name" "$tmp"; }
    mv "$tmp" "$SYSTEM/$name"
  done
  chmod 755 "$SYSTEM" "$SYSTEM/rattan-$RATTAN_VERSION" 2>/dev/null || true
fi

t1=$(date +%s%N)
say "ready in $(( (t1 - t0) / 1000000 )) ms (rattan $RATTAN_VERSION, $(nginx -v 2>&1 | cut -d/ -f2), h2load $(h2load --version | awk '{print $2}'))"
