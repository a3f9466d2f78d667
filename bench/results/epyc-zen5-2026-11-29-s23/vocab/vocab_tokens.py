# Tokens of FLORES-200 devtest per language under each vocabulary (lase-mini's, lase-base's, and vocab_grow.py's).
#   .venv/bin/python vocab_tokens.py /tmp/s23/snap-*.json /tmp/s23/iter-16000.json
import json, sys
from tokenizers import Tokenizer
from tokenizers.models import WordPiece
base = Tokenizer.from_file("models/lase-base/tokenizer.json"); base.no_padding(); base.no_truncation()
def make(pieces):
    t = Tokenizer.from_file("models/lase-base/tokenizer.json"); t.no_padding(); t.no_truncation()
    t.model = WordPiece({p:i for i,p in enumerate(pieces)}, unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100)
    return t
mini = Tokenizer.from_file("models/lase-mini/tokenizer.json"); mini.no_padding(); mini.no_truncation()
cands = {"mini16k": mini, "base": base}
for f in sys.argv[1:]:
    cands[f.split('/')[-1]] = make(json.load(open(f)))
langs = ["eng_Latn","deu_Latn","fra_Latn","spa_Latn","rus_Cyrl","zho_Hans","arb_Arab"]
data = {l: open(f"../shared/data/flores200-devtest/devtest/{l}.devtest").read().splitlines() for l in langs}
for name,t in cands.items():
    row=[]
    for l in langs:
        row.append(sum(len(e.ids) for e in t.encode_batch(data[l])))
    print(f"{name:18s}", " ".join(f"{l[:3]} {n:6d}" for l,n in zip(langs,row)), "eng+deu", row[0]+row[1])
