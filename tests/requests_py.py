"""integrations/llmprof_requests.py says the request convention's messages (docs/serving.md)
through torch.cuda.nvtx: checked with a stand-in for torch.cuda.nvtx that records them, and
without PyTorch (every call a no-op)."""
import importlib
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integrations"))
said = []
fails = passes = 0


def check(what, ok):
    global fails, passes
    print(("ok - " if ok else "not ok - ") + what)
    fails += not ok
    passes += bool(ok)


# without PyTorch: no-ops, no error
sys.modules["torch"] = None
import llmprof_requests as lpr  # noqa: E402

check("without torch: no-ops", lpr.request_start(1) is None and lpr.token(1) is None)

# with a stand-in torch.cuda.nvtx
nvtx = types.ModuleType("torch.cuda.nvtx")
nvtx.range_start = lambda msg: said.append(("start", msg)) or 42
nvtx.range_end = lambda h: said.append(("end", h))
nvtx.mark = lambda msg: said.append(("mark", msg))
cuda = types.ModuleType("torch.cuda")
cuda.nvtx = nvtx
torch = types.ModuleType("torch")
torch.cuda = cuda
sys.modules.update({"torch": torch, "torch.cuda": cuda, "torch.cuda.nvtx": nvtx})
lpr = importlib.reload(lpr)
h = lpr.request_start("r7", prompt=812)
lpr.prefill("r7", tokens=256)
lpr.token("r7")
lpr.request_end(h)
check("messages", said == [("start", "request r7 prompt=812"), ("mark", "prefill r7 tokens=256"),
                           ("mark", "token r7"), ("end", 42)])
print(f"{passes} passed, {fails} failed")
sys.exit(1 if fails else 0)
