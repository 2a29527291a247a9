#!/bin/bash
# Merge a round branch into main: unite the KB TOML sides by signature block, rebuild the generated files.
# usage: tools/rounds/merge_round.sh rN "Round N"   (from the main checkout, its .venv built)
set -u
BR=$1; TITLE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../.." && . .venv/bin/activate || exit 1
git merge --no-ff --no-commit "$BR" > /tmp/merge_$BR.log 2>&1
for f in $(git diff --name-only --diff-filter=U); do
  case "$f" in
    k3doctor/explain/kb/*.toml)
      git show :1:"$f" > /tmp/m_base 2>/dev/null || : > /tmp/m_base
      git show :2:"$f" > /tmp/m_ours; git show :3:"$f" > /tmp/m_theirs
      python3 "$HERE/kb_merge3.py" /tmp/m_base /tmp/m_ours /tmp/m_theirs > "$f" || { echo "KB block conflict: $f"; exit 1; }
      git add "$f"; echo "block-merged: $f";;
    fixtures/errors/kb_sources.jsonl|fixtures/errors/prior_kb_threads.txt)
      git show :1:"$f" > /tmp/m_base 2>/dev/null || : > /tmp/m_base
      git show :2:"$f" > /tmp/m_ours; git show :3:"$f" > /tmp/m_theirs
      git merge-file --union -p /tmp/m_ours /tmp/m_base /tmp/m_theirs > "$f"; git add "$f"; echo "union: $f";;
    fixtures/errors/errors.jsonl|fixtures/errors/benign.jsonl|k3doctor/explain/kb/fallback-model.json|k3doctor/explain/kb/kb-parsed.json)
      git checkout --ours "$f"; git add "$f";;
    *) echo "CONFLICT needing a hand: $f";;
  esac
done
if git diff --name-only --diff-filter=U | grep -q .; then echo "unresolved conflicts remain"; exit 1; fi
python -m fixtures.errors.build_corpus || exit 1
python tools/kb_parsed.py > /dev/null || exit 1
python tools/fallback_model.py --write-model k3doctor/explain/kb/fallback-model.json > /tmp/fm_$BR.log 2>&1 || { tail /tmp/fm_$BR.log; exit 1; }
python tools/kb_parsed.py --check || exit 1
python tools/kb_heldout_guard.py | tee /tmp/guard_$BR.log | tail -1
grep -q "^0 item(s) found" /tmp/guard_$BR.log || { echo "the KB quotes held-out text: fix it, then commit the merge by hand"; exit 1; }
git add -A fixtures/errors k3doctor/explain/kb
python -m pytest -q -x -p no:cacheprovider tests/test_explain_kb.py > /tmp/kbtest_$BR.log 2>&1
tail -1 /tmp/kbtest_$BR.log
grep -q " passed" /tmp/kbtest_$BR.log && ! grep -q " failed" /tmp/kbtest_$BR.log || { echo "tests/test_explain_kb.py fails: the merge is left uncommitted"; exit 1; }
git commit -q -m "Merge $TITLE (branch $BR): corpus and learned model rebuilt, KB sides united" && git log --oneline -1
