#!/usr/bin/env bash
# Before configs/lase-mini-continue-s14.toml trains: fit again the PCA layer the shipped
# lase-mini learnt against (runs/mini/teacher-pca256, fitted on run 13 by scripts/train_mini.sh
# in the eleventh session; runs/ is not kept between sessions' machines): run 13 from git
# (b1c903f:models/lase-base), scripts/train_mini.sh's own sample (seed 1, 20,000 sentences)
# and its `lase reduce-dim` command. Then check, on training sentences only (the first 2,000
# of the PCA sample), that the student's vectors agree with the new teacher's (run 15 + this
# head) dimension by dimension: a PCA fitted again may flip an axis's sign (LAPACK's eigh on
# another CPU), which would hand the student a target it was never trained towards. Exits 1
# if any of the 256 dimensions correlates negatively.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LASE=${LASE:-./target/release/lase}
OUT=bench/results/epyc-zen3-2026-11-27-s14
mkdir -p runs/run13 runs/mini
if [ ! -f runs/run13/models/lase-base/modules.json ]; then
  git archive b1c903f models/lase-base | tar -x -C runs/run13
  (cd runs/run13/models/lase-base && sha256sum -c --quiet checksums.sha256)
fi
[ -f runs/mini/pca-sample.txt ] || python3 scripts/sample_training_sentences.py runs/mini/pca-sample.txt --count 20000
if [ ! -f runs/mini/teacher-pca256/modules.json ]; then
  rm -rf runs/mini/teacher-pca256.partial
  $LASE reduce-dim --model runs/run13/models/lase-base --to 256 --sample runs/mini/pca-sample.txt \
    --output runs/mini/teacher-pca256.partial
  mv runs/mini/teacher-pca256.partial runs/mini/teacher-pca256
fi
# The teacher folder continue_mini.sh builds (run 15 + the head), built here to check it first.
LASE_MINI_CONFIG=configs/lase-mini-continue-s14.toml LASE_MINI_DIR=runs/mini-continue-s14 \
  LASE_MINI_HEAD=runs/mini/teacher-pca256/2_Dense scripts/continue_mini.sh --help > /dev/null
head -2000 runs/mini/pca-sample.txt > runs/mini/check-2000.txt
for m in models/lase-mini runs/mini-continue-s14/teacher runs/mini/teacher-pca256; do
  tag=$(echo "$m" | tr / -)
  [ -f "runs/mini/check-$tag.npy" ] || $LASE --threads 2 embed --quiet --precision f32 --model "$m" \
    --input runs/mini/check-2000.txt --output "runs/mini/check-$tag.npy"
done
.venv/bin/python - <<'PY' | tee "$OUT/mini_prepare_check.txt"
import numpy as np
s = np.load("runs/mini/check-models-lase-mini.npy")
for name in ("runs-mini-continue-s14-teacher", "runs-mini-teacher-pca256"):
    t = np.load(f"runs/mini/check-{name}.npy")
    cos = (s * t).sum(1) / np.linalg.norm(s, axis=1) / np.linalg.norm(t, axis=1)
    sc, tc = s - s.mean(0), t - t.mean(0)
    corr = (sc * tc).sum(0) / np.linalg.norm(sc, axis=0) / np.linalg.norm(tc, axis=0)
    print(f"lase-mini vs {name}: 2,000 training sentences, cosine mean {cos.mean():.4f} min {cos.min():.4f}; "
          f"per-dimension correlation min {corr.min():.4f} median {np.median(corr):.4f}, negative in {(corr < 0).sum()} of {len(corr)}")
    if name == "runs-mini-continue-s14-teacher":
        trained_against = corr
raise SystemExit(1 if (trained_against < 0).any() else 0)
PY
