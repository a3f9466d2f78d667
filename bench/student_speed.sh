#!/usr/bin/env bash
# Encode speed of the shipped student against the default (or any two models): the same
# sentences (FLORES-200 devtest, 1,012 English and 1,012 German), the same binary, the same
# threads, the two models interleaved for ROUNDS rounds (default 3) after one warm-up each.
# Per model: the best whole-process rate (process start, model load and `auto`'s probe
# included), the best encode rate `lase embed` prints itself (tokenising and encoding only),
# peak RSS and size on disk; then both ratios. Best-of-N because timings on these virtual
# machines move between runs; stop other work first.
# Usage: bench/student_speed.sh [STUDENT] [TEACHER] [THREADS]   (LASE_PRECISION, ROUNDS)
set -euo pipefail
cd "$(dirname "$0")/.."
student=${1:-models/lase-mini}
teacher=${2:-models/lase-base}
threads=${3:-2}
rounds=${ROUNDS:-3}
# f32 unless LASE_PRECISION says otherwise.
precision=${LASE_PRECISION:-f32}
input=$(mktemp --suffix .txt)
out=$(mktemp --suffix .npy)
log=$(mktemp)
rss=$(mktemp)
trap 'rm -f "$input" "$out" "$log" "$rss"' EXIT
cat ../shared/data/flores200-devtest/devtest/eng_Latn.devtest ../shared/data/flores200-devtest/devtest/deu_Latn.devtest >"$input"
n=$(wc -l <"$input")
embed() {
  target/release/lase --threads "$threads" embed --precision "$precision" --model "$1" --input "$input" --output "$out"
}
declare -A whole encode peak
for model in "$teacher" "$student"; do
  embed "$model" >"$log" 2>&1 || { echo "student_speed.sh: the warm-up of $model failed:" >&2; cat "$log" >&2; exit 1; } # page cache
  whole[$model]=0 encode[$model]=0 peak[$model]=0
done
echo "precision $precision, $threads threads, $n sentences, $rounds rounds"
for round in $(seq "$rounds"); do
  for model in "$teacher" "$student"; do
    start=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$rss" target/release/lase --threads "$threads" embed --precision "$precision" \
      --model "$model" --input "$input" --output "$out" >"$log" 2>&1 ||
      { echo "student_speed.sh: $model failed in round $round:" >&2; cat "$log" >&2; exit 1; }
    end=$(date +%s.%N)
    w=$(echo "$n / ($end - $start)" | bc -l)
    # "wrote ... (2024 sentences, 83479 tokens, 9.449 s, 214 sentences/s, Int8 on Cpu)"
    e=$(sed -n 's/.* tokens, \([0-9.]*\) s, [0-9]* sentences\/s.*/\1/p' "$log" | tail -1)
    [ -n "$e" ] || { echo "student_speed.sh: no encode rate in the output of $model:" >&2; cat "$log" >&2; exit 1; }
    e=$(echo "$n / $e" | bc -l)
    picked=$(grep -o '^precision auto: [a-z0-9]*' "$log" | head -1 || true)
    printf "round %d %-24s whole process %6.1f sentences/s, encoding %6.1f sentences/s, peak RSS %d MiB %s\n" \
      "$round" "$model" "$w" "$e" $(($(cat "$rss") / 1024)) "${picked:+($picked)}"
    (($(echo "$w > ${whole[$model]}" | bc -l))) && whole[$model]=$w
    (($(echo "$e > ${encode[$model]}" | bc -l))) && encode[$model]=$e
    (($(cat "$rss") > ${peak[$model]})) && peak[$model]=$(cat "$rss")
  done
done
for model in "$teacher" "$student"; do
  printf "%-28s best whole process %6.1f sentences/s, best encoding %6.1f sentences/s, peak RSS %d MiB, %s on disk\n" \
    "$model" "${whole[$model]}" "${encode[$model]}" $((${peak[$model]} / 1024)) "$(du -sh --apparent-size "$model" | cut -f1)"
done
printf "ratio %s / %s: whole process %.2f, encoding %.2f\n" "$student" "$teacher" \
  "$(echo "${whole[$student]} / ${whole[$teacher]}" | bc -l)" "$(echo "${encode[$student]} / ${encode[$teacher]}" | bc -l)"
