#!/usr/bin/env bash
# Assay's main job, from a fresh Debian 12 machine: install what is needed,
# build, start a server on loopback, run every example in examples/ through it
# and print the results. Without a GPU it runs what needs none and says plainly
# which examples need a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
exec ./examples/run-all.sh build/assay
