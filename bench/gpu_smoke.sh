#!/usr/bin/env bash
# GPU smoke check that needs no download (issue 59): the device machine has no network and
# carries at most 64 MiB, so MiniLM's weights do not travel. An encoder of MiniLM's real shape
# (its config and tokenizer, weights drawn at random from the config, seed 0) goes through the
# whole product path on the bundled demo corpus with the encoder on DEVICE:
#   one training run of the record's parts (LoRA, lexical term, late interaction; 1 step),
#   its export, `gralc index --model` (token codes), `gralc search --queries` (batched), and
#   Retriever.search / search_batch timed against the question encoder pass alone (the floor).
# The same steps on cpu give the reference the device's hits are compared with.
#
#   bash bench/gpu_smoke.sh prepare .gpu      # here: encoder config + tokenizer, wheels the
#                                             # device image lacks (faiss-cpu, bm25s, ...)
#   bash bench/gpu_smoke.sh run .gpu OUT      # there (carry .gpu), or here with DEVICE=cpu
#
# Writes OUT/gpu_smoke.json (timings, precision chosen, hits agreement) and OUT/*.log.
# The scores of a random encoder say nothing about quality: this checks that the code runs on
# the device, which precision it picks, and how fast; real-weight timings need the weights there.
set -uo pipefail
MODE=${1:?usage: bash bench/gpu_smoke.sh prepare|run DIR [OUT]}
DIR=${2:?usage: bash bench/gpu_smoke.sh prepare|run DIR [OUT]}
PY=${PY:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
# the packages of pyproject.toml's dependencies the device image (KINDS.md) does not hold
WHEELS=${WHEELS-"faiss-cpu==1.15.1 bm25s==0.3.16 PyStemmer==3.1.0 pyahocorasick==2.3.1 omegaconf==2.4.0 antlr4-python3-runtime==4.13.2"}

if [ "$MODE" = prepare ]; then
  mkdir -p "$DIR/encoder" "$DIR/wheels"
  $PY - "$DIR/encoder" <<'PY' || exit 1
import shutil, sys
from pathlib import Path
from gralc.encoding.models import default_model_path
src, dst = Path(default_model_path()), Path(sys.argv[1])
for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
             "special_tokens_map.json", "modules.json", "sentence_bert_config.json",
             "1_Pooling/config.json"):
    (dst / name).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / name, dst / name)
print(f"encoder config and tokenizer of {src} -> {dst} (no weights)")
PY
  for w in $WHEELS; do
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$DIR/wheels" "$w" || exit 1
  done
  du -sh "$DIR"
  exit 0
fi
[ "$MODE" = run ] || { echo "first argument: prepare or run, not $MODE"; exit 2; }
OUT=${3:?usage: bash bench/gpu_smoke.sh run DIR OUT}
DEVICE=${DEVICE:-cuda}
[ -f "$DIR/encoder/config.json" ] || { echo "$DIR/encoder/config.json missing: run 'bash bench/gpu_smoke.sh prepare $DIR' first"; exit 2; }
if ls "$DIR"/wheels/*.whl > /dev/null 2>&1 && ! $PY -c "import faiss, bm25s" 2> /dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/gralc_site \
    "$DIR"/wheels/*.whl || exit 1
  export PYTHONPATH=/tmp/gralc_site${PYTHONPATH:+:$PYTHONPATH}
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=disabled MPLBACKEND=Agg PYTHONUNBUFFERED=1
mkdir -p "$OUT"
WORK=$(mktemp -d)
ENC="$WORK/encoder"
cp -r "$DIR/encoder" "$ENC"
if [ ! -f "$ENC/model.safetensors" ]; then
  $PY - "$ENC" <<'PY' || exit 1
import sys, torch
from transformers import AutoConfig, AutoModel
torch.manual_seed(0)
AutoModel.from_config(AutoConfig.from_pretrained(sys.argv[1])).save_pretrained(sys.argv[1])
PY
fi
A=gralc/data/demo/articles
step() {  # NAME CMD...: run, time, keep the log; stop at the first failure
  local name=$1; shift; local s; s=$(date +%s%N)
  "$@" > "$OUT/$name.log" 2>&1 || { echo "$name failed:"; tail -30 "$OUT/$name.log"; exit 1; }
  echo "$name $(( ($(date +%s%N) - s) / 1000000 ))e-3" >> "$WORK/times"
  echo "$name: $(tail -1 "$WORK/times" | cut -d' ' -f2) s"
}
$PY -c "import torch; print('torch', torch.__version__, '| cuda', torch.cuda.is_available() and torch.cuda.get_device_name())"
step train $PY train.py data=demo lora.enabled=true model.use_lexical=true optim.late_interaction=0.6 \
  trainer.max_epochs=1 trainer.limit_train_batches=1 trainer.accelerator=$([ "$DEVICE" = cpu ] && echo cpu || echo gpu) \
  pipeline.encoder.model="$ENC" pipeline.encoder.device=$DEVICE pipeline.encoder.precision=auto callbacks.early_stopping.enabled=false \
  paths.output_dir="$WORK/run" paths.cache_dir="$WORK/cache" trainer.enable_progress_bar=false
step export $PY -m gralc export "$WORK/run" --out "$WORK/export"
DEVS=$DEVICE; [ "$DEVICE" = cpu ] || DEVS="$DEVICE cpu"
for dev in $DEVS; do
  step "index_$dev" $PY -m gralc index "$A" --model "$WORK/export" --out "$WORK/index_$dev" encoder.device=$dev encoder.precision=auto
done
$PY -c "import json, sys; [print(json.loads(l)['question']) for l in open(sys.argv[1]) if l.strip()]" \
  gralc/data/demo/questions.jsonl > "$WORK/questions.txt" || exit 1
step "search_batched_$DEVICE" $PY -m gralc search "$WORK/index_$DEVICE" --queries "$WORK/questions.txt" -k 10
cp "$WORK/run/run.json" "$OUT/run.json" 2> /dev/null
$PY - "$WORK" "$OUT" "$DEVICE" <<'PY'
"""Latency on the device against its floor, hits of the device's index against the cpu one's."""
import json, statistics, subprocess, sys, time
from pathlib import Path
import torch
from gralc.inference import Retriever
work, out, device = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
questions = (work / "questions.txt").read_text().splitlines()
try:
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or None
except OSError:
    git = None
res = {"git": git, "device": device, "torch": torch.__version__,
       "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
       "questions": len(questions), "steps_s": {l.split()[0]: float(l.split()[1])
                                                for l in (work / "times").read_text().splitlines()}}
runs = {}
for dev in dict.fromkeys([device, "cpu"]):
    r = Retriever.load(work / f"index_{dev}")
    enc = r.pipeline.encoder
    res.setdefault("encoder_precision", {})[dev] = enc.precision
    r.search_batch(questions[:8], 10)  # warm-up
    sync = torch.cuda.synchronize if dev != "cpu" and torch.cuda.is_available() else (lambda: None)
    def clock(fn, reps):
        ts = []
        for _ in range(reps):
            sync(); t = time.perf_counter(); fn(); sync(); ts.append(time.perf_counter() - t)
        return statistics.median(ts)
    single = [clock(lambda q=q: r.search(q, 10), 1) for q in questions]
    floor1 = [clock(lambda q=q: enc.encode_queries([q]), 1) for q in questions]
    batch = clock(lambda: r.search_batch(questions, 10), 3) / len(questions)
    floorb = clock(lambda: enc.encode_queries(questions), 3) / len(questions)
    res.setdefault("latency_ms", {})[dev] = {
        "single_p50": 1e3 * statistics.median(single), "single_floor_p50": 1e3 * statistics.median(floor1),
        f"batched_{len(questions)}_per_question": 1e3 * batch, "batched_floor_per_question": 1e3 * floorb}
    runs[dev] = r.search_batch(questions, 10)
if device != "cpu":
    a, b = runs[device], runs["cpu"]
    res["hits_identical"] = sum(x.chunk.chunk_id == y.chunk.chunk_id for ra, rb in zip(a, b) for x, y in zip(ra, rb))
    res["hits_total"] = sum(len(ra) for ra in a)
    res["largest_score_difference"] = max(abs(x.score - y.score) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
(out / "gpu_smoke.json").write_text(json.dumps(res, indent=2))
print(json.dumps(res, indent=2))
PY
grep -h "precision" "$OUT"/train.log "$OUT"/index_*.log | sort -u | head -5
rm -rf "$WORK"
