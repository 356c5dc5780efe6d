#!/bin/bash
# `make test` as CI runs it: a fresh clone of this checkout's HEAD, ../shared beside it, no
# environment and no compiled kernels yet. Prints the seconds the install took, the seconds of
# the whole command and pytest's slowest tests.
#
#   scripts/suite_time.sh          # on this machine as it is
#   scripts/suite_time.sh 1        # root: in a cgroup that gets at most 1 CPU's time in all
#
# With a CPU limit on a 2-core machine, both cores run at half speed whenever both are busy,
# as they would on a machine twice as slow (the test workers keep both busy; a single-threaded
# step, such as an install's, is not slowed). Other work on the machine should be idle or niced.
set -euo pipefail
cpus=${1:-}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=$(mktemp -d /tmp/suite-time.XXXXXX)
log=$work/make_test.log

if [[ -n $cpus ]]; then
	quota=$(awk -v c="$cpus" 'BEGIN { printf "%d", c * 100000 }') # microseconds per 100 ms
	if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then           # cgroup v2
		group=/sys/fs/cgroup/suite-time
		mkdir -p "$group"
		echo "$quota 100000" >"$group/cpu.max"
	else # cgroup v1, the cpu controller
		group=/sys/fs/cgroup/cpu/suite-time
		mkdir -p "$group"
		echo 100000 >"$group/cpu.cfs_period_us"
		echo "$quota" >"$group/cpu.cfs_quota_us"
	fi
	echo $$ >"$group/cgroup.procs"
fi

git clone -q "$repo" "$work/project"
cp -r "$repo/../shared" "$work/"
cd "$work/project"
export XDG_CACHE_HOME=$work/cache # the CPU kernels compile afresh, as on a new machine
start=$(date +%s)
make .venv/.installed >"$log" 2>&1
installed=$(date +%s)
status=0
make test >>"$log" 2>&1 || status=$?
end=$(date +%s)

echo "commit $(git rev-parse --short HEAD), $(nproc) CPUs${cpus:+, at most $cpus CPU(s) of time}"
echo "install $((installed - start)) s, make test in all $((end - start)) s, exit status $status"
sed -n '/slowest 10 durations/,$p' "$log"
echo "log: $log"
exit $status
