#!/usr/bin/env python3
"""Three-way merge of a kb/*.toml file by [[signature]] block (id). usage: kb_merge3.py BASE OURS THEIRS > OUT
A block changed on one side only takes that side; changed on both sides the same way, either; changed
differently on both sides -> exit 1 naming the id. New blocks: ours' then theirs' in their order."""
import re, sys
SEP = "\n[[signature]]\n"
def blocks(text):
    parts = text.split(SEP)
    head, rest = parts[0], parts[1:]
    out = {}
    order = []
    for b in rest:
        m = re.search(r'^id = "([^"]+)"', b, re.M)
        k = m.group(1) if m else f"?{len(order)}"
        out[k] = b.rstrip("\n") + "\n"; order.append(k)
    return head, out, order
if len(sys.argv) != 4:
    raise SystemExit("usage: kb_merge3.py BASE OURS THEIRS > OUT")
try:
    base, ours, theirs = (open(p, encoding="utf-8").read() for p in sys.argv[1:4])
except (OSError, UnicodeDecodeError) as exc:
    raise SystemExit(f"kb_merge3.py: cannot read {exc}")
hb, bb, bo = blocks(base); ho, ob, oo = blocks(ours); ht, tb, to = blocks(theirs)
bad = []
def pick(b, o, t, name):
    if o == t: return o
    if o == b: return t
    if t == b: return o
    bad.append(name); return o
head = pick(hb, ho, ht, "<header>")
res = []
for k in bo:
    b, o, t = bb[k], ob.get(k), tb.get(k)
    if o is None or t is None:  # deleted on a side
        if (o is None and t in (None, b)) or (t is None and o in (None, b)): continue
        bad.append(k); res.append(o or t); continue
    res.append(pick(b, o, t, k))
for k in oo:
    if k not in bb: res.append(ob[k])
for k in to:
    if k not in bb and k not in ob: res.append(tb[k])
    elif k not in bb and tb[k] != ob[k]: bad.append(k + " (added on both sides differently)")
out = head.rstrip("\n") + "\n"
for blk in res:
    out += "\n[[signature]]\n" + blk
sys.stdout.write(out)
if bad:
    print("kb_merge3: changed on both sides: " + ", ".join(bad), file=sys.stderr); sys.exit(1)
