"""Prints the ablation tables of docs/results.md from the run folders that
scripts/distill_ablations.sh and scripts/multistage_experiment.sh write.

    python3 scripts/ablation_tables.py
"""

import json
from pathlib import Path

RUNS = Path(__file__).resolve().parents[1] / "runs"


def load(run):
    d = RUNS / run
    out = {}
    # Later files win: a baseline's eval.json may hold all FLORES languages, the
    # ablation columns use eval-flores.json's 6.
    for name in ("eval.json", "eval-tatoeba.json", "eval-flores.json", "eval-sib.json"):
        p = d / name
        if p.exists():
            out.update(json.loads(p.read_text()))
    return out


def dev_p_at_1(run):
    """Dev P@1 of the checkpoint the row's test columns describe: best-model/'s when
    scripts/ablation_eval.sh evaluated that one (evaluated-model.txt), else the last."""
    record = RUNS / run / "evaluated-model.txt"
    best = RUNS / run / "best-model" / "dev.json"
    if record.exists() and record.read_text().strip().endswith("best-model") and best.exists():
        return json.loads(best.read_text())["dev_p_at_1"]
    p = RUNS / run / "metrics.jsonl"
    if not p.exists():
        return None
    vals = [json.loads(l).get("dev_p_at_1") for l in p.read_text().splitlines() if l.strip()]
    vals = [v for v in vals if v is not None]
    return vals[-1] if vals else None


def fmt(value, digits):
    return "-" if value is None else f"{value:.{digits}f}"


def row(label, run):
    e = load(run)
    if "tatoeba" not in e or "sts" not in e:
        return f"| {label} | (not run) |" + " |" * 9
    g = e["tatoeba"]["groups"]
    mono = e["sts"]["monolingual"]
    non_en = [v for k, v in mono.items() if k != "en"]
    cross = list(e["sts"]["cross_lingual"].values())
    flores = e.get("flores", {})
    sib = e.get("sib", {})
    cells = [
        fmt(g["xtreme36"]["p_at_1"], 2), fmt(g["muse"]["p_at_1"], 2),
        fmt(flores.get("xx_eng_mean_p_at_1"), 1), fmt(flores.get("non_english_mean_p_at_1"), 1),
        fmt(mono["en"], 1), fmt(sum(non_en) / len(non_en), 1), fmt(sum(cross) / len(cross), 1),
        fmt(sib.get("english_accuracy"), 1), fmt(sib.get("mean_accuracy"), 1),
        fmt(dev_p_at_1(run), 1),
    ]
    return f"| {label} | " + " | ".join(cells) + " |"


HEADER = ("| {} | Tatoeba XTREME-36 P@1 | mUSE-13 P@1 | FLORES xx-eng P@1 (6) | FLORES non-English P@1 (30) "
          "| STS en | STS 11 others (mean) | STS en-xx (7, mean) | SIB en | SIB zero-shot (204) | dev P@1 |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

TABLES = {
    "LEALLA losses (thin-deep 8 x 128 student from scratch, MiniLM teacher)": [
        ("AMS", "lealla-ams"), ("FD", "lealla-fd"), ("LD", "lealla-ld"),
        ("AMS + FD", "lealla-ams-fd"), ("AMS + LD", "lealla-ams-ld"), ("AMS + FD + LD (LEALLA)", "lealla-ams-fd-ld")],
    "LEALLA losses, the other readings (issue 15 items 7-8; same student and budget)": [
        ("FD, beta 2.6 (table above)", "lealla-fd"), ("FD, beta 1e3 (Eq. 3 as written)", "lealla-fd-beta-1e3"),
        ("AMS + FD, beta 2.6 (table above)", "lealla-ams-fd"),
        ("AMS + FD, beta 1.3 (mean over 768 dimensions)", "lealla-ams-fd-beta-1.3"),
        ("AMS + FD, beta 1e3 (Eq. 3 as written)", "lealla-ams-fd-beta-1e3"),
        ("AMS + LD, T = 100 (table above)", "lealla-ams-ld"),
        ("AMS + LD, T = 10 (phi = AMS-scaled logits, s = 10)", "lealla-ams-ld-t10"),
        ("AMS + LD, T = 1", "lealla-ams-ld-t1")],
    "Shape at equal encoder parameters (AMS only)": [
        ("thin-deep 8 x 128 (128-d)", "lealla-ams"), ("wide-shallow 2 x 256 (256-d)", "shape-wide-shallow"),
        ("thin-shallow 2 x 128 (128-d)", "shape-thin-shallow")],
    "Fine-tuning a pretrained student (EMS-small): hard vs soft contrastive vs MSE": [
        ("none (EMS-small as trained)", "ems-small"), ("hard contrastive (InfoNCE)", "soft-hard-contrastive"),
        ("MSE (Reimers & Gurevych)", "soft-mse"), ("soft contrastive, Priority", "soft-priority"),
        ("soft contrastive, Priority + TCM", "soft-priority-tcm")],
    "MSE in the paper's setting (issue 15 item 9): the teacher brought to the student's width": [
        ("none (EMS-small as trained)", "ems-small"),
        ("MSE through a new 256 -> 384 layer (configs/ablation/soft/mse.toml)", "soft-mse"),
        ("MSE onto the teacher PCA-reduced to 256-d, no new layer", "soft-mse-teacher-width")],
    "Priority vs Average labels, multilingual teacher lase-small (fine-tuning EMS-small)": [
        ("none (EMS-small as trained)", "ems-small"), ("hard contrastive (InfoNCE; table above)", "soft-hard-contrastive"),
        ("soft contrastive, Priority (paper's labels)", "soft-multilingual-priority"),
        ("soft contrastive, Average (paper's labels)", "soft-multilingual-average"),
        ("soft contrastive, Priority, centred labels", "soft-multilingual-priority-centred"),
        ("soft contrastive, Average, centred labels", "soft-multilingual-average-centred")],
    "Multi-stage stages (each stage's model)": [
        ("assistant after stage 1 (EMS-small + MSE)", "multistage-small/1-assistant"),
        ("student after stage 2 (built, bottleneck aligned)", "multistage-small/2-bottleneck"),
        ("student after stage 3 (MSE from the assistant)", "multistage-small/3-student"),
        ("student after stage 4 (MCL + MSE)", "multistage-small/4-contrastive")],
    "Multi-stage student shape (final students, stages 2-4 on the same assistant; parameters without the output layer)": [
        ("bs 32, \\|RU\\| 2: 2.12M", "multistage-sweep/bs32/4-contrastive"),
        ("bs 64, \\|RU\\| 2: 2.64M (configs/multistage/small.toml)", "multistage-small/4-contrastive"),
        ("bs 128, \\|RU\\| 2: 3.68M", "multistage-sweep/bs128/4-contrastive"),
        ("no bottleneck, \\|RU\\| 2: 5.69M", "multistage-sweep/no-bottleneck/4-contrastive"),
        ("bs 64, \\|RU\\| 1 (one layer applied 4 times): 1.85M", "multistage-sweep/ru1/4-contrastive"),
        ("bs 64, \\|RU\\| 4 (no recurrence): 4.22M", "multistage-sweep/ru4/4-contrastive")],
}

for title, rows in TABLES.items():
    print(f"### {title}\n")
    print(HEADER.format("row"))
    for label, run in rows:
        print(row(label, run))
    print()
