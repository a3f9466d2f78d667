(zcat ../shared/data/parallel-news/*/newstest2015.eng.gz | head -n 2000; zcat ../shared/data/parallel-bible/eng_Latn.txt.gz | awk 'NF>0' | shuf -n 2000 --random-source=<(yes)) > /tmp/lbl-en.txt
target/release/lase --threads 1 embed --quiet --model models/all-MiniLM-L6-v2 --input /tmp/lbl-en.txt --output /tmp/lbl-en.npy
.venv/bin/python scripts/soft_label_entropy.py /tmp/lbl-en.npy --batch 256
