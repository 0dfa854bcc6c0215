#!/usr/bin/env bash
# Materializes a KernelBench work tree for the comparison benchmark (bench/kernelbench/run.sh).
# Run it on the development machine, from the repository root:
#   bench/kernelbench/prepare_kb.sh GIT_DIR [DEST]
# GIT_DIR: a git directory of github:ScalingIntelligence/KernelBench (the search tool's `fetch`
#          gives /work/.mirror/ScalingIntelligence+KernelBench/repo). DEST: default .kb (ignored
#          by git; name it in the device run's `carry`).
# DEST gets HEAD's tree, DEST/COMMIT (the commit evaluated), and DEST/site/pydantic: Debian's
# pure-Python pydantic, which kernelbench/eval.py imports for its result container and the GPU
# machine's Python lacks (apt-get download needs Debian's registry; without it kb_eval.py falls
# back to a minimal container and says so).
set -euo pipefail
GIT_DIR=${1:?usage: prepare_kb.sh GIT_DIR [DEST]}
DEST=${2:-.kb}
rm -rf "$DEST"
mkdir -p "$DEST/site"
git --git-dir="$GIT_DIR" archive HEAD | tar -x -C "$DEST"
git --git-dir="$GIT_DIR" rev-parse HEAD >"$DEST/COMMIT"
[ -f "$DEST/src/kernelbench/eval.py" ] || { echo "prepare_kb: $DEST/src/kernelbench/eval.py missing" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if (cd "$tmp" && apt-get download python3-pydantic >/dev/null 2>&1); then
  dpkg -x "$tmp"/python3-pydantic_*.deb "$tmp/x"
  cp -r "$tmp/x/usr/lib/python3/dist-packages/pydantic" "$DEST/site/"
  echo "prepare_kb: pydantic $(sed -n 's/^Version: //p' "$tmp"/x/usr/lib/python3/dist-packages/pydantic-*.egg-info/PKG-INFO) in $DEST/site"
else
  echo "prepare_kb: could not download Debian's python3-pydantic; kb_eval.py will use its stand-in" >&2
fi
echo "prepare_kb: KernelBench $(cat "$DEST/COMMIT") in $DEST ($(du -sh "$DEST" | cut -f1))"
