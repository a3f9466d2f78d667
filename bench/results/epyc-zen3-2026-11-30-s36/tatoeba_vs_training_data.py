# Run 19's Tatoeba-112 P@1 per language against the training text each language has: pairs
# with English in tatoeba-challenge-eng-train (the .eng side's lines) and segments in the
# other parallel sources' counts.tsv (parallel-bible/seed/pud by the first three letters of
# their codes, parallel-news by its language column). Read after run 19 was chosen: a
# diagnosis, never a choice. Run from anywhere: python3 tatoeba_vs_training_data.py
import gzip, os, json, glob, re, collections, math
from pathlib import Path
REPO = Path(__file__).resolve().parents[3]
D = str(REPO.parent / 'shared' / 'data')
tat=collections.Counter()
for d in os.listdir(f'{D}/tatoeba-challenge-eng-train'):
    if '-' not in d: continue
    a,b=d.split('-'); l=b if a=='eng' else a
    for f in glob.glob(f'{D}/tatoeba-challenge-eng-train/{d}/*.eng.gz'):
        tat[l]+=sum(1 for _ in gzip.open(f,'rt'))
other=collections.Counter()
for src in ['parallel-bible','parallel-seed','parallel-pud']:
    for line in open(f'{D}/{src}/counts.tsv').read().split('\n')[1:]:
        if not line: continue
        c=line.split('\t'); other[c[0][:3]]+=int(c[1])
for line in open(f'{D}/parallel-news/counts.tsv').read().split('\n')[1:]:
    if line: c=line.split('\t'); other[c[0][:3]]+=int(c[1])
rep=open(REPO / 'bench/results/xeon-amx-2026-11-30-s30/eval-lase-base-run19/eval-tatoeba112.md').read()
rows=[]
for m in re.finditer(r'^\| (\w{3}) \| (\d+) \| [\d.]+ \| [\d.]+ \| ([\d.]+) \|',rep,re.M):
    l=m.group(1); rows.append((l,float(m.group(3)),tat.get(l,0),other.get(l,0)))
rows.sort(key=lambda r:r[1])
def corr(x,y):
    mx=sum(x)/len(x); my=sum(y)/len(y)
    sx=math.sqrt(sum((a-mx)**2 for a in x)); sy=math.sqrt(sum((b-my)**2 for b in y))
    return sum((a-mx)*(b-my) for a,b in zip(x,y))/sx/sy
p=[r[1] for r in rows]
print('languages',len(rows))
print('corr P@1 vs log(1+tatoeba-train pairs) %.2f'%corr(p,[math.log1p(r[2]) for r in rows]))
print('corr P@1 vs log(1+other parallel segments) %.2f'%corr(p,[math.log1p(r[3]) for r in rows]))
print('corr P@1 vs log(1+all) %.2f'%corr(p,[math.log1p(r[2]+r[3]) for r in rows]))
for lo,hi in [(0,10),(10,20),(20,40),(40,60),(60,101)]:
    g=[r for r in rows if lo<=r[1]<hi]
    if g: print(f'P@1 {lo}-{hi}: {len(g)} langs, median tatoeba-train {sorted(r[2] for r in g)[len(g)//2]}, median other {sorted(r[3] for r in g)[len(g)//2]}, with no training pair of any source {sum(1 for r in g if r[2]+r[3]==0)}')
print('lowest 15:',' '.join(f'{l}:{v:.0f}(t{t},o{o})' for l,v,t,o in rows[:15]))
print('selected (language: P@1, tatoeba-train pairs, other segments):',
      ' '.join(f'{l}:{v:.1f}({t},{o})' for l,v,t,o in rows if l in ('ast','bos','cbk','hbs','spa','khm','hye')))
print('the 7 below 10 P@1:', ' '.join(f'{l}(t{t},o{o})' for l,v,t,o in rows if v < 10))
