#!/usr/bin/env bash
# The command-line audit's cases (docs/reliability.md, "A command-line audit of sizes and
# files"), run by two builds of lase on the same tiny inputs: BEFORE (a build of 17bc826,
# the session's start) and AFTER (a build with the fixes). Each case prints its command,
# its output (stdout and stderr) and its exit code.
#   bench/results/xeon-amx-2026-11-30-s31/audit.sh BEFORE_BIN AFTER_BIN OUT_DIR
# e.g. ... /work/fc7/target/release/lase /work/fc9/target/release/lase bench/results/xeon-amx-2026-11-30-s31/audit
set -uo pipefail
before=$(realpath "$1") after=$(realpath "$2") out=$(realpath -m "$3")
repo=$(cd "$(dirname "$0")/../../.." && pwd)
mini=$repo/models/lase-mini teacher=$repo/models/all-MiniLM-L6-v2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$work"
printf 'der hund\tthe dog\ndie katze\tthe cat\nein haus\ta house\n' > p.tsv
printf '[model]\ninit_from = "%s"\nextend_vocabulary = { pieces = 1000000000000, sample_sentences = 100 }\n\n[data]\nexclude_test_sets = false\nsources = [{ format = "tsv", path = "p.tsv", src_lang = "deu", tgt_lang = "eng" }]\n' "$mini" > huge.toml
printf '[data]\nexclude_test_sets = false\nsources = [{ format = "tsv", path = "p.tsv", src_lang = "deu", tgt_lang = "eng" }]\n' > plain.toml
printf 'the dog\nthe cat\na house\nthe red house\nsmall cat\n' > en.txt
printf 'der hund\ndie katze\nein haus\ndas rote haus\nkleine katze\n' > de.txt
printf 'same\nsame\nsame\n' > same.txt
run_case() { # NAME LASE ARGS...
  local name=$1 lase=$2
  shift 2
  echo "## $name"
  echo "\$ lase $*"
  env -u RUST_BACKTRACE -u RUST_LIB_BACKTRACE "$lase" --threads 1 "$@" 2>&1 | head -n 8
  echo "exit ${PIPESTATUS[0]}"
  echo
}
for which in before after; do
  lase=${!which}
  rm -rf run_huge sen sde sen2 knn knn2 red
  # stores and vectors made with the AFTER build (the same either way)
  env -u RUST_BACKTRACE "$after" --threads 1 shard init --input en.txt --store sen --shards 1 >/dev/null
  env -u RUST_BACKTRACE "$after" --threads 1 shard embed --quiet --shard 0 --model "$mini" --store sen >/dev/null
  env -u RUST_BACKTRACE "$after" --threads 1 shard init --input de.txt --store sde --shards 1 >/dev/null
  env -u RUST_BACKTRACE "$after" --threads 1 shard embed --quiet --shard 0 --model "$teacher" --store sde >/dev/null
  env -u RUST_BACKTRACE "$after" --threads 1 shard init --input de.txt --store sen2 --shards 1 >/dev/null
  env -u RUST_BACKTRACE "$after" --threads 1 shard embed --quiet --shard 0 --model "$mini" --store sen2 >/dev/null
  env -u RUST_BACKTRACE "$after" --threads 1 embed --quiet --model "$mini" --input en.txt --output en256.npy >/dev/null
  env -u RUST_BACKTRACE "$after" --threads 1 embed --quiet --model "$mini" --input de.txt --output de256.npy >/dev/null
  env -u RUST_BACKTRACE "$after" --threads 1 embed --quiet --model "$teacher" --input de.txt --output de384.npy >/dev/null
  python3 -c "import sys; b = bytearray(open('de256.npy','rb').read()); h = b.index(b'\n') + 1; b[h:h+4] = b'\x00\x00\xc0\x7f'; open('nan.npy','wb').write(b)"
  {
    run_case "extend_vocabulary.pieces = 10^12" "$lase" tokenizer extend --config huge.toml --out run_huge
    echo "(run_huge left: $([ -e run_huge ] && echo yes || echo no))"; echo
    run_case "tokenizer train --vocab-size 10^12" "$lase" tokenizer train --config plain.toml --output t.json --vocab-size 1000000000000
    run_case "shard knn -k 10^12" "$lase" shard knn --src sen --tgt sen2 --direction fwd --shard 0 --out knn -k 1000000000000
    run_case "shard knn, stores of two widths, bwd" "$lase" shard knn --src sen --tgt sde --direction bwd --shard 0 --out knn2
    run_case "mine, a NaN in the target .npy" "$lase" mine --src en.txt --tgt de.txt --src-embeddings en256.npy --tgt-embeddings nan.npy --output p1.tsv
    run_case "mine, .npy files of two widths" "$lase" mine --src en.txt --tgt de.txt --src-embeddings en256.npy --tgt-embeddings de384.npy --output p2.tsv
    run_case "mine --ann --ann-connectivity 10^8" "$lase" mine --src en.txt --tgt de.txt --src-embeddings en256.npy --tgt-embeddings de256.npy --output p3.tsv --ann --ann-connectivity 100000000
    run_case "reduce-dim, one sentence three times" "$lase" reduce-dim --model "$mini" --to 8 --sample same.txt --output red
    run_case "eval --suite nonsense, no model" "$lase" eval --model no-model --suite nonsense --data-dir .
  } > "$out/$which.txt"
done
echo "wrote $out/before.txt and $out/after.txt"
