# Prototype run in the twenty-third session (not part of lase): grows models/lase-mini's 16,000-piece
# WordPiece towards lase-base's 46,223 pieces by removing, from lase-base's vocabulary, the pieces whose
# removal adds the fewest tokens to the vocabulary sample, keeping every lase-mini piece (KEEP), and
# saves the vocabulary at the sizes in SNAPS. Run as:
#   python3 scripts/sample_training_sentences.py /tmp/s23/vocab-sample.txt --count 300000 --per-file 1000 --seed 2
#   KEEP=models/lase-mini/vocab.txt SNAPS=24000,22000,20500,20000,18000 .venv/bin/python vocab_grow.py 18000
# Prototype: iterative WordPiece pruning that minimises the sample's token count.
import sys, collections, json, time
from tokenizers import Tokenizer
base = Tokenizer.from_file("models/lase-base/tokenizer.json")
vocab = base.get_vocab(True)
norm, pre = base.normalizer, base.pre_tokenizer
def words_of(lines):
    c = collections.Counter()
    for l in lines:
        for w, _ in pre.pre_tokenize_str(norm.normalize_str(l)):
            c[w] += 1
    return c
t0=time.time()
sample = open("/tmp/s23/vocab-sample.txt").read().splitlines()
W = words_of(sample)
print("unique words", len(W), "tokens of words", sum(W.values()), time.time()-t0, flush=True)
def seg(word, V):
    if len(word) > 100: return None
    out=[]; start=0; n=len(word)
    while start < n:
        end=n; cur=None
        while start < end:
            s = word[start:end]
            if start>0: s = "##"+s
            if s in V: cur=s; break
            end -= 1
        if cur is None: return None
        out.append(cur); start=end
    return out
special = {p for p in vocab if p.startswith('[') and p.endswith(']')}
single = {p for p in vocab if len(p)==1 or (p.startswith('##') and len(p)==3)}
always = special | single
import os
if os.environ.get('KEEP'): always |= set(l.strip() for l in open(os.environ['KEEP']) if l.strip())
snaps=[int(x) for x in os.environ.get('SNAPS','').split(',') if x]
def tokenize_all(V):
    use = collections.Counter(); total=0; segs={}
    for w,f in W.items():
        s = seg(w, V)
        if s is None: total += f; use['[UNK]'] += f; continue
        segs[w]=s
        for p in s: use[p]+=f
        total += f*len(s)
    return use, total, segs
target = int(sys.argv[1])
V = set(vocab)
use, total, segs = tokenize_all(V)
print("full vocab", len(V), "word tokens", total, flush=True)
# one-shot (the current rule)
ranked = sorted((p for p in V if p not in always and use[p]>0), key=lambda p: -use[p])
V1 = always | set(ranked[:target-len(always)])
_, tot1, _ = tokenize_all(V1)
print("one-shot", len(V1), "word tokens", tot1, f"{tot1/total:.4f}", flush=True)
# iterative
while len(V) > target:
    excess = len(V)-target
    unused = [p for p in V if p not in always and use[p]==0]
    if unused:
        for p in unused[:excess]: V.discard(p)
    else:
        cost = {}
        for p in V:
            if p in always: continue
            Vm = V - {p} if False else None
            V.discard(p); r = seg(p[2:] if p.startswith('##') else p, V); V.add(p)
            # resegment the piece's own string (with its prefix kind)
            if p.startswith('##'):
                # emulate continuation: segment as if start>0
                s = p[2:]; out=[]; st=0
                V.discard(p)
                ok=True
                while st < len(s):
                    end=len(s); cur=None
                    while st<end:
                        q="##"+s[st:end]
                        if q in V: cur=q; break
                        end-=1
                    if cur is None: ok=False; break
                    out.append(cur); st=end
                V.add(p); r = out if ok else None
            extra = (len(r)-1) if r else 5
            cost[p] = use[p]*extra
        k = max(min(excess, int(0.1*excess)+1), min(excess, 200))
        for p in sorted(cost, key=cost.get)[:k]: V.discard(p)
    use, tot, _ = tokenize_all(V)
    for sn in snaps:
        if len(V)<=sn and not os.path.exists(f"/tmp/s23/snap-{sn}.json"): json.dump(sorted(V), open(f"/tmp/s23/snap-{sn}.json","w"))
    print("iter", len(V), "word tokens", tot, f"{tot/total:.4f}", time.time()-t0, flush=True)
json.dump(sorted(V), open(f"/tmp/s23/iter-{target}.json","w"))
json.dump(sorted(V1), open(f"/tmp/s23/oneshot-{target}.json","w"))
