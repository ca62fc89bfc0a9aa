#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, and a study submitted to it through profiles/slurm.
# For trying the SLURM profile (and its test, tests/test_cluster.py) without a site cluster.
# Debian/Ubuntu, as root; works without systemd (containers): every daemon is started by hand.
#
#   profiles/slurm/one-node-cluster.sh setup      install slurm-wlm, slurmdbd, munge, MariaDB
#                                                 (apt-get), write the configuration, start the
#                                                 daemons, create the accounting cluster/account
#   profiles/slurm/one-node-cluster.sh study [SNAKEMAKE ARGS]
#                                                 copy the repository to $WORKDIR (default: a new
#                                                 temporary directory), run `snakemake --profile
#                                                 profiles/slurm --cores <node CPUs> ARGS` there
#                                                 (default ARGS: target_strength, the default
#                                                 study), then print its jobs and `sacct` lines
#   profiles/slurm/one-node-cluster.sh stop       stop the daemons
#   profiles/slurm/one-node-cluster.sh            setup, then study
#
# The cluster is named `wavescat`; it has the partition `compute` (default) and, where
# nvidia-smi lists GPUs, `gpu` with those GPUs as gres; the accounting account is `my_account`.
# These are the names profiles/slurm/config.yaml uses, so the profile runs unchanged.
# FAKE_GPU=1 (setup) declares one GPU with no device behind it (/dev/null), so the routing
# of GPU jobs to the `gpu` partition can be tried on a machine without one (its solves then
# run on the CPU, as `solver.backend: auto` does without a GPU).
# Environment: PYTHON (the interpreter with snakemake and wavescat; default: .venv/bin/python
# of this repository), WORKDIR, SLURM_ACCOUNT (default my_account).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
ACCOUNT=${SLURM_ACCOUNT:-my_account}
CLUSTER=wavescat
CONF=/etc/slurm
DB_PASS_FILE=/etc/slurm/.dbpass

say() { printf '== %s\n' "$*"; }

need_root() {
    [ "$(id -u)" -eq 0 ] || { echo "one-node-cluster.sh $1: run as root" >&2; exit 2; }
}

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmdbd >/dev/null \
        && command -v munged >/dev/null && command -v mariadbd >/dev/null; then
        return
    fi
    say "installing slurm-wlm, slurmdbd, munge, mariadb-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm slurmdbd munge mariadb-server
}

# `slurmd -C` prints this node's real CPU layout and memory as a slurm.conf node line.
node_line() {
    slurmd -C | head -n 1
}

gpu_count() {
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
    else
        echo 0
    fi
}

write_config() {
    local host node gpus gres=""
    host=$(hostname -s)
    node=$(node_line)
    gpus=$([ -n "${FAKE_GPU:-}" ] && echo 1 || gpu_count)
    mkdir -p /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm /run/slurm
    chown -R slurm:slurm /var/lib/slurm /var/log/slurm /run/slurm
    if [ "$gpus" -gt 0 ]; then
        gres="Gres=gpu:$gpus"
        if [ -n "${FAKE_GPU:-}" ]; then
            echo "Name=gpu File=/dev/null" > $CONF/gres.conf
        else
            echo "Name=gpu File=/dev/nvidia[0-$((gpus - 1))]" > $CONF/gres.conf
        fi
    else
        rm -f $CONF/gres.conf
    fi
    say "writing $CONF/slurm.conf: $node $gres"
    cat > $CONF/slurm.conf <<EOF
# One-node cluster written by profiles/slurm/one-node-cluster.sh
ClusterName=$CLUSTER
SlurmctldHost=$host
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# no cgroups in a container: track processes by parent id, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
${gres:+GresTypes=gpu}
${gres:+AccountingStorageTRES=gres/gpu}
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations
AccountingStoreFlags=job_comment
$node $gres State=UNKNOWN
PartitionName=compute Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    if [ "$gpus" -gt 0 ]; then
        echo "PartitionName=gpu Nodes=$host MaxTime=INFINITE State=UP" >> $CONF/slurm.conf
    fi
    [ -s $DB_PASS_FILE ] || (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > $DB_PASS_FILE)
    (umask 077; cat > $CONF/slurmdbd.conf <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
PidFile=/run/slurm/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$(cat $DB_PASS_FILE)
StorageLoc=slurm_acct_db
EOF
    )
    chown slurm:slurm $CONF/slurmdbd.conf
}

running() { pgrep -x "$1" >/dev/null; }

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2
    shift 2
    for _ in $(seq "$limit"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 1
    done
    echo "one-node-cluster.sh: $what did not come up within ${limit}s (logs: /var/log/slurm)" >&2
    exit 1
}

start_daemons() {
    say "starting munged, mariadbd, slurmdbd, slurmctld, slurmd"
    mkdir -p /run/munge && chown munge:munge /run/munge
    [ -s /etc/munge/munge.key ] || runuser -u munge -- mungekey --create
    running munged || runuser -u munge -- /usr/sbin/munged
    wait_for 10 munge munge -n
    if ! running mariadbd; then
        mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
        (mysqld_safe >/dev/null 2>&1 &)
    fi
    wait_for 30 MariaDB mysqladmin ping
    mysql -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$(cat $DB_PASS_FILE)';
              ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$(cat $DB_PASS_FILE)';
              GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
    running slurmdbd || /usr/sbin/slurmdbd
    wait_for 30 slurmdbd sacctmgr -n list cluster
    sacctmgr -i -Q add cluster $CLUSTER >/dev/null || true
    # a changed slurm.conf (nodes, gres) needs both slurm daemons started afresh
    stop_pid /run/slurm/slurmd.pid
    stop_pid /run/slurm/slurmctld.pid
    /usr/sbin/slurmctld
    wait_for 30 slurmctld scontrol ping
    /usr/sbin/slurmd
    # a drain left in the saved state by an earlier configuration would keep the node idle
    wait_for 30 "slurmd" sh -c "sinfo -h -N -o %t | grep -qvE '^unk|[*]$'"
    if sinfo -h -N -o %t | grep -q drain; then
        scontrol update NodeName="$(hostname -s)" State=RESUME
    fi
    wait_for 30 "node $(hostname -s)" sh -c "sinfo -h -N -o %t | grep -qE '^(idle|mix|alloc)'"
    sacctmgr -i -Q add account "$ACCOUNT" Cluster=$CLUSTER Description=wavescat Organization=wavescat \
        >/dev/null || true
    sacctmgr -i -Q add user "$(id -un)" Account="$ACCOUNT" Cluster=$CLUSTER >/dev/null || true
    sinfo
    sacctmgr -n -P list association cluster=$CLUSTER format=Cluster,Account,User
}

stop_pid() {  # stop the daemon whose pid file is $1, and wait until it is gone
    local pid
    [ -s "$1" ] && pid=$(cat "$1") && kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 30); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 1
    done
}

stop_daemons() {
    stop_pid /run/slurm/slurmd.pid
    stop_pid /run/slurm/slurmctld.pid
    stop_pid /run/slurm/slurmdbd.pid
    mysqladmin shutdown 2>/dev/null || true
    stop_pid /run/munge/munged.pid
}

study() {
    command -v sbatch >/dev/null && scontrol ping >/dev/null 2>&1 || {
        echo "one-node-cluster.sh study: no SLURM controller answers (run setup first)" >&2
        exit 2
    }
    local work=${WORKDIR:-$(mktemp -d -t wavescat-slurm-XXXXXX)} cpus start rc=0
    [ $# -gt 0 ] || set -- target_strength
    mkdir -p "$work"
    # a copy of the repository without its results, state and environment
    tar -C "$REPO" --exclude=./.git --exclude=./.venv --exclude=./results --exclude=./.snakemake \
        --exclude=__pycache__ -cf - . | tar -C "$work" -xf -
    cpus=$(scontrol show node "$(hostname -s)" | sed -n 's/.*CPUTot=\([0-9]*\).*/\1/p')
    start=$(date +%Y-%m-%dT%H:%M:%S)
    say "in $work: snakemake --profile profiles/slurm --cores $cpus $*"
    (cd "$work" && "$PYTHON" -m snakemake --profile profiles/slurm --cores "$cpus" "$@") || rc=$?
    say "jobs of this run (sacct, accounting database)"
    sacct -X --starttime "$start" \
        --format=JobID,Partition,Account,AllocCPUS,ReqMem,AllocTRES%40,State,ExitCode,Elapsed,Comment%50
    say "snakemake exit status $rc"
    return $rc
}

case ${1:-all} in
    setup) need_root setup; install_packages; write_config; start_daemons ;;
    study) shift; study "$@" ;;
    stop) need_root stop; stop_daemons ;;
    all) need_root setup; install_packages; write_config; start_daemons; study ;;
    *) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 2 ;;
esac
