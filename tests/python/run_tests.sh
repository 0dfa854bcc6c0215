#!/bin/sh
# Runs the harness tests (test_harness.py, $1) with the first interpreter that
# imports torch and numpy. Exit 77 (ctest: skipped) when there is none.
test_file="$1"
if [ -n "${ASSAY_TEST_PYTHON:-}" ]; then
  if ! "$ASSAY_TEST_PYTHON" -c 'import torch, numpy' >/dev/null 2>&1; then
    echo "ASSAY_TEST_PYTHON=$ASSAY_TEST_PYTHON cannot import torch and numpy" >&2
    exit 1
  fi
  exec "$ASSAY_TEST_PYTHON" -B "$test_file"
fi
for py in /usr/bin/python3 python3 /opt/torch/.venv/bin/python3; do
  if "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
    echo "interpreter: $py"
    exec "$py" -B "$test_file"
  fi
done
echo "SKIP: no Python interpreter with torch and numpy (set ASSAY_TEST_PYTHON)"
exit 77
