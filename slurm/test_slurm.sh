#!/bin/bash
# `make test-slurm`: the SLURM scripts for real, on a one-node cluster on localhost.
#
# Installs Debian's slurm-wlm and munge if missing (needs root and apt), starts munged (unless
# one already answers), slurmctld and slurmd with a generated config in a temporary directory,
# then:
#   1. train.sbatch, 2 CPU tasks (DDP over gloo) on the demo corpus: checkpoint and metrics;
#   2. train.sbatch again, `scontrol requeue` mid-run: it resumes from last.ckpt (step count
#      and W&B run id intact) rather than restarting;
#   3. train.sbatch again, SIGUSR1 mid-run (what --signal=SIGUSR1@90 sends): Lightning saves
#      hpc_ckpt_1.ckpt and requeues the job itself; the requeued job resumes from it;
#   4. index.sbatch with 2 tasks: the merged index equals a single-process gralc.index.
# Stops the daemons it started, by pid, on exit. Keeps the temporary directory when a step
# fails (KEEP=1 keeps it always). Takes about 9 minutes on 2 cores.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
PY=${GRALC_PYTHON:-$REPO/.venv/bin/python}
TMP=$(mktemp -d /tmp/gralc-slurm-test.XXXXXX)
HOST=$(hostname -s)
STARTED_PIDS=()
T0=$SECONDS
FAILED=1

log() { echo "[test-slurm $((SECONDS - T0))s] $*"; }
fail() { log "FAIL: $*"; exit 1; }

cleanup() {
    for pid in "${STARTED_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${STARTED_PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    if [[ $FAILED == 1 || ${KEEP:-0} == 1 ]]; then log "kept $TMP (logs: $TMP/*.log, $TMP/*/slurm-*.out)"
    else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# ----- 1. packages and daemons ----------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    log "installing slurm-wlm and munge"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >"$TMP/apt.log"
fi

if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "munged already running: using it"
else
    if [[ ! -s /etc/munge/munge.key ]]; then
        mkdir -p /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    runuser -u munge -- /usr/sbin/munged --foreground >"$TMP/munged.log" 2>&1 &
    STARTED_PIDS+=($!)
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.2; done
    munge -n | unmunge >/dev/null || fail "munged did not start (see $TMP/munged.log)"
    log "started munged (pid ${STARTED_PIDS[-1]})"
fi

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
mkdir -p "$TMP/spool" "$TMP/state"
export SLURM_CONF=$TMP/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=gralctest
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/slurmctld.log
SlurmdLogFile=$TMP/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobRequeue=1
KillWait=5
MinJobAge=3600
ReturnToService=2
NodeName=$HOST CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -c -f "$SLURM_CONF" >"$TMP/slurmctld.out" 2>&1 &
STARTED_PIDS+=($!)
slurmd -D -f "$SLURM_CONF" >"$TMP/slurmd.out" 2>&1 &
STARTED_PIDS+=($!)
for _ in $(seq 60); do
    state=$(sinfo -h -N -o %t 2>/dev/null || true)
    [[ $state == idle ]] && break
    sleep 0.5
done
[[ $state == idle ]] || fail "node state '${state}' (see $TMP/slurmctld.log, $TMP/slurmd.log)"
log "slurmctld + slurmd up (pids ${STARTED_PIDS[*]: -2}); node $HOST idle with 2 CPUs"

# ----- helpers ------------------------------------------------------------------------------
job_field() { scontrol show job "$1" 2>/dev/null | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2; }

wait_job() {  # wait_job ID [TIMEOUT_S] -> the final state; fails unless COMPLETED
    local id=$1 limit=${2:-600} start=$SECONDS state
    while (( SECONDS - start < limit )); do
        state=$(job_field "$id" JobState)
        case $state in
            COMPLETED) return 0 ;;
            FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)
                fail "job $id ended $state (log: $(job_field "$id" StdOut))" ;;
        esac
        sleep 2
    done
    fail "job $id still ${state} after ${limit}s"
}

wait_for() {  # wait_for DESCRIPTION TIMEOUT_S COMMAND...
    local what=$1 limit=$2 start=$SECONDS; shift 2
    until "$@"; do
        (( SECONDS - start < limit )) || fail "timed out waiting for $what"
        sleep 1
    done
}

release_if_held() {  # a requeued job waits ~2 min for its begin time: start it now
    local id=$1 state
    for _ in $(seq 120); do
        state=$(job_field "$id" JobState)
        if [[ $state == PENDING ]]; then scontrol update JobId="$id" StartTime=now; return 0; fi
        [[ $state == RUNNING && $(job_field "$id" Restarts) != 0 ]] && return 0
        sleep 1
    done
    fail "job $id did not come back to the queue after its requeue (state $state)"
}

ckpt_step() { "$PY" -c 'import sys, torch; print(torch.load(sys.argv[1], weights_only=False)["global_step"])' "$1"; }

# The demo corpus, small model (as tests/training/conftest.py), 2 CPU tasks. 6 docs -> 7 batches
# -> 4 per rank: every epoch ends with a validation and last.ckpt.
CACHE=${GRALC_TEST_CACHE:-$REPO/data/cache/tests}
SMALL=(data.max_docs=6 model.gat_out_dim=32 model.gat_heads=2 model.mlp_hidden=32
       loader.batch_size=3 loader.extra_negative_docs=1 trainer.log_every_n_steps=1
       pipeline.encoder.device=cpu trainer.accelerator=cpu paths.cache_dir="$CACHE"
       callbacks.early_stopping.enabled=false)
submit_train() {  # submit_train OUTPUT_DIR key=value...
    local out=$1; shift
    mkdir -p "$out"
    OUTPUT_DIR=$out sbatch --parsable --ntasks-per-node=2 --cpus-per-task=1 \
        --output="$out/slurm-%j.out" slurm/train.sbatch "${SMALL[@]}" "$@"
}

# ----- 2. DDP training to the end -------------------------------------------------------------
OUT1=$TMP/train_ddp
id=$(submit_train "$OUT1" trainer.max_epochs=2)
log "train job $id: 2 tasks x 1 CPU, DDP (gloo), 2 epochs"
wait_job "$id" 900
"$PY" - "$OUT1" <<'EOF' || fail "checks of $OUT1 (log $OUT1/slurm-$id.out)"
import csv, json, sys
from pathlib import Path
import torch
out = Path(sys.argv[1])
log = next(out.glob("slurm-*.out")).read_text()
assert "distributed_backend=gloo" in log and "MEMBER: 2/2" in log, "not DDP over gloo with 2 ranks"
result = json.loads((out / "result.json").read_text())
ckpt = torch.load(out / "checkpoints" / "last.ckpt", weights_only=False)
assert ckpt["global_step"] == result["global_step"] == 8, (ckpt["global_step"], result["global_step"])
assert list(out.glob("checkpoints/best-*.ckpt")), "no best checkpoint"
rows = list(csv.DictReader(open(next(out.glob("csv/version_*/metrics.csv")))))
mrr = [float(r["val/mrr"]) for r in rows if r.get("val/mrr")]
loss = [float(r["train/loss_step"]) for r in rows if r.get("train/loss_step")]
assert len(mrr) >= 2 and all(0 < m <= 1 for m in mrr), mrr  # + the initial validation, if on
assert len(loss) == 8 and all(l == l for l in loss), loss
print(f"  steps {result['global_step']}, val/mrr {mrr}, best {result['best_val_mrr']}")
EOF
log "OK DDP training: checkpoints and metrics"

# ----- 3. scontrol requeue mid-run: resume from last.ckpt ------------------------------------
OUT2=$TMP/train_requeue
id=$(submit_train "$OUT2" trainer.max_epochs=6 wandb.enabled=true)
log "train job $id: 6 epochs; requeue once last.ckpt exists"
wait_for "last.ckpt of job $id" 600 test -f "$OUT2/checkpoints/last.ckpt"
sleep 1
[[ $(job_field "$id" JobState) == RUNNING ]] || fail "job $id finished before the requeue: make it longer"
step=$(ckpt_step "$OUT2/checkpoints/last.ckpt")
run_id=$(cat "$OUT2/wandb_run_id.txt")
scontrol requeue "$id"
log "requeued job $id at last.ckpt step $step (W&B run $run_id)"
release_if_held "$id"
wait_job "$id" 900
[[ $(job_field "$id" Restarts) == 1 ]] || fail "job $id: Restarts=$(job_field "$id" Restarts), expected 1"
"$PY" - "$OUT2" "$step" "$run_id" <<'EOF' || fail "resume checks of $OUT2"
import csv, json, sys
from pathlib import Path
out, step, run_id = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
run = json.loads((out / "run.json").read_text())
assert run["resumed_from"] and run["resumed_from"].endswith("last.ckpt"), run["resumed_from"]
logs = sorted(out.glob("csv/version_*/metrics.csv"))
assert len(logs) == 2, logs  # one per attempt
second = [int(r["step"]) for r in csv.DictReader(open(logs[1]))]
assert min(second) >= step, (min(second), step)  # continued, not restarted from 0
result = json.loads((out / "result.json").read_text())
assert result["global_step"] == 24, result["global_step"]  # 6 epochs x 4 steps in total
assert (out / "wandb_run_id.txt").read_text().strip() == run_id
runs = sorted(p.name for p in (out / "wandb").glob("offline-run-*"))
assert len(runs) == 2 and all(r.endswith("-" + run_id) for r in runs), runs
print(f"  resumed at step >= {step}, finished at {result['global_step']}; W&B runs {runs}")
EOF
log "OK requeue: resumed from last.ckpt with its step count and W&B run id"

# ----- 4. SIGUSR1 (preemption warning): Lightning's hpc checkpoint + self-requeue ------------
OUT3=$TMP/train_sigusr1
id=$(submit_train "$OUT3" trainer.max_epochs=6)
log "train job $id: SIGUSR1 once training has started"
wait_for "last.ckpt of job $id" 600 test -f "$OUT3/checkpoints/last.ckpt"
scancel --signal=USR1 "$id"
wait_for "hpc checkpoint of job $id" 120 bash -c "ls $OUT3/hpc_ckpt_*.ckpt >/dev/null 2>&1"
wait_for "requeue of job $id" 120 bash -c "[[ \$(scontrol show job $id | grep -o 'Restarts=[0-9]*') == Restarts=1 ]]"
hpc_step=$(ckpt_step "$OUT3/hpc_ckpt_1.ckpt")
log "job $id saved hpc_ckpt_1.ckpt at step $hpc_step and requeued itself"
release_if_held "$id"
wait_job "$id" 900
"$PY" - "$OUT3" <<'EOF' || fail "SIGUSR1 checks of $OUT3"
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
run = json.loads((out / "run.json").read_text())
assert run["resumed_from"] and Path(run["resumed_from"]).name in ("hpc_ckpt_1.ckpt", "last.ckpt"), run
result = json.loads((out / "result.json").read_text())
assert result["global_step"] == 24, result["global_step"]
print(f"  resumed from {Path(run['resumed_from']).name}, finished at step {result['global_step']}")
EOF
log "OK SIGUSR1: hpc checkpoint, self-requeue, resumed"

# ----- 5. sharded indexing ------------------------------------------------------------------
ARTICLES=$REPO/gralc/data/demo/articles
IDX=$TMP/index
mkdir -p "$IDX"
id=$(CORPUS=$ARTICLES INDEX_OUT=$IDX STRATEGY=late sbatch --parsable --ntasks=2 --cpus-per-task=1 \
     --output="$IDX/slurm-%j.out" slurm/index.sbatch)
log "index job $id: 2 shards of the demo corpus"
wait_job "$id" 900
"$PY" -m gralc index "$ARTICLES" --out "$TMP/index_single" --strategy late >"$TMP/index_single.log" 2>&1
"$PY" - "$IDX/merged" "$TMP/index_single" <<'EOF' || fail "merged index differs (see $IDX)"
import sys
import numpy as np
from gralc.inference import Retriever
merged, single = Retriever.load(sys.argv[1]), Retriever.load(sys.argv[2])
ids = [(c.doc_id, c.chunk_id) for c in single.index.chunks]
assert ids == [(c.doc_id, c.chunk_id) for c in merged.index.chunks], "chunk ids / order differ"
assert np.allclose(single.index.vectors, merged.index.vectors, atol=1e-5), "vectors differ"
for q in ["How did slow titration of extended-release metformin change HbA1c?",
          "Which adverse events were reported?", "What was the primary outcome of the trial?"]:
    a = [(h.chunk.chunk_id, round(h.score, 5)) for h in single.search(q, k=5)]
    assert a == [(h.chunk.chunk_id, round(h.score, 5)) for h in merged.search(q, k=5)], q
print(f"  merged index: {len(ids)} chunks, identical to the single-process index")
EOF
log "OK sharded index: merged == single-process"

FAILED=0
log "ALL PASSED in $((SECONDS - T0)) s"
