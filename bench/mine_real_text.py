"""Mining on real text: can `lase mine` find FLORES-200 translation pairs hidden among
distractors? Source: FLORES devtest sentences of --src-lang plus 2,000 sentences of that
language from other data; target: the FLORES sentences of --tgt-lang plus 2,000 others.
Both sides shuffled. Gold: the FLORES line pairs. Prints precision/recall/F1 at the
threshold given and the best F1 over thresholds (oracle, labelled as such).

    .venv/bin/python bench/mine_real_text.py --model models/all-MiniLM-L6-v2 --tgt-lang deu_Latn
"""

import argparse
import gzip
import random
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
# Tatoeba folders hold the pair's two sides line-aligned; English comes from the folder of
# the other language, so both sides' distractors come from one aligned file.
TATOEBA = {"deu_Latn": ("deu-eng", "deu"), "fra_Latn": ("eng-fra", "fra"),
           "spa_Latn": ("eng-spa", "spa"), "rus_Cyrl": ("eng-rus", "rus")}


def flores(lang):
    return (DATA / "flores200-devtest/devtest" / f"{lang}.devtest").read_text(encoding="utf-8").splitlines()


def tatoeba_side(lang, other):
    """Sentences of `lang` from the Tatoeba folder pairing it with `other`'s language."""
    pair, side = TATOEBA[other if lang == "eng_Latn" else lang]
    side = "eng" if lang == "eng_Latn" else side
    path = DATA / "tatoeba-challenge-eng-train" / pair / f"tatoeba-test-v2021-08-07.{side}.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [l.rstrip("\n") for l in f]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT / "models/all-MiniLM-L6-v2"))
    ap.add_argument("--src-lang", default="eng_Latn")
    ap.add_argument("--tgt-lang", default="deu_Latn")
    ap.add_argument("--distractors", type=int, default=2000)
    ap.add_argument("--threshold", type=float, default=1.06)
    args = ap.parse_args()
    src_gold, tgt_gold = flores(args.src_lang), flores(args.tgt_lang)
    # Distractors: Tatoeba training sentences. Source ones come from one half of the
    # (line-aligned) pair file and target ones from the other half, so no distractor's
    # translation is present on the other side.
    s_all, t_all = tatoeba_side(args.src_lang, args.tgt_lang), tatoeba_side(args.tgt_lang, args.src_lang)
    perm = list(range(min(len(s_all), len(t_all))))
    random.Random(1).shuffle(perm)
    half = len(perm) // 2
    src_extra = [s_all[i] for i in perm[:half] if s_all[i].strip() and s_all[i] not in src_gold][: args.distractors]
    tgt_extra = [t_all[i] for i in perm[half:] if t_all[i].strip() and t_all[i] not in tgt_gold][: args.distractors]
    gold = {(s, t) for s, t in zip(src_gold, tgt_gold)}
    src = src_gold + src_extra
    tgt = tgt_gold + tgt_extra
    random.Random(2).shuffle(src)
    random.Random(3).shuffle(tgt)
    tmp = Path(tempfile.mkdtemp(prefix="lase-mine-"))
    (tmp / "src.txt").write_text("\n".join(src) + "\n", encoding="utf-8")
    (tmp / "tgt.txt").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    out = subprocess.run([str(ROOT / "target/release/lase"), "--device", "cpu", "mine", "--quiet", "--precision", "f32", "--model", args.model,
                          "--src", str(tmp / "src.txt"), "--tgt", str(tmp / "tgt.txt"), "--output", str(tmp / "pairs.tsv")],
                         check=True, capture_output=True, text=True).stdout
    print(out.strip())
    pairs = [l.split("\t") for l in (tmp / "pairs.tsv").read_text(encoding="utf-8").splitlines()]
    scored = [(float(p[0]), (p[1], p[2]) in gold) for p in pairs]

    def prf(th):
        kept = [ok for s, ok in scored if s > th]
        tp = sum(kept)
        p = tp / len(kept) if kept else 0.0
        r = tp / len(gold)
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)

    p, r, f = prf(args.threshold)
    print(f"{args.src_lang} -> {args.tgt_lang}: {len(src)} x {len(tgt)} sentences, {len(gold)} gold pairs")
    print(f"threshold {args.threshold}: precision {p:.3f} recall {r:.3f} F1 {f:.3f}")
    best = max((prf(s)[2], s) for s, _ in scored)
    bp, br, bf = prf(best[1] - 1e-9)
    print(f"oracle threshold {best[1]:.4f} (chosen on the gold pairs themselves): precision {bp:.3f} recall {br:.3f} F1 {bf:.3f}")


if __name__ == "__main__":
    main()
