"""Writes the bundled page set: 12 synthetic document pages as 8-bit grayscale PNG (Python's
standard library only, deterministic), for the runner's --input-dir. Pages differ in size,
orientation and layout (one or two columns, a table, a figure box), as a scanned set does.

    python3 make_pages.py [DIR]     # default: pages/ beside this script"""
import os
import random
import struct
import sys
import zlib


def png(path, width, height, rows):
    """ROWS: HEIGHT bytearrays of WIDTH gray values; no filter, one IDAT."""
    def chunk(tag, data):
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def page(seed, width, height, columns, table, figure):
    rnd = random.Random(seed)
    rows = [bytearray([250]) * width for _ in range(height)]

    def box(x0, y0, x1, y1, v):
        for y in range(max(0, y0), min(height, y1)):
            rows[y][max(0, x0):min(width, x1)] = bytes([v]) * (min(width, x1) - max(0, x0))

    margin = width // 12
    line = max(6, height // 90)
    gap = line * 2
    col_w = (width - 2 * margin - (columns - 1) * margin // 2) // columns
    box(margin, margin, width - margin, margin + 2 * line, 30)  # a title
    top = margin + 4 * line
    for c in range(columns):
        x0 = margin + c * (col_w + margin // 2)
        y = top
        while y < height - margin:
            if figure and c == 0 and abs(y - height // 2) < line:
                box(x0, y, x0 + col_w, y + height // 5, 200)  # a figure
                box(x0 + 4, y + 4, x0 + col_w - 4, y + height // 5 - 4, 235)
                y += height // 5 + gap
                continue
            if table and c == columns - 1 and abs(y - 2 * height // 3) < line:
                for r in range(6):  # a ruled table
                    box(x0, y, x0 + col_w, y + 1, 60)
                    for k in range(4):
                        cx = x0 + k * col_w // 4 + 4
                        box(cx, y + 4, cx + rnd.randint(col_w // 10, col_w // 5), y + 4 + line,
                            70)
                    y += line + 8
                box(x0, y, x0 + col_w, y + 1, 60)
                y += gap
                continue
            end = x0 + col_w if rnd.random() > 0.15 else x0 + rnd.randint(col_w // 3, col_w)
            x = x0
            while x < end:  # words
                w = rnd.randint(line * 2, line * 7)
                box(x, y, min(x + w, end), y + line, rnd.choice((20, 35, 50)))
                x += w + line
            y += gap + (gap if rnd.random() < 0.1 else 0)  # paragraphs
    return rows


LAYOUTS = [  # width, height, columns, table, figure
    (640, 828, 1, False, False), (640, 828, 2, False, False), (640, 828, 1, True, False),
    (640, 828, 2, True, True), (828, 640, 1, False, True), (828, 640, 2, True, False),
    (720, 1018, 1, False, False), (720, 1018, 2, False, True), (720, 1018, 1, True, True),
    (512, 512, 1, False, False), (1024, 768, 2, True, True), (600, 900, 1, True, False),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "pages")
    os.makedirs(out, exist_ok=True)
    for i, (w, h, cols, table, fig) in enumerate(LAYOUTS):
        png(os.path.join(out, f"page-{i + 1:02d}.png"), w, h, page(i, w, h, cols, table, fig))
    print(f"wrote {len(LAYOUTS)} pages to {out}")


if __name__ == "__main__":
    main()
