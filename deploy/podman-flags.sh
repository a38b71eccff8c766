# Sourced by scripts/build-image.sh and bench/image.sh: what podman needs on the host beyond its
# defaults (docs/container.md, "Hosts like the reference machine"). Sets two arrays:
#   PODMAN   podman with the OCI runtime: Debian's default crun runs containers only on a
#            cgroup v2 host; on a v1/hybrid one (v1 controllers with cgroup2 at
#            /sys/fs/cgroup/unified, as on the reference machine) it refuses every container
#            ("cgroups in hybrid mode not supported"), so runc (Debian's runc package) there.
#   ULIMITS  open files and processes at this shell's hard limits (processes also at most
#            kernel.pid_max, podman's own ceiling): podman asks for 1048576 of each, which root
#            without CAP_SYS_RESOURCE (the reference machine's) cannot set.
# shellcheck shell=bash
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  PODMAN=(podman)
else
  PODMAN=(podman --runtime runc)
fi
_h2lab_limit() {
  local v=$1
  if [ "$v" = unlimited ] || [ "$v" -gt 1048576 ]; then v=1048576; fi
  if [ -n "${2:-}" ] && [ "$v" -gt "$2" ]; then v=$2; fi
  echo "$v"
}
_nofile=$(_h2lab_limit "$(ulimit -Hn)")
_nproc=$(_h2lab_limit "$(ulimit -Hu)" "$(cat /proc/sys/kernel/pid_max)")
ULIMITS=(--ulimit "nofile=$_nofile:$_nofile" --ulimit "nproc=$_nproc:$_nproc")
unset -f _h2lab_limit
unset _nofile _nproc
