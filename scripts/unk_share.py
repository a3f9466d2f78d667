"""The [UNK]-share groups that scripts/tatoeba_by_tokenizer.py and scripts/dev_gain_by_unk.py
report by: the share of a language's training-text tokens that a tokenizer reads as [UNK]
(`lase tokenizer coverage --json`), from the worst-read group to the readable one."""

# (name, lowest share in the group), worst-read first; a share falls in the first group
# whose lower bound it reaches.
GROUPS = [("[UNK] >= 20%", 0.20), ("5-20%", 0.05), ("1-5%", 0.01), ("< 1%", 0.0)]
READABLE = GROUPS[-1][0]


def group_of(share):
    """The name of the group an [UNK] share (0..1) falls in."""
    for name, low in GROUPS:
        if share >= low:
            return name
    raise ValueError(f"[UNK] share {share!r} is not a fraction of tokens (0..1)")
