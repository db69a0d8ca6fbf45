#!/usr/bin/env python3
"""Where a booster's added instructions go: runs the overhead bench's unbiased decode and one
variant under callgrind with per-instruction counts (--dump-instr=yes), then prints, per
function, the variant's instructions minus twice the unbiased run's (the variant run decodes
the unbiased set too), then, in address order, every instruction only the variant runs that
executes at least 300k times per decode, with its disassembly: the booster's own compiled
search loop. Read it beside the unbiased loop (same shape, other addresses): the blocks that
run once per expanded token (2.42M on quick ATCO2-1h) and once per arc show what the question
per token and the lookup per arc cost; the README's split (22M / 45M / 22M) was read off this
listing. Needs valgrind and objdump; about 3 minutes.

Usage: scripts/overhead_by_address.py ["variant text", default "lookups only"]
"""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

variant = sys.argv[1] if len(sys.argv) > 1 else "lookups only"
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(root)
subprocess.run(["cargo", "bench", "-q", "-p", "ctxbench", "--bench", "overhead", "--no-run"], check=True)
bins = [b for b in glob.glob("target/release/deps/overhead-*") if not b.endswith(".d")]
binary = max(bins, key=os.path.getmtime)


def run(only, out):
    env = dict(os.environ, ONLY=only, ROUNDS="1")
    subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
                    "--toggle-collect=*decode_utterance*", f"--callgrind-out-file={out}",
                    binary, "--bench"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def parse(path):
    """Self instructions per (function, address)."""
    cost = collections.Counter()
    names, fn, addr, skip = {}, None, 0, False
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(2):
                names[m.group(1)] = m.group(2)
            if line.startswith("fn="):
                fn = names.get(m.group(1), "")
            continue
        if line.startswith("calls="):
            skip = True
            continue
        if not line or line[0] not in "0123456789+-*":
            continue
        parts = line.split()
        tok = parts[0]
        if tok == "*":
            pass
        elif tok[0] in "+-":
            addr += int(tok, 0)
        else:
            addr = int(tok, 0)
        if skip:
            skip = False
            continue
        if len(parts) >= 3 and fn:
            cost[(fn, addr)] += int(parts[-1])
    return cost


with tempfile.TemporaryDirectory() as d:
    base_out, var_out = f"{d}/base.out", f"{d}/var.out"
    run("no such variant", base_out)
    run(variant, var_out)
    base, var = parse(base_out), parse(var_out)

per_fn = collections.Counter()
for (fn, a), c in var.items():
    per_fn[fn] += c
for (fn, a), c in base.items():
    per_fn[fn] -= 2 * c
total = sum(base.values())
print(f"unbiased decode: {total:,} instructions; variant '{variant}' adds "
      f"{sum(per_fn.values()):+,} ({100 * sum(per_fn.values()) / total:+.2f}%)")
for fn, c in sorted(per_fn.items(), key=lambda x: -abs(x[1]))[:8]:
    print(f"{c:+15,}  {fn[:110]}")

# Instructions the variant runs that the unbiased decode does not (the booster's own code).
only = collections.Counter()
for (fn, a), c in var.items():
    extra = c - base.get((fn, a), 0)
    if extra > 0 and base.get((fn, a), 0) == 0:
        only[a] += extra
asm = {}
dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True, text=True).stdout
for line in dump.splitlines():
    m = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
    if m:
        asm[int(m.group(1), 16)] = m.group(2)[:60]
print("\ninstructions only the variant runs, >= 300k executions per decode (count, address, instruction):")
for a, c in sorted(only.items()):
    if c >= 300_000:
        print(f"{c:12,}  {a:x}: {asm.get(a, '?')}")
