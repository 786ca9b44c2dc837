"""The plan's DeepSeek-OCR runner: one request per page image per repeat, through DeepSeek-OCR
(v1, model_type deepseek_vl_v2, assembled in model.py) or DeepSeek-OCR-2 (deepseek_ocr2),
with NVTX stages named by llmprof's report rules and the script's own timer.

    python3 run.py --model-path DIR --init-weights          # once: random weights (no hub)
    llmprof profile --repeat 3 -o RUN -- python3 run.py --model-path DIR --input-dir pages
    llmprof report RUN --model DIR/config.json

The request (the plan's LLMProfileRequest fields):
  --model-path      a Hugging Face model directory: config.json and safetensors weights
  --input-dir       page images (*.png; *.jpg and others when Pillow is installed)
  --repeats         passes over the image set in this process (one request per image each)
  --max-new-tokens  tokens generated per request (greedy, no stop at EOS: fixed work)
  --device          cuda or cuda:N
  --use-flash-attn  FlashAttention 2 in the decoder (needs the flash-attn package)
  --operators       PyTorch's emit_nvtx(record_shapes=True): every operator as an NVTX range
                    with its input shapes, for llmprof's operator table (slows the CPU side)

Each request: a "prefill" range holding the vision ranges ("sam", "clip" or "encoder",
"projector", through forward hooks) and the decoder's first forward, then one "decode" range
over the other new tokens. A warm-up request on the first image comes first, named like the
others (as people write it); llmprof finds it. Pages are decoded, padded to a square with
DeepSeek-OCR's mean grey and resized to 1024 x 1024 (the "base" mode: 256 image tokens)
before the first request; the prompt is the image's slots and --prompt-tokens fixed text
tokens (no tokenizer is needed with random weights).

Arguments are checked before PyTorch is imported; --dry-run stops there and prints the
request. Errors say which argument and what to do, with status 2 (arguments) or 1 (the GPU,
the model or its weights). When run under `llmprof record` (LLMPROF_REQUEST_FILE is set), the
request is written there and ends up in the run's meta.json and report.json."""
import argparse
import hashlib
import importlib.util
import json
import os
import re
import struct
import sys
import time
import zlib

RUNNER = "deepseek-ocr"
MODEL_TYPES = {"deepseek_vl_v2": "DeepSeek-OCR", "deepseek_ocr2": "DeepSeek-OCR-2"}
PNG_EXT = (".png",)
OTHER_EXT = (".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff")
MAX_IMAGES = 1000
MAX_PIXELS = 16 << 20  # the runner's own PNG reader: a 4096 x 4096 page
HERE = os.path.dirname(os.path.abspath(__file__))


class Refused(Exception):
    """A request the runner cannot run; STATUS 2: the arguments, 1: the machine or model."""

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


def parse(argv):
    p = argparse.ArgumentParser(prog="run.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-path", required=True, help="model directory (config.json, weights)")
    p.add_argument("--input-dir", default=os.path.join(HERE, "pages"),
                   help="page images (default: the bundled set)")
    p.add_argument("--repeats", type=int, default=1, help="passes over the images (default 1)")
    p.add_argument("--max-new-tokens", type=int, default=32, help="per request (default 32)")
    p.add_argument("--device", default="cuda", help="cuda or cuda:N (default cuda)")
    p.add_argument("--use-flash-attn", action="store_true", help="FlashAttention 2 (flash-attn)")
    p.add_argument("--operators", action="store_true",
                   help="emit_nvtx(record_shapes=True) around the requests")
    p.add_argument("--prompt-tokens", type=int, default=16, help="text tokens after the image")
    p.add_argument("--timer", help="write the requests' own timings here (JSON)")
    p.add_argument("--init-weights", action="store_true",
                   help="write random weights (seed 0) from config.json into --model-path, exit")
    p.add_argument("--dry-run", action="store_true", help="check the request, print it, exit")
    return p.parse_args(argv)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def weight_files(path, kind):
    """The weights the runner reads: v1's one file in the assembly's layout, OCR-2's
    safetensors as save_pretrained writes them (one file or shards)."""
    if kind == "deepseek_vl_v2":
        return ["model.safetensors"] if os.path.isfile(os.path.join(path, "model.safetensors")) \
            else []
    return sorted(n for n in os.listdir(path) if n.endswith(".safetensors"))


def check_model(args):
    path = os.path.abspath(args.model_path)
    if not os.path.isdir(path):
        raise Refused(f"--model-path {args.model_path}: not a directory (a Hugging Face model "
                      "directory: config.json and safetensors weights)")
    cfg_path = os.path.join(path, "config.json")
    try:
        with open(cfg_path) as f:
            cfg = json.load(f)
    except OSError as e:
        raise Refused(f"--model-path {args.model_path}: cannot read config.json ({e.strerror})")
    except ValueError as e:
        raise Refused(f"{cfg_path}: not JSON ({e})")
    if not isinstance(cfg, dict):
        raise Refused(f"{cfg_path}: not a JSON object")
    kind = cfg.get("model_type")
    if kind not in MODEL_TYPES:
        raise Refused(f"{cfg_path}: model_type {kind!r} is not one this runner builds "
                      f"({', '.join(sorted(MODEL_TYPES))})")
    need = ("language_config", "vision_config") if kind == "deepseek_vl_v2" else \
        ("text_config", "vision_config")
    for key in need:
        if not isinstance(cfg.get(key), dict):
            raise Refused(f"{cfg_path}: key {key!r} must be an object ({MODEL_TYPES[kind]})")
    lang = cfg[need[0]]
    limit = lang.get("max_position_embeddings")
    prompt = 1 + (273 if kind == "deepseek_vl_v2" else 257) + args.prompt_tokens
    if isinstance(limit, int) and prompt + args.max_new_tokens > limit:
        raise Refused(f"--max-new-tokens {args.max_new_tokens}: the prompt ({prompt} tokens) "
                      f"and the new tokens pass the model's {limit} positions")
    weights = weight_files(path, kind)
    if args.init_weights and weights:
        raise Refused(f"--init-weights: {path} already holds weights ({weights[0]}); remove "
                      "them first (the runner never replaces a file)")
    if not args.init_weights and not weights:
        want = "model.safetensors" if kind == "deepseek_vl_v2" else "*.safetensors weights"
        raise Refused(f"--model-path {args.model_path}: no {want}; for random "
                      "weights from its config.json run once with --init-weights")
    return path, cfg_path, cfg


def list_images(args):
    d = args.input_dir
    if not os.path.isdir(d):
        raise Refused(f"--input-dir {d}: not a directory of page images")
    names = sorted(n for n in os.listdir(d) if n.lower().endswith(PNG_EXT + OTHER_EXT)
                   and os.path.isfile(os.path.join(d, n)))
    if not names:
        raise Refused(f"--input-dir {d}: no page images in it ("
                      + ", ".join("*" + e for e in PNG_EXT + OTHER_EXT) + ")")
    if len(names) > MAX_IMAGES:
        raise Refused(f"--input-dir {d}: {len(names)} images, more than {MAX_IMAGES}")
    pillow = importlib.util.find_spec("PIL") is not None
    for n in names:
        full = os.path.join(d, n)
        if os.path.getsize(full) == 0:
            raise Refused(f"--input-dir {d}: {n} is empty")
        if not n.lower().endswith(PNG_EXT) and not pillow:
            raise Refused(f"--input-dir {d}: {n} needs Pillow to be read (only PNG is read "
                          "without it); install Pillow or convert the pages to PNG")
        if n.lower().endswith(PNG_EXT) and not pillow:
            png_header(full)  # the runner's own reader takes it: refused now, not after the build
    return [os.path.join(os.path.abspath(d), n) for n in names]


def check(args):
    """The request as the plan names its fields, or Refused."""
    if args.repeats < 1 or args.repeats > 1000:
        raise Refused(f"--repeats {args.repeats}: must be 1 to 1000")
    if args.max_new_tokens < 2 or args.max_new_tokens > 8192:
        raise Refused(f"--max-new-tokens {args.max_new_tokens}: must be 2 to 8192 (a prefill "
                      "token and at least one decode step)")
    if args.prompt_tokens < 0 or args.prompt_tokens > 8192:
        raise Refused(f"--prompt-tokens {args.prompt_tokens}: must be 0 to 8192")
    if not re.fullmatch(r"cuda(:[0-9]{1,3})?", args.device):
        raise Refused(f"--device {args.device}: must be cuda or cuda:N")
    if args.use_flash_attn and importlib.util.find_spec("flash_attn") is None:
        raise Refused("--use-flash-attn: the flash-attn package is not installed (pip install "
                      "flash-attn); without the option PyTorch's SDPA attention is used")
    if args.timer and not os.path.isdir(os.path.dirname(os.path.abspath(args.timer))):
        raise Refused(f"--timer {args.timer}: its directory does not exist")
    if args.timer and os.path.lexists(args.timer) and not os.path.isfile(args.timer):
        raise Refused(f"--timer {args.timer}: exists and is not a regular file")
    path, cfg_path, cfg = check_model(args)
    timer = os.path.realpath(args.timer) if args.timer else None
    for name, d in (("--model-path", path), ("--input-dir", args.input_dir)):
        if timer and os.path.commonpath([timer, os.path.realpath(d)]) == os.path.realpath(d):
            raise Refused(f"--timer {args.timer}: inside {name}, one of the inputs; write it "
                          "elsewhere")
    images = [] if args.init_weights else list_images(args)
    return {"runner": RUNNER, "model_path": path, "model_type": cfg["model_type"],
            "model": MODEL_TYPES[cfg["model_type"]], "config_sha256": sha256(cfg_path),
            "input_dir": os.path.abspath(args.input_dir), "images": len(images),
            "repeats": args.repeats, "max_new_tokens": args.max_new_tokens,
            "device": args.device, "use_flash_attn": args.use_flash_attn,
            "operators": args.operators, "prompt_text_tokens": args.prompt_tokens,
            "vision_mode": "base"}, cfg, images


def png_header(path):
    """(width, height, channels) of a PNG this reader takes, from its header alone."""
    with open(path, "rb") as f:
        head = f.read(33)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR" or len(head) < 29:
        raise Refused(f"{path}: not a PNG file (or a damaged one)", 1)
    w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", head[16:29])
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace or not 0 < w * h <= MAX_PIXELS:
        raise Refused(f"{path}: a PNG the runner's own reader does not take (8-bit gray or "
                      "RGB, not interlaced, 1 to 16 M pixels): install Pillow, or convert or "
                      "scale the page", 1)
    return w, h, channels


def read_png(path):
    """(width, height, channels, pixel bytes) of an 8-bit, non-interlaced PNG."""
    try:
        return _read_png(path)
    except (struct.error, zlib.error, IndexError) as e:
        raise Refused(f"{path}: a damaged PNG ({e})", 1)


def _read_png(path):
    png_header(path)
    with open(path, "rb") as f:
        data = f.read()
    pos, idat, head = 8, [], None
    while pos + 8 <= len(data):
        size, tag = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        if tag == b"IHDR":
            head = struct.unpack(">IIBBBBB", body[:13])
        elif tag == b"IDAT":
            idat.append(body)
        elif tag == b"IEND":
            break
        pos += 12 + size
    if not head or not idat:
        raise Refused(f"{path}: a damaged PNG (no header or no image data)", 1)
    w, h, depth, color, _, _, interlace = head
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    stride = w * channels
    # no more than the image can hold: a small file may inflate to gigabytes
    raw = zlib.decompressobj().decompress(b"".join(idat), h * (stride + 1))
    if len(raw) < h * (stride + 1):
        raise Refused(f"{path}: a damaged PNG (short image data)", 1)
    out = bytearray(h * stride)
    prev = bytearray(stride)
    for y in range(h):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = prev[i], prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif kind != 0:
            raise Refused(f"{path}: a damaged PNG (row filter {kind})", 1)
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return w, h, channels, bytes(out)


def load_page(torch, path, side):
    """A page as DeepSeek-OCR's processor gives it: padded to a square with its mean grey,
    resized to SIDE, normalised to [-1, 1]; (3, SIDE, SIDE) float. Pillow reads it where it
    is installed, else the runner's own PNG reader."""
    if importlib.util.find_spec("PIL") is None:
        w, h, c, data = read_png(path)
        img = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(h, w, c)
        img = img[..., :1].expand(h, w, 3) if c <= 2 else img[..., :3]
    else:
        import numpy
        from PIL import Image
        try:
            with Image.open(path) as page:
                img = torch.from_numpy(numpy.asarray(page.convert("RGB")).copy())
        except Exception as e:  # Pillow's own: damaged, unknown, a decompression bomb
            raise Refused(f"{path}: Pillow cannot read it ({e})", 1)
        h, w = img.shape[:2]
    x = img.permute(2, 0, 1).float()
    n = max(h, w)
    square = torch.full((3, n, n), 127.0)
    square[:, (n - h) // 2:(n - h) // 2 + h, (n - w) // 2:(n - w) // 2 + w] = x
    square = torch.nn.functional.interpolate(square[None], size=(side, side), mode="bilinear",
                                             antialias=True, align_corners=False)[0]
    return (square / 255.0 - 0.5) / 0.5


def nvtx_hooks(torch, module, name):
    """An NVTX range around every call of MODULE (hooks return None: a value would replace
    the module's inputs or output)."""
    def push(m, a):
        torch.cuda.nvtx.range_push(name)

    def pop(m, a, o):
        torch.cuda.nvtx.range_pop()

    module.register_forward_pre_hook(push)
    module.register_forward_hook(pop)


def write_request(request):
    """Leaves the request where `llmprof record` asked for it; never fails the run."""
    path = os.environ.get("LLMPROF_REQUEST_FILE")
    if not path:
        return
    try:
        with open(path, "w") as f:
            json.dump(request, f, indent=1)
    except OSError as e:
        print(f"run.py: warning: could not write the request to {path}: {e.strerror}",
              file=sys.stderr)


def run(args, request, cfg, images):
    import torch
    import model as ocr

    if not torch.cuda.is_available():
        raise Refused("no CUDA device is visible to PyTorch", 1)
    index = int(args.device.split(":")[1]) if ":" in args.device else 0
    if index >= torch.cuda.device_count():
        raise Refused(f"--device {args.device}: this machine has {torch.cuda.device_count()} "
                      "CUDA devices", 1)
    device = torch.device("cuda", index)
    torch.cuda.set_device(device)
    # the pages before the model: a bad one costs no build
    pages = [] if args.init_weights else [load_page(torch, p, ocr.image_side()) for p in images]
    attn = "flash_attention_2" if args.use_flash_attn else "sdpa"
    t = time.perf_counter()
    model = ocr.build(request["model_path"], cfg, device, attn, args.init_weights)
    build_s = time.perf_counter() - t
    params = model.params()
    print(f"run.py: {request['model']} built in {build_s:.1f} s: {json.dumps(params)}",
          flush=True)
    if args.init_weights:
        ocr.save(model, request["model_path"])
        print(f"run.py: random weights written to {request['model_path']}")
        return {"params": params}
    write_request(request)
    for module, name in model.vision_modules():
        nvtx_hooks(torch, module, name)
    pages = [p.to(device, torch.bfloat16)[None] for p in pages]
    text = torch.randint(2, 100000, (args.prompt_tokens,),
                         generator=torch.Generator().manual_seed(0)).tolist()
    ids = torch.tensor([[ocr.BOS] + [model.image_token_id] * model.image_slots() + text],
                       device=device)

    @torch.inference_mode()
    def request_one(page):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("prefill")
        out = model(ids, pixel_values=page)
        nxt = out.logits[:, -1:].argmax(-1)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        torch.cuda.nvtx.range_push("decode")
        past = out.past_key_values
        for _ in range(args.max_new_tokens - 1):
            out = model(nxt, past_key_values=past)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        t2 = time.perf_counter()
        steps = args.max_new_tokens - 1
        return {"ttft_ms": (t1 - t0) * 1e3, "decode_ms": (t2 - t1) * 1e3,
                "decode_steps": steps, "tpot_ms": (t2 - t1) * 1e3 / steps}

    def all_requests():
        done = [dict(request_one(pages[0]), image=os.path.basename(images[0]), warmup=True)]
        for rep in range(args.repeats):
            for name, page in zip(images, pages):
                r = request_one(page)
                done.append(dict(r, image=os.path.basename(name), repeat=rep, warmup=False))
                print(f"run.py: repeat {rep} {os.path.basename(name)}: TTFT "
                      f"{r['ttft_ms']:.2f} ms, TPOT {r['tpot_ms']:.3f} ms", flush=True)
        return done

    if args.operators:
        with torch.autograd.profiler.emit_nvtx(record_shapes=True):
            done = all_requests()
    else:
        done = all_requests()
    return {"params": params, "build_s": build_s, "prompt": ids.shape[1],
            "visual_tokens": model.image_slots(), "text_tokens": 1 + args.prompt_tokens,
            "batch": 1, "new_tokens": args.max_new_tokens, "requests": done,
            "attn_implementation": attn, "torch": torch.__version__,
            "transformers": __import__("transformers").__version__}


def main(argv):
    args = parse(argv)
    try:
        request, cfg, images = check(args)
        if args.dry_run:
            print(json.dumps(request, indent=1))
            return 0
        sys.path.insert(0, HERE)
        try:
            result = run(args, request, cfg, images)
        except (ValueError, OSError) as e:  # the model's files, the config's sections
            raise Refused(str(e), 1)
        result["request"] = request
        if args.timer:
            try:
                with open(args.timer, "w") as f:
                    json.dump(result, f, indent=1)
            except OSError as e:
                raise Refused(f"--timer {args.timer}: {e.strerror}", 1)
    except Refused as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        return e.status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
