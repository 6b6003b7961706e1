#!/usr/bin/env bash
# GPU check: the model of record's config (experiment=covidqa_trained) trains unchanged with
# trainer.accelerator=gpu, its LAST checkpoint (trained adapters and scalars, whatever dev
# selects) is exported, eval.py scores the export with the encoder on cuda and on cpu, and
# `gralc index --model` builds an index with the encoder on each device that `gralc search`
# queries with the same questions. Prints wall seconds, both devices' evidence metrics side by
# side and how many search hits agree.
#
#   bash bench/gpu_check.sh PATH/covidqa_dev.json [N_ARTICLES=24] [OUT=results/gpu_check]
#   MODEL=/path/to/encoder-folder bash bench/gpu_check.sh ...     (another encoder folder)
#   MESH_DIR=../shared/data/mesh bash bench/gpu_check.sh ...        (MeSH 2024 from that folder)
set -u
DATA=${1:?usage: bash bench/gpu_check.sh SQUAD.json [N_ARTICLES] [OUT]}
N=${2:-24}; OUT=${3:-results/gpu_check}; PY=${PY:-python}
[ -f "$DATA" ] || { echo "no such SQuAD-format file: $DATA"; exit 2; }
$PY -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this check needs a GPU')" || exit 2
RUN="$OUT/run"; EXP="$OUT/export"
[ -e "$RUN" ] && { echo "$RUN exists (an earlier check): give another OUT (third argument) or move it away"; exit 2; }
mkdir -p "$OUT"
ENC=(); [ -n "${MODEL:-}" ] && ENC=("pipeline.encoder.model=$MODEL")
# the config links with data/mesh/desc2024.xml; MESH_DIR=../shared/data/mesh uses that copy
[ -n "${MESH_DIR:-}" ] && ENC+=("pipeline.knowledge.vocabulary=$MESH_DIR/mesh2024_thesaurus_terms.tsv" \
    "pipeline.knowledge.tree_file=$MESH_DIR/mtrees2024_style.bin")
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1} WANDB_MODE=${WANDB_MODE:-offline} MPLBACKEND=Agg
$PY -c "import torch; print('torch', torch.__version__, '|', torch.cuda.get_device_name())"
s=$(date +%s)
$PY train.py experiment=covidqa_trained data.path="$DATA" data.max_docs="$N" "${ENC[@]}" \
    trainer.accelerator=gpu paths.output_dir="$RUN" paths.cache_dir="$OUT/cache" > "$OUT/train.log" 2>&1 \
    || { tail -30 "$OUT/train.log"; exit 1; }
echo "train (gpu): $(( $(date +%s) - s )) s; $(grep -E 'encoder precision' "$OUT/train.log" | head -1 | sed 's/.*precision: //')"
$PY -m gralc export "$RUN/checkpoints/last.ckpt" --out "$EXP" --force scoring.late_interaction=0.8 \
    scoring.sentence_evidence=0.3 > "$OUT/export.log" 2>&1 || { tail -20 "$OUT/export.log"; exit 1; }
for dev in cuda cpu; do
  s=$(date +%s)
  $PY eval.py data=squad data.path="$DATA" data.max_docs="$N" "${ENC[@]}" "models=[$EXP]" \
      "methods=[structure_aware]" pipeline.encoder.device=$dev paths.output_dir="$OUT/eval_$dev" \
      paths.cache_dir="$OUT/cache_eval_$dev" > "$OUT/eval_$dev.log" 2>&1 || { tail -20 "$OUT/eval_$dev.log"; exit 1; }
  echo "eval ($dev): $(( $(date +%s) - s )) s"
done
# the inference CLIs: an index built with the encoder on each device, the same questions searched
$PY - "$DATA" "$N" "$OUT" <<'PY'
import json, sys
raw = json.load(open(sys.argv[1]))
raw["data"] = raw["data"][: int(sys.argv[2])]
json.dump(raw, open(f"{sys.argv[3]}/articles.json", "w"))
qs = [qa["question"] for a in raw["data"] for p in a["paragraphs"] for qa in p["qas"]][:3]
open(f"{sys.argv[3]}/questions.txt", "w").write("\n".join(qs) + "\n")
PY
for dev in cuda cpu; do
  s=$(date +%s)
  $PY -m gralc index "$OUT/articles.json" encoder.device=$dev --model "$EXP" --out "$OUT/index_$dev" \
      --force > "$OUT/index_$dev.log" 2>&1 || { tail -20 "$OUT/index_$dev.log"; exit 1; }
  echo "index ($dev): $(( $(date +%s) - s )) s"
  while read -r q; do $PY -m gralc search "$OUT/index_$dev" -k 10 --format json -- "$q"; done \
      < "$OUT/questions.txt" > "$OUT/search_$dev.jsonl" 2> "$OUT/search_$dev.log" \
      || { tail -20 "$OUT/search_$dev.log"; exit 1; }
done
$PY - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
hits = {dev: [json.loads(l) for l in open(f"{out}/search_{dev}.jsonl")] for dev in ("cuda", "cpu")}
same = sum(a.get("chunk_id", a.get("id")) == b.get("chunk_id", b.get("id")) for a, b in zip(hits["cuda"], hits["cpu"]))
gap = max(abs(a["score"] - b["score"]) for a, b in zip(hits["cuda"], hits["cpu"]))
print(f"gralc search top-10 of 3 questions, index built on cuda vs on cpu: {same}/{len(hits['cpu'])} hits identical, largest score difference {gap:.2e}")
PY
$PY - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = {}
for dev in ("cuda", "cpu"):
    m = json.load(open(f"{out}/eval_{dev}/metrics.json"))
    (bench,) = [k for k in m if k != "run"]
    rows[dev] = m[bench]
keys = ("ev_mrr", "ev_recall@512wp", "wa_ndcg@10", "mrr")
print(f"\n| method | device | {' | '.join(keys)} |\n|---|---|{'---|' * len(keys)}")
worst = 0.0
for method in rows["cuda"]:
    for dev in ("cuda", "cpu"):
        print(f"| {method} | {dev} | " + " | ".join(f"{rows[dev][method][k]:.4f}" for k in keys) + " |")
    worst = max(worst, *(abs(rows["cuda"][method][k] - rows["cpu"][method][k]) for k in keys))
print(f"\nlargest cuda-vs-cpu difference: {worst:.4f}")
PY
