"""The DeepSeek-OCR runner (examples/deepseek-ocr/run.py) without a GPU or PyTorch: every bad
request is refused before PyTorch is imported, with the argument named and status 2; a good
one is printed by --dry-run with the plan's request fields; its PNG reader decodes every row
filter; the bundled page set is what make_pages.py writes."""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(ROOT, "examples", "deepseek-ocr")
RUN = os.path.join(EX, "run.py")
fails = 0


def check(cond, what):
    global fails
    print(("ok - " if cond else "not ok - ") + what)
    fails += not cond


def run(*args, env=None):
    p = subprocess.run([sys.executable, RUN, *args], capture_output=True, text=True,
                       env=env, timeout=60)
    return p.returncode, p.stdout + p.stderr


def expect(status, pattern, what, *args):
    rc, out = run(*args)
    check(rc == status and pattern in out, f"{what} (status {rc}, wanted {status}: {out.strip()})"
          if rc != status or pattern not in out else what)


def png_filtered(path, w, h, rows, channels):
    """A PNG whose rows use filters 0..4 in turn (the encoder's side of each)."""
    def paeth(a, b, c):
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        return a if pa <= pb and pa <= pc else b if pb <= pc else c
    raw, prev = b"", bytes(w * channels)
    for y, line in enumerate(rows):
        kind = y % 5
        out = bytearray()
        for i, x in enumerate(line):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            pred = [0, a, b, (a + b) >> 1, paeth(a, b, c)][kind]
            out.append((x - pred) & 255)
        raw += bytes([kind]) + bytes(out)
        prev = line

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I",
                                                                      zlib.crc32(tag + data))
    color = {1: 0, 3: 2}[channels]
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0,
                                                                   0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    tmp = tempfile.mkdtemp(prefix="lp_runner.")
    try:
        model = os.path.join(tmp, "ocr")
        os.mkdir(model)
        shutil.copy(os.path.join(ROOT, "tests", "configs", "deepseek-ocr.json"),
                    os.path.join(model, "config.json"))
        # argument errors, each before PyTorch (which this machine may lack) is imported
        expect(2, "--model-path", "a missing --model-path is refused")
        expect(2, "--model-path /nonexistent: not a directory", "a model path that is not there",
               "--model-path", "/nonexistent")
        expect(2, "no model.safetensors; for random weights from its config.json run once "
               "with --init-weights", "a model directory without weights", "--model-path", model)
        open(os.path.join(model, "model.safetensors"), "wb").close()
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        expect(2, f"--input-dir {empty}: no page images in it", "an empty image directory",
               "--model-path", model, "--input-dir", empty)
        expect(2, "--input-dir /nonexistent: not a directory", "an image directory not there",
               "--model-path", model, "--input-dir", "/nonexistent")
        open(os.path.join(empty, "blank.png"), "wb").close()
        expect(2, "blank.png is empty", "an empty image file", "--model-path", model,
               "--input-dir", empty)
        for bad in ("0", "-1", "1001"):
            expect(2, f"--repeats {bad}: must be 1 to 1000", f"--repeats {bad}", "--model-path",
                   model, "--repeats", bad)
        expect(2, "invalid int value: 'x'", "--repeats not a number", "--model-path", model,
               "--repeats", "x")
        expect(2, "--max-new-tokens 1: must be 2 to 8192", "--max-new-tokens 1",
               "--model-path", model, "--max-new-tokens", "1")
        expect(2, "--device cpu: must be cuda or cuda:N", "--device cpu", "--model-path", model,
               "--device", "cpu")
        expect(2, "--timer /nonexistent/t.json: its directory does not exist", "a --timer "
               "nowhere", "--model-path", model, "--timer", "/nonexistent/t.json")
        expect(2, "--timer " + os.path.join(model, "t.json") + ": inside --model-path, one of "
               "the inputs", "a --timer among the model's files", "--model-path", model,
               "--timer", os.path.join(model, "t.json"))
        expect(2, f"--timer {tmp}: exists and is not a regular file", "a --timer that is a "
               "directory", "--model-path", model, "--timer", tmp)
        import importlib.util
        if importlib.util.find_spec("PIL") is None:  # with Pillow, Pillow reads the pages
            bad = os.path.join(tmp, "badpng")
            os.mkdir(bad)
            with open(os.path.join(bad, "p.png"), "wb") as f:
                f.write(b"GIF89a not a png at all, but named so........")
            expect(1, "p.png: not a PNG file", "a page that is not a PNG, before any GPU work",
                   "--model-path", model, "--input-dir", bad)
            with open(os.path.join(bad, "p.png"), "wb") as f:
                f.write(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR" + struct.pack(">IIBBBBB", 0, 5, 8, 0,
                                                                           0, 0, 0))
            expect(1, "1 to 16 M pixels", "a PNG of width 0", "--model-path", model,
                   "--input-dir", bad)
        expect(2, "already holds weights (model.safetensors); remove them first",
               "--init-weights never replaces weights", "--model-path", model, "--init-weights")
        bad_cfg = os.path.join(tmp, "badcfg")
        os.mkdir(bad_cfg)
        with open(os.path.join(bad_cfg, "config.json"), "w") as f:
            f.write('{"model_type": "llama"}')
        expect(2, "model_type 'llama' is not one this runner builds", "another model's config",
               "--model-path", bad_cfg)
        with open(os.path.join(bad_cfg, "config.json"), "w") as f:
            f.write('{"model_type": ')
        expect(2, "config.json: not JSON", "a config.json that is not JSON", "--model-path",
               bad_cfg)
        try:
            import flash_attn  # noqa: F401
        except ImportError:
            expect(2, "--use-flash-attn: the flash-attn package is not installed",
                   "--use-flash-attn without flash-attn", "--model-path", model,
                   "--use-flash-attn")
        # a good request: the plan's fields, printed by --dry-run
        rc, out = run("--model-path", model, "--repeats", "3", "--max-new-tokens", "16",
                      "--device", "cuda:0", "--dry-run")
        req = json.loads(out) if rc == 0 else {}
        want = {"model_path": model, "input_dir": os.path.join(EX, "pages"), "repeats": 3,
                "max_new_tokens": 16, "device": "cuda:0", "use_flash_attn": False,
                "images": 12, "model_type": "deepseek_vl_v2", "runner": "deepseek-ocr"}
        check(rc == 0 and all(req.get(k) == v for k, v in want.items())
              and len(req.get("config_sha256", "")) == 64,
              "--dry-run prints the request" + ("" if rc == 0 else f": {out}"))
        # the PNG reader, on rows of every filter, gray and RGB
        sys.path.insert(0, EX)
        import run as runner
        rnd = random.Random(1)
        for channels in (1, 3):
            w, h = 7, 11
            rows = [bytes(rnd.randrange(256) for _ in range(w * channels)) for _ in range(h)]
            path = os.path.join(tmp, f"f{channels}.png")
            png_filtered(path, w, h, rows, channels)
            got = runner.read_png(path)
            check(got == (w, h, channels, b"".join(rows)),
                  f"the PNG reader decodes filters 0-4 ({channels} channel(s))")
        with open(os.path.join(tmp, "trunc.png"), "wb") as f:
            f.write(open(os.path.join(EX, "pages", "page-01.png"), "rb").read()[:40])
        # a bomb: a 1 x 1 gray image whose data inflates to 256 MiB is read no further than it
        # can hold (one filter byte and one pixel)
        bomb = zlib.compressobj(1)
        data = bomb.compress(b"\0" * (1 << 20))
        for _ in range(255):
            data += bomb.compress(b"\0" * (1 << 20))
        data += bomb.flush()
        def chunk(tag, body):
            return struct.pack(">I", len(body)) + tag + body + struct.pack(
                ">I", zlib.crc32(tag + body))
        with open(os.path.join(tmp, "bomb.png"), "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0,
                                                                       0, 0))
                    + chunk(b"IDAT", data) + chunk(b"IEND", b""))
        import resource
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        check(runner.read_png(os.path.join(tmp, "bomb.png")) == (1, 1, 1, b"\0")
              and resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10,
              "a PNG whose data inflates to 256 MiB is read only as far as its image holds")
        whole = open(os.path.join(EX, "pages", "page-01.png"), "rb").read()
        with open(os.path.join(tmp, "cut.png"), "wb") as f:
            f.write(whole[:len(whole) // 2])  # the image data cut short
        try:
            runner.read_png(os.path.join(tmp, "cut.png"))
            check(False, "a PNG cut in its image data is refused")
        except runner.Refused as e:
            check("damaged PNG" in str(e) and e.status == 1,
                  f"a PNG cut in its image data is refused: {e}")
        try:
            runner.read_png(os.path.join(tmp, "trunc.png"))
            check(False, "a truncated PNG is refused")
        except runner.Refused as e:
            check("damaged PNG" in str(e) and e.status == 1, f"a truncated PNG is refused: {e}")
        # the bundled pages are make_pages.py's, byte for byte
        pages = os.path.join(tmp, "pages")
        subprocess.run([sys.executable, os.path.join(EX, "make_pages.py"), pages], check=True,
                       capture_output=True)
        names = sorted(os.listdir(pages))
        # their pixels: the compressed bytes depend on the zlib build (zlib-ng differs)
        same = names == sorted(os.listdir(os.path.join(EX, "pages"))) and all(
            runner.read_png(os.path.join(pages, n)) == runner.read_png(os.path.join(EX, "pages", n))
            for n in names)
        check(same and len(names) == 12, "the bundled pages are make_pages.py's output")
        w, h, c, data = runner.read_png(os.path.join(EX, "pages", "page-04.png"))
        check((w, h, c) == (640, 828, 1) and len(data) == w * h and min(data) < 64 < max(data),
              "a bundled page decodes to dark text on a light page")
    finally:
        shutil.rmtree(tmp)
    print(f"{'FAILED' if fails else 'passed'}: {fails} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
