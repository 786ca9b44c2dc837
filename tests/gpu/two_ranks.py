"""A parent that never touches CUDA starts two CUDA children with RANK=0 and RANK=1:
`llmprof record` must leave exactly two traces, named by rank."""
import os
import subprocess
import sys

child = "import torch; x = torch.ones(1024, device='cuda'); print('rank', x.sum().item())"
procs = [subprocess.Popen([sys.executable, "-c", child], env={**os.environ, "RANK": str(r)})
         for r in (0, 1)]
raise SystemExit(max(p.wait() for p in procs))
