#!/usr/bin/env bash
# The container image's test (issue #34), outside CI: a first build takes about 3 minutes here.
# Builds h2lab:latest with scripts/build-image.sh (`make image`), runs `h2lab demo` in it with
# the results folder mounted from a folder that OWNER (not root) made, and checks what the
# caller gets: results.sqlite with the demo's trials all ok, report.html, every file OWNER's.
#   bench/image.sh [OWNER]     OWNER uid:gid, default $SUDO_UID:$SUDO_GID, else 65534:65534
# Prints build_s, image_mib, demo_s; exits 1 on a failed check. As root (podman rootful).
# The demo holds /tmp/h2lab-integration.lock, as every lab run on a shared machine does.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/podman-flags.sh

IMAGE="${H2LAB_IMAGE:-localhost/h2lab:latest}"
OWNER="${1:-${SUDO_UID:-65534}:${SUDO_GID:-65534}}"
DEMO_TRIALS=24   # experiments/demo.toml: 2 protocols x 2 networks x 2 clients x 3 repetitions
fail() { echo "image: FAIL: $*" >&2; exit 1; }

t0=$(date +%s)
scripts/build-image.sh
t1=$(date +%s)
size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")

out="$(mktemp -d /tmp/h2lab-image-bench.XXXXXX)"
chown "$OWNER" "$out"
exec 9>/tmp/h2lab-integration.lock
flock 9   # the demo's time starts once the lock is ours
t2=$(date +%s)
"${PODMAN[@]}" run --rm "${ULIMITS[@]}" --network=none --shm-size=1g \
  --cap-add=NET_ADMIN,NET_RAW,SYS_ADMIN -v "$out:/results" "$IMAGE" h2lab demo 9>&- \
  | tee "$out.log"
t3=$(date +%s)
exec 9>&-

demo="$out/h2lab-out/demo"
[ -s "$demo/report.html" ] || fail "no $demo/report.html"
ok=$(python3 -c 'import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(db.execute("SELECT COUNT(*) FROM trials WHERE status = '"'ok'"' AND warmup = 0").fetchone()[0])
' "$demo/results.sqlite")
[ "$ok" -ge "$DEMO_TRIALS" ] || fail "$ok trials ok in $demo/results.sqlite, expected $DEMO_TRIALS"
others=$(find "$out" \( ! -uid "${OWNER%:*}" -o ! -gid "${OWNER#*:}" \) -printf '%u:%g %p\n')
[ -z "$others" ] || fail "files not owned by $OWNER: $(head -3 <<<"$others")"
files=$(find "$out" | wc -l)

echo "build_s=$((t1 - t0)) image_mib=$((size / 1048576)) demo_s=$((t3 - t2))"
echo "results: $demo ($files entries, all $OWNER; $ok trials ok; report.html)"
rm -rf "$out" "$out.log"
