#!/usr/bin/env bash
# Start a one-node SLURM cluster on this machine, with accounting, as root and without systemd:
#
#   scripts/slurm/start.sh [STATE_DIR]        # or SLURM_STATE_DIR=...; default: a new /tmp/slurm.*
#   source STATE_DIR/env                      # SLURM_CONF: sinfo, sbatch, launcher=slurm use it
#   scripts/slurm/stop.sh STATE_DIR
#
# Installs the Debian packages when they are missing (slurmctld slurmd slurm-client munge slurmdbd
# mariadb-server), then writes every file into STATE_DIR: config (etc/), daemon state, logs (log/)
# and one PID file per daemon it starts (pids/): munged, mariadbd, slurmdbd, slurmctld, slurmd.
# stop.sh stops exactly those processes. Returns once `sinfo` shows the node idle and `sacct`
# answers; prints STATE_DIR on its last line. The node is this machine (its hostname, every CPU,
# 95% of its memory); partition `main` (default) is preempted, with requeue, by partition `urgent`.
set -Eeuo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)
CLUSTER=longterm

HERE=$(cd "$(dirname "$0")" && pwd)
LAUNCHED=0

die() {  # stop what this run of start.sh started, if anything, and exit
    echo "start.sh: $*" >&2
    ((LAUNCHED)) && "$HERE/stop.sh" "$STATE" >&2
    exit 1
}
trap 'die "command failed at line $LINENO"' ERR

[[ $(id -u) == 0 ]] || die "run as root (the daemons and jobs run as root)"

install_packages() {
    local missing=0 program
    for program in "${DAEMONS[@]}" sbatch sacctmgr mungekey mariadb-install-db; do
        command -v "$program" >/dev/null || missing=1
    done
    ((missing)) || return 0
    echo "installing ${PACKAGES[*]}"
    # Keep the packages' init scripts from starting system-wide daemons with the default config.
    local policy=/usr/sbin/policy-rc.d added=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && added=1
    fi
    local status=0
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${PACKAGES[@]}"; } >/dev/null || status=$?
    ((added)) && rm -f "$policy"
    ((status == 0)) || die "apt-get failed (exit $status)"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

PICKED=" "
free_port() {  # free_port VAR FROM: VAR=the first port from FROM that is free and not yet picked
    local port=$2
    while port_in_use "$port" || [[ $PICKED == *" $port "* ]]; do port=$((port + 1)); done
    PICKED+="$port "
    printf -v "$1" %s "$port"
}

launch() {  # launch NAME COMMAND...: in its own session, output to log/NAME.out, PID to pids/
    local name=$1
    shift
    setsid "$@" </dev/null >>"$STATE/log/$name.out" 2>&1 &
    echo $! >"$STATE/pids/$name.pid"
    LAUNCHED=1
}

wait_until() {  # wait_until SECONDS WHAT COMMAND...: poll COMMAND until it succeeds
    local seconds=$1 what=$2 deadline
    shift 2
    deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "no $what after ${seconds}s (logs: $STATE/log)"
        sleep 0.5
    done
}

alive() {  # alive NAME: the daemon NAME started by this script is still running
    local pid
    pid=$(cat "$STATE/pids/$1.pid")
    kill -0 "$pid" 2>/dev/null || die "$1 (pid $pid) exited: see $STATE/log"
}

install_packages
STATE=${1:-${SLURM_STATE_DIR:-$(mktemp -d /tmp/slurm.XXXXXX)}}
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)  # absolute: with a relative SLURM_CONF, srun steps time out
for name in "${DAEMONS[@]}"; do
    [[ -e $STATE/pids/$name.pid ]] && die "$STATE has a cluster already: stop.sh $STATE first"
done
mkdir -p "$STATE"/{etc,log,pids,run,munge,mysql,slurmctld,slurmd}
chmod 700 "$STATE" "$STATE/munge"

HOST=$(hostname -s)
CPUS=$(nproc --all)
MEMORY_MB=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.95)}' /proc/meminfo)
free_port DB_PORT 3306
free_port CTLD_PORT 6817
free_port SLURMD_PORT 6818
free_port DBD_PORT 6819
MUNGE_SOCKET=$STATE/munge/munge.socket.2
DB_SOCKET=$STATE/run/mysqld.sock
DB_PASSWORD=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
export SLURM_CONF=$STATE/etc/slurm.conf
echo "export SLURM_CONF=$SLURM_CONF" >"$STATE/env"

# MUNGE: a key of this cluster's own, and a daemon on a socket in STATE_DIR.
mungekey --create --keyfile="$STATE/munge/munge.key"
launch munged munged --foreground --force --socket="$MUNGE_SOCKET" \
    --key-file="$STATE/munge/munge.key" --pid-file="$STATE/run/munged.pid" \
    --seed-file="$STATE/munge/munged.seed" --log-file="$STATE/log/munged.log"

# MariaDB for slurmdbd: a fresh data directory, reachable on 127.0.0.1 only.
mariadb-install-db --no-defaults --user=root --datadir="$STATE/mysql" --skip-test-db \
    --auth-root-authentication-method=socket >"$STATE/log/mariadb-install.log" 2>&1 ||
    die "mariadb-install-db failed: see $STATE/log/mariadb-install.log"
launch mariadbd mariadbd --no-defaults --user=root --datadir="$STATE/mysql" \
    --socket="$DB_SOCKET" --pid-file="$STATE/run/mysqld.pid" --port="$DB_PORT" \
    --bind-address=127.0.0.1 --skip-name-resolve --innodb-buffer-pool-size=32M \
    --innodb-log-file-size=16M --log-error="$STATE/log/mariadbd.err"
wait_until 60 "answer from munged" munge -n --socket="$MUNGE_SOCKET"
wait_until 60 "answer from mariadbd" mariadb --no-defaults --socket="$DB_SOCKET" -e "SELECT 1"
mariadb --no-defaults --socket="$DB_SOCKET" -e "
    CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

# slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF; it must be private.
cat >"$STATE/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASSWORD
StorageLoc=slurm_acct_db
EOF
chmod 600 "$STATE/etc/slurmdbd.conf"

# Slurm 22.05 settings this needs: no cgroup.conf (linuxproc tracking, no task plugin); a default
# memory per CPU, or a job without --mem takes the whole node; requeue allowed; preemption by
# partition priority that requeues and first sends the job's --signal (submitit's USR2; the 22.05
# spelling is SlurmctldParameters=preempt_send_user_signal); AccountingStoragePass naming this
# MUNGE socket; a short scheduling interval and credential lifetime, so that a requeued job
# starts again in about 20 s rather than minutes; SIGKILL 10 s after a stopped job's SIGTERM.
cat >"$SLURM_CONF" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
CredType=cred/munge
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=5,bf_interval=5
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$((MEMORY_MB / CPUS))
JobRequeue=1
KillWait=10
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
SlurmctldParameters=preempt_send_user_signal
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$HOST
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$MUNGE_SOCKET
JobCompType=jobcomp/none
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEMORY_MB State=UNKNOWN
PartitionName=main Nodes=$HOST Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes=$HOST MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF
EOF

launch slurmdbd slurmdbd -D
wait_until 60 "answer from slurmdbd" sacctmgr -n list cluster
sacctmgr -i add cluster "$CLUSTER" >/dev/null
launch slurmctld slurmctld -D -f "$SLURM_CONF"
launch slurmd slurmd -D -f "$SLURM_CONF"
idle() { [[ $(sinfo -h -n "$HOST" -o %t) == idle ]]; }
wait_until 90 "idle node in sinfo" idle
wait_until 30 "answer from sacct" sacct -n -X
for name in "${DAEMONS[@]}"; do alive "$name"; done
echo "SLURM $(sinfo -V | cut -d' ' -f2) cluster $CLUSTER up: node $HOST ($CPUS CPUs," \
    "${MEMORY_MB} MB), partitions main and urgent; accounting in slurmdbd"
echo "$STATE"
