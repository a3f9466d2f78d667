#!/usr/bin/env bash
# Issue 18's end-to-end check on a real one-node Slurm cluster: installs Debian's
# slurm-wlm and munge if missing, starts munged, slurmctld and slurmd on this machine
# (configuration and state under /tmp/lase-slurm), runs scripts/slurm_mine.sh (3-shard
# embed + k-NN arrays + mine) on 20,000 x 20,000 WMT news sentences (English against
# German from ../shared/data/parallel-news, training data), runs single-process
# `lase mine` on the same files, and compares the two pairs files byte for byte.
# Then it kills one embedding shard's output, resubmits, and checks that only that shard
# was redone and the pairs are unchanged. Needs root (daemons) and a release build.
# Usage: scripts/slurm_test.sh [MODEL] [LINES]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/lase-small}
lines=${2:-20000}
root=/tmp/lase-slurm
LASE=$PWD/target/release/lase
started=$(date +%s)
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
fi
mkdir -p $root/state $root/spool $root/log $root/work
host=$(hostname -s)
cpus=$(nproc)
memory=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 2048))
cat >$root/slurm.conf <<CONF
ClusterName=lase
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$root/state
SlurmdSpoolDir=$root/spool
SlurmctldPidFile=$root/slurmctld.pid
SlurmdPidFile=$root/slurmd.pid
SlurmctldLogFile=$root/log/slurmctld.log
SlurmdLogFile=$root/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=lase Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$root/slurm.conf
pgrep -x munged >/dev/null || { mkdir -p /run/munge && chown munge:munge /run/munge && sudo_munge="runuser -u munge -- munged" && $sudo_munge; }
pkill -x slurmctld || true
pkill -x slurmd || true
sleep 1
slurmctld -f $root/slurm.conf
slurmd -f $root/slurm.conf
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -qE '^idle' && break
  sleep 1
done
echo "== slurm: $(sinfo -h -o '%P %D node(s) %T, %c CPUs')"

data=../shared/data/parallel-news/deu-eng
work=$root/work
rm -rf "$work" && mkdir -p "$work"
# (zcat ends on SIGPIPE when head has its lines: the counts are checked instead)
{ zcat $data/*.eng.gz | head -n "$lines" >"$work/eng.txt"; } || true
{ zcat $data/*.deu.gz | head -n "$lines" | shuf --random-source=<(yes) >"$work/deu.txt"; } || true
[ "$(wc -l <"$work/eng.txt")" = "$lines" ] && [ "$(wc -l <"$work/deu.txt")" = "$lines" ]
t0=$(date +%s)
scripts/slurm_mine.sh --src "$work/eng.txt" --tgt "$work/deu.txt" --model "$model" --work "$work/run" \
  --output "$work/sharded.tsv" --shards 3 --wait -- --indices
t1=$(date +%s)
echo "== sharded through Slurm: $((t1 - t0)) s; per-shard records:"
cat "$work"/run/src/shard-*.json "$work"/run/tgt/shard-*.json | grep -h '"seconds"' | tr -s ' ' | paste -sd' '
"$LASE" mine --quiet --precision f32 --indices --model "$model" --src "$work/eng.txt" --tgt "$work/deu.txt" --output "$work/single.tsv"
t2=$(date +%s)
echo "== single-process lase mine: $((t2 - t1)) s"
cmp "$work/single.tsv" "$work/sharded.tsv"
echo "== equal: $(wc -l <"$work/sharded.tsv") pairs, byte-identical to lase mine"

# A lost shard: its output gone; the same command redoes only it.
rm "$work/run/src/shard-00001.json" "$work/run/src/shard-00001.npy"
scripts/slurm_mine.sh --src "$work/eng.txt" --tgt "$work/deu.txt" --model "$model" --work "$work/run" \
  --output "$work/sharded-again.tsv" --shards 3 --wait -- --indices >/dev/null
redone=$(cat "$work"/run/logs/lase-embed-*.out | grep -c " rows in " || true)
skipped=$(cat "$work"/run/logs/lase-embed-*.out | grep -c "skipped" || true)
cmp "$work/single.tsv" "$work/sharded-again.tsv"
echo "== resubmitted after losing source shard 1: embed logs show $redone redone, $skipped skipped; pairs unchanged"
[ "$redone" = 1 ] && [ "$skipped" = 5 ]
echo "== slurm_test.sh passed in $(($(date +%s) - started)) s"
