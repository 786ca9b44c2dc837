#!/usr/bin/env bash
# Builds the GPU test programs (needs nvcc and cuBLAS, not a GPU). Output: build/gpu/.
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
mkdir -p build/gpu
"$CUDA/bin/nvcc" -O2 -arch=sm_90 -o build/gpu/workload tests/gpu/workload.cu \
    -I"$CUDA/include" -L"$CUDA/lib64" -lcublas -lcupti -ldl -Xlinker -rpath="$CUDA/lib64"
echo "built build/gpu/workload"
"$CUDA/bin/nvcc" -O2 -arch=sm_90 -o build/gpu/gemm tests/gpu/gemm.cu \
    -I"$CUDA/include" -L"$CUDA/lib64" -lcublasLt -lcublas -lpthread -Xlinker -rpath="$CUDA/lib64"
echo "built build/gpu/gemm"
"$CUDA/bin/nvcc" -O2 -arch=sm_90 -o build/gpu/graphs tests/gpu/graphs.cu \
    -I"$CUDA/include" -L"$CUDA/lib64" -lcublas -ldl -Xlinker -rpath="$CUDA/lib64"
echo "built build/gpu/graphs"
