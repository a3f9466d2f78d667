#!/usr/bin/env python3
"""The shape of src/ that docs/architecture.md reports: files over 600 lines (and how many
of those lines are tests), functions over 100 lines (tests aside), and import loops
between modules and between files (edges are `crate::`/`super::` paths outside comments
and tests). Usage: python3 scripts/code_shape.py"""
import collections, glob, os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src") + "/"


def code(text):
    i = text.find("#[cfg(test)]")
    body = text if i < 0 else text[:i]
    return "\n".join(l for l in body.split("\n") if not l.strip().startswith("//"))


files = {}
for f in sorted(glob.glob(ROOT + "**/*.rs", recursive=True)):
    rel = f[len(ROOT):-3]
    rel = rel[:-4] if rel.endswith("/mod") else rel
    files[rel.replace("/", "::")] = f

print("files over 600 lines (lines before #[cfg(test)] in brackets):")
for mod, f in files.items():
    text = open(f).read()
    n = text.count("\n")
    if n > 600:
        i = text.find("#[cfg(test)]")
        print(f"  {f[len(ROOT):]}: {n} ({text[:i].count(chr(10)) if i >= 0 else n})")

print("functions over 100 lines (tests aside):")
for mod, f in files.items():
    lines = open(f).read().split("\n")
    end = next((i for i, l in enumerate(lines) if l.startswith("#[cfg(test)]")), len(lines))
    i = 0
    while i < end:
        m = re.match(r"^(\s*)(pub(\([a-z]+\))? )?(async )?fn (\w+)", lines[i])
        if m:
            indent = m.group(1)
            j = i
            while j < end and lines[j].rstrip() != indent + "}":
                j += 1
            if j - i + 1 > 100:
                print(f"  {f[len(ROOT):]}: {m.group(5)} ({j - i + 1} lines)")
            i = j
        i += 1

graph = collections.defaultdict(set)
for mod, f in files.items():
    if mod == "main" or mod.startswith("cli"):
        continue
    parent = mod.rsplit("::", 1)[0] if "::" in mod else ""
    for kind, a, b in re.findall(r"(crate|super)::(\w+)(?:::(\w+))?", code(open(f).read())):
        if kind == "crate":
            target = a + ("::" + b if b and f"{a}::{b}" in files else "")
        else:
            target = (parent + "::" if parent else "") + a
            if target not in files:
                continue
        if target != mod and not mod.startswith(target + "::"):
            graph[mod].add(target)

sys.setrecursionlimit(10000)
index, low, stack, on, loops, counter = {}, {}, [], set(), [], [0]


def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in graph.get(v, ()):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            loops.append(sorted(comp))


for v in list(graph):
    if v not in index:
        visit(v)
print(f"import loops between files: {len(loops)}", *loops, sep="\n  ")
tops = collections.defaultdict(set)
for a, targets in graph.items():
    for t in targets:
        x, y = a.split("::")[0], t.split("::")[0]
        if x != y:
            tops[x].add(y)
print("module imports (lower layers on the right):")
for a in sorted(tops):
    print(f"  {a} -> {', '.join(sorted(tops[a]))}")
