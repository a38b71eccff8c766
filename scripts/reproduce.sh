#!/usr/bin/env bash
# Run every seed experiment (experiments/seeds/*.toml, full variants) into reproduction/<name>/,
# each ending with its report (reproduction/<name>/report.html). Resumable: rerunning skips the
# trials already stored in reproduction/<name>/results.sqlite; a folder that kept only its
# trials.csv (git keeps no store) gets its store back first (h2lab restore). Prints each
# experiment's wall time and the total. Not part of CI (many hours; see REPRODUCTION.md).
#
#   scripts/reproduce.sh                 # all of them (make reproduce)
#   scripts/reproduce.sh 001-push 000-table2-header-bytes   # a subset, by file name
#   scripts/reproduce.sh h3-where        # beyond the seeds: experiments/h3-where.toml
#   REPRO_OUT=/data/repro scripts/reproduce.sh              # another results folder
set -u
cd "$(dirname "$0")/.."
H2LAB=.venv/bin/h2lab
OUT=${REPRO_OUT:-reproduction}
mkdir -p "$OUT"

if [ $# -gt 0 ]; then
    files=()
    for name in "$@"; do
        f="experiments/seeds/${name%.toml}.toml"
        # beyond the seeds (REPRODUCTION.md): experiments/h3-where.toml, by name only
        [ -f "$f" ] || [ ! -f "experiments/${name%.toml}.toml" ] || f="experiments/${name%.toml}.toml"
        [ -f "$f" ] || { echo "reproduce: no such experiment: $f" >&2; exit 2; }
        files+=("$f")
    done
else
    files=(experiments/seeds/*.toml)
fi

# Seed 001's grid waits on 1 Mbit/s links with a light client (h2load), so it runs as
# REPRO_JOBS (default 6 for it, 3 for the others) concurrent shards, each in its own lab
# (h2lab run --jobs). bench/jobs.py found its 1 Mbit/s cells the same sharded as serial
# (3 shards: medians within 2.4%, n = 4, 2.7x faster; 6 shards: loss-free ones within 0.1%,
# lossy ones x0.999-1.100 with every 95% CI of jobs/serial containing 1, 4.95x faster), and its
# lossy 10 Mbit/s cells too (bench/jobs-lossy.toml, 3 shards, n = 12: medians 0.85-1.05,
# every cell's 95% CI of jobs/serial contains 1); REPRO_JOBS=1 runs it serially.
# Chromium on cellular poor (136 kbit/s) waits on the link: bench/jobs-chromium.toml found 3
# Chromium shards within 2.4% of serial there (sharded/serial plt 1.008-1.024, n = 6), against
# 1.4-2.0x on cellular good, where the browser renders. So seed 000's Fig. 5 (cell-poor only)
# runs as shards, and the Chromium files with cell-poor beside faster networks run their
# cell-poor cells first as shards (h2lab run --only network=cell-poor), then the rest serially.
# Seed 002's delays of 250 ms and more wait on round trips (40 h2load clients, machine busy
# 10-25%): bench/jobs-awp.toml found 3 shards 2.76x faster with pdt medians x0.92-1.05 of serial
# (n = 6, every cell's 95% CI of jobs/serial contains 1), so those 24 networks run first as
# shards, the shorter delays serially.
jobs_for() {
    case "$1" in
        001-table1-factor-grid) echo "${REPRO_JOBS:-6}" ;;
        000-fig5-prioritization) echo "${REPRO_JOBS:-3}" ;;
        *) echo 1 ;;
    esac
}
# The trials an experiment runs first as REPRO_JOBS shards (--only selections, one per line),
# before the rest serially: the cells that wait on the link, not on the CPU.
sharded_first() {
    case "$1" in
        000-fig1-images-hol | corpus-real-pages) echo "network=cell-poor" ;;
        002-average-web-page) printf 'network=s002-%sms-*\n' 250 300 500 1000 ;;
    esac
}

fmt() { printf '%dh %02dm %02ds' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60)); }

start_all=$(date +%s)
failed=()
summary=()
for f in "${files[@]}"; do
    name=$(basename "$f" .toml)
    echo "== $name -> $OUT/$name ($($H2LAB validate "$f" | sed 's/.*: //'))"
    t0=$(date +%s)
    if [ ! -s "$OUT/$name/results.sqlite" ] && [ -f "$OUT/$name/trials.csv" ]; then
        $H2LAB restore "$OUT/$name" || {
            failed+=("$name"); summary+=("$(printf '%-32s %s' "$name" "RESTORE FAILED")"); continue
        }
    fi
    status=ok
    first=()
    while read -r selection; do first+=(--only "$selection"); done < <(sharded_first "$name")
    if [ ${#first[@]} -gt 0 ]; then
        $H2LAB run "$f" --out "$OUT/$name" "${first[@]}" --jobs "${REPRO_JOBS:-3}" ||
            { status="FAILED ($?)"; failed+=("$name"); }
    fi
    if [ "$status" = ok ]; then
        $H2LAB run "$f" --out "$OUT/$name" --jobs "$(jobs_for "$name")" ||
            { status="FAILED ($?)"; failed+=("$name"); }
    fi
    t1=$(date +%s)
    summary+=("$(printf '%-32s %-12s %s' "$name" "$status" "$(fmt $((t1 - t0)))")")
done
end_all=$(date +%s)

echo
echo "reproduce: wall time per experiment"
printf '  %s\n' "${summary[@]}"
echo "reproduce: total wall time $(fmt $((end_all - start_all))) for ${#files[@]} experiment(s) into $OUT/"
if [ ${#failed[@]} -gt 0 ]; then
    echo "reproduce: failed: ${failed[*]} (rerun to resume; stored trials are skipped)" >&2
    exit 1
fi
