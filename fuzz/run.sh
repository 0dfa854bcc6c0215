#!/bin/sh
# Runs the spec fuzzer for SECONDS on a scratch copy of the seed corpus.
# Exits non-zero if the fuzzer finds a crash, a leak or a broken round-trip.
#   fuzz/run.sh BUILD_DIR SECONDS
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build_dir=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
fuzzer="$build_dir/fuzz/assay_spec_fuzz"
if [ ! -x "$fuzzer" ]; then
  echo "$fuzzer not found; build it with: ninja -C $build_dir assay_spec_fuzz" >&2
  exit 2
fi
# New inputs go to a scratch corpus, so the checked-in seeds stay small.
work=$(mktemp -d "${TMPDIR:-/tmp}/assay-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
cp "$here"/corpus/* "$work/corpus/"
set +e
"$fuzzer" "$work/corpus" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  -dict="$here/spec.dict"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  mkdir -p "$build_dir/fuzz-artifacts"
  cp "$work"/artifacts/* "$build_dir/fuzz-artifacts/" 2>/dev/null || true
  echo "fuzzer failed (exit $rc); reproducers in $build_dir/fuzz-artifacts/" >&2
  exit 1
fi
echo "fuzzer ran ${seconds}s clean"
