# Compares the vocabulary of the run-13 lase-mini cut with the shipped lase-mini's: shared
# pieces and pieces holding a CJK unified ideograph (U+4E00-U+9FFF).
# Usage: python3 bench/results/epyc-zen5-2026-11-27-s11/vocab_compare.py runs/mini/export/vocab.txt models/lase-mini/vocab.txt
import sys
def pieces(path):
    return [p for p in open(path, encoding="utf-8").read().split("\n") if p]
fresh, shipped = pieces(sys.argv[1]), pieces(sys.argv[2])
cjk = lambda p: any("\u4e00" <= c <= "\u9fff" for c in p)
print(f"{sys.argv[1]}: {len(fresh)} pieces, {sum(map(cjk, fresh))} with a CJK ideograph")
print(f"{sys.argv[2]}: {len(shipped)} pieces, {sum(map(cjk, shipped))} with a CJK ideograph")
print(f"shared: {len(set(fresh) & set(shipped))}")
