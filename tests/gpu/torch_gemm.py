"""PyTorch matmuls of known shapes for the GEMM capture test (tests/check_trace.c, mode
"torch-gemm", holds the expected cuBLAS shapes; keep the two in step). PyTorch is
row-major and cuBLAS column-major, so y = x @ W.T with x [M, K] and W [N, K] reaches cuBLAS
as m = N, n = M, k = K with A transposed."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
dev = "cuda"
bf = torch.bfloat16
x = torch.randn(7, 4096, device=dev, dtype=bf)
w = torch.randn(1000, 4096, device=dev, dtype=bf)
a = torch.randn(512, 4096, device=dev, dtype=bf)
b = torch.randn(4096, 11008, device=dev, dtype=bf)
q = torch.randn(32, 128, 64, device=dev, dtype=bf)
k = torch.randn(32, 64, 256, device=dev, dtype=bf)
xf = torch.randn(300, 500, device=dev)
wf = torch.randn(500, 200, device=dev)
for _ in range(3):
    F.linear(x, w)            # cuBLAS m=1000 n=7 k=4096, A transposed
    a @ b                     # m=11008 n=512 k=4096
    torch.bmm(q, k)           # m=256 n=128 k=64, batch 32
torch.backends.cuda.matmul.allow_tf32 = True
for _ in range(2):
    xf @ wf                   # fp32 on TF32: m=200 n=300 k=500
torch.cuda.synchronize()
print("torch_gemm: done")
