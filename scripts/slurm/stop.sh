#!/usr/bin/env bash
# Stop the cluster that scripts/slurm/start.sh started in STATE_DIR:
#
#   scripts/slurm/stop.sh STATE_DIR            # or SLURM_STATE_DIR=...
#
# Cancels the cluster's jobs while its controller runs, then stops the daemons whose PIDs are in
# STATE_DIR/pids (SIGTERM, SIGKILL after 20 s), newest first. A PID is signalled only while its
# process still names STATE_DIR in its command line or environment (start.sh sets SLURM_CONF
# there for every daemon), so a reused PID is never touched. Leaves
# STATE_DIR (config and logs) in place; exits non-zero if a daemon could not be stopped.
set -uo pipefail

STATE=${1:-${SLURM_STATE_DIR:-}}
[[ -n $STATE && -d $STATE/pids ]] || {
    echo "usage: stop.sh STATE_DIR (a directory given to start.sh)" >&2
    exit 2
}
STATE=$(cd "$STATE" && pwd)
export SLURM_CONF=$STATE/etc/slurm.conf
DAEMONS=(slurmd slurmctld slurmdbd mariadbd munged)  # the reverse of start.sh's order

ours() {  # ours PID: a live process that names STATE_DIR in its command line or environment
    [[ -r /proc/$1/cmdline ]] && cat "/proc/$1/cmdline" "/proc/$1/environ" 2>/dev/null |
        tr '\0' '\n' | grep -qF -- "$STATE/"
}

cancel_jobs() {  # cancel every job, and wait until none is pending, running or completing
    local jobs deadline=$((SECONDS + 30))
    jobs=$(squeue -h -o %A 2>/dev/null) || return 0
    [[ -z $jobs ]] && return 0
    echo "cancelling jobs:" $jobs
    # shellcheck disable=SC2086
    scancel $jobs 2>/dev/null
    while [[ -n $(squeue -h -o %A 2>/dev/null) ]]; do
        ((SECONDS < deadline)) || { echo "jobs still there after 30 s" >&2; return 0; }
        sleep 0.5
    done
}

[[ -e $STATE/pids/slurmctld.pid ]] && ours "$(cat "$STATE/pids/slurmctld.pid")" && cancel_jobs

status=0
for name in "${DAEMONS[@]}"; do
    file=$STATE/pids/$name.pid
    [[ -e $file ]] || continue
    pid=$(cat "$file")
    if ours "$pid"; then
        kill -TERM "$pid" 2>/dev/null
        deadline=$((SECONDS + 20))
        while ours "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
        if ours "$pid"; then
            kill -KILL "$pid" 2>/dev/null
            sleep 0.5
        fi
        if ours "$pid"; then
            echo "$name (pid $pid) did not stop" >&2
            status=1
            continue
        fi
        echo "stopped $name (pid $pid)"
    fi
    rm -f "$file"
done
exit $status
