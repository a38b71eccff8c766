#!/usr/bin/env bash
# Build h2lab's container image from this checkout, in one command: `make image`
# (docs/container.md). As root, on Debian 12; no image registry needed:
#   1. installs the builder it lacks: Debian's podman (with catatonit), mmdebstrap, and runc
#      where crun cannot run (deploy/podman-flags.sh);
#   2. runs scripts/setup.sh on this host: Rattan, the Go origin server and the OkHttp jar, pinned
#      and cached there (Debian 12's rustc 1.63 and go 1.19 cannot build Rattan 0.1.1 or
#      origin/, which needs Go 1.26);
#   3. makes the base image once: Debian 12 (bookworm) minbase from deb.debian.org by
#      mmdebstrap, imported as localhost/h2lab-base:bookworm (kept; `podman rmi` it to remake);
#   4. builds deploy/Containerfile on it with those three builds as a second build context.
# Environment: H2LAB_IMAGE (default localhost/h2lab:latest), H2LAB_CACHE (as setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${H2LAB_IMAGE:-localhost/h2lab:latest}"
BASE=localhost/h2lab-base:bookworm
SUITE=bookworm
MIRROR=http://deb.debian.org
CACHE="${H2LAB_CACHE:-$HOME/.cache/h2lab}"
STAGE="$CACHE/image-context"   # the second build context: what the image's cache gets
say() { printf 'build-image: %s\n' "$*" >&2; }
t0=$(date +%s)

if [ "$(id -u)" != 0 ]; then
  echo "build-image: run as root (apt-get, mmdebstrap, podman's storage)" >&2
  exit 2
fi

# 1. The builder, from Debian (runc on a cgroup v1/hybrid host: deploy/podman-flags.sh).
source deploy/podman-flags.sh
tools=()
command -v podman >/dev/null || tools+=(podman catatonit)
command -v mmdebstrap >/dev/null || tools+=(mmdebstrap)
[ "${PODMAN[*]}" = podman ] || command -v runc >/dev/null || tools+=(runc)
if [ ${#tools[@]} -gt 0 ]; then
  say "installing ${tools[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${tools[@]}" \
    >/dev/null
fi

# 2. The pinned builds, on this host (quick when they are cached).
scripts/setup.sh

# 3. The base, once. A file first: a failed mmdebstrap must not leave a half image behind.
if ! "${PODMAN[@]}" image exists "$BASE"; then
  say "making $BASE: Debian $SUITE minbase from $MIRROR (mmdebstrap)"
  tar="$(mktemp /var/tmp/h2lab-base.XXXXXX.tar)"
  trap 'rm -f "$tar"' EXIT
  mmdebstrap --quiet --variant=minbase --format=tar "$SUITE" "$tar" \
    "deb $MIRROR/debian $SUITE main" \
    "deb $MIRROR/debian $SUITE-updates main" \
    "deb $MIRROR/debian-security $SUITE-security main"
  "${PODMAN[@]}" import --quiet --change 'CMD ["/bin/bash"]' \
    --message "Debian $SUITE minbase, mmdebstrap $(mmdebstrap --version | awk '{print $2}')" \
    "$tar" "$BASE" >/dev/null
  rm -f "$tar"
  trap - EXIT
fi

# 4. The image. Rattan loses its debug info (169 MB -> 13 MB); mtimes are kept so that an
# unchanged build is a cached layer.
read -r rattan origin jar debian13 < <(.venv/bin/python -c '
from h2lab import debian13
from h2lab.clients import okhttp_build
from h2lab.net.rattan import RATTAN_VERSION
from h2lab.servers import origin
print(f"rattan-{RATTAN_VERSION}", origin.ensure_built(), okhttp_build.ensure_built(),
      debian13.ensure_made())')
rm -rf "$STAGE"
for f in "$origin" "$jar"; do
  d="$STAGE/$(basename "$(dirname "$f")")"
  mkdir -p "$d" && cp -p "$f" "$d/"
done
mkdir -p "$STAGE/$rattan/bin"
strip --strip-debug -o "$STAGE/$rattan/bin/rattan" "$CACHE/$rattan/bin/rattan"
touch -r "$CACHE/$rattan/bin/rattan" "$STAGE/$rattan/bin/rattan"
cp -a "$CACHE/npm" "$STAGE/"
cp -a "$debian13" "$STAGE/"   # Debian 13's programs (their records: src/h2lab/programs.py)
say "building $IMAGE from deploy/Containerfile on $BASE"
# The checkout's commit, for `h2lab --version` and every trial (src/h2lab/version.py).
commit="$(.venv/bin/python -c 'from h2lab.version import commit; print(commit())')"
# The host's CA bundle for PyPI over TLS (with any local CA of the host's: an egress proxy's).
"${PODMAN[@]}" build --network=host "${ULIMITS[@]}" --layers --build-context artifacts="$STAGE" \
  --build-arg H2LAB_COMMIT="$commit" \
  --secret id=ca-certificates,src=/etc/ssl/certs/ca-certificates.crt \
  -f deploy/Containerfile -t "$IMAGE" .
# The layers of earlier builds that no image uses any more (after a source change, about 1 GB).
"${PODMAN[@]}" image prune -f --filter label=io.h2lab.image=h2lab >/dev/null
t1=$(date +%s)
size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
say "built $IMAGE in $((t1 - t0)) s, $((size / 1048576)) MiB"
