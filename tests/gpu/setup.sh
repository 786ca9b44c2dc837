# The set-up every tests/gpu script shares. Source it with the script's name, which names its
# log ($OUT/NAME-log.txt, all output teed there; "nolog" as second word: none) and scratch
# directory: . "$(dirname "$0")/setup.sh" capture
# Leaves the working directory at the repository root and sets OUT, B (build/, carried), L
# (llmprof), T (scratch), PY (PyTorch's Python where there is one), the offline exports and
# step().
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/llmprof-gpu-out}
mkdir -p "$OUT"
[ "${2:-}" = nolog ] || exec > >(tee "$OUT/$1-log.txt") 2>&1
B=$PWD/build
L=$B/bin/llmprof
T=$(mktemp -d "/tmp/llmprof-$1.XXXXXX")
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
step() { echo; echo "=== $*"; }
