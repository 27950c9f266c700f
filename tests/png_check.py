#!/usr/bin/env python3
"""Checks that a PNG screenshot is not blank, with no imaging library: decodes
the PNG (8-bit grey, grey+alpha, RGB or RGBA, not interlaced) with zlib and
struct, then counts distinct colours and pixels that differ from the most
common (background) colour.

    png_check.py FILE.png [--min-colours N] [--min-ink FRACTION]

Prints "WIDTHxHEIGHT, N colours, F% ink"; exit 0 when the image has at least N
colours and at least FRACTION of its pixels off the background, 1 otherwise,
2 when the file is not a PNG this can read."""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if hdr is None:
        raise ValueError("no IHDR chunk")
    w, h, depth, ctype, _, _, interlace = hdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {ctype}, interlace {interlace})")
    raw = zlib.decompress(b"".join(idat))
    stride = w * channels
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, channels, rows


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    min_colours, min_ink = 8, 0.01
    path = args[0]
    i = 1
    while i < len(args):
        if args[i] == "--min-colours":
            min_colours = int(args[i + 1])
        elif args[i] == "--min-ink":
            min_ink = float(args[i + 1])
        i += 2
    try:
        w, h, ch, rows = decode(path)
    except (OSError, ValueError, zlib.error) as e:
        print(f"png_check.py: {path}: {e}", file=sys.stderr)
        return 2
    counts = {}
    for line in rows:
        for x in range(0, len(line), ch):
            px = line[x:x + ch]
            counts[px] = counts.get(px, 0) + 1
    total = w * h
    background = max(counts.values()) if counts else 0
    ink = (total - background) / total if total else 0
    print(f"{w}x{h}, {len(counts)} colours, {100 * ink:.1f}% ink")
    return 0 if len(counts) >= min_colours and ink >= min_ink else 1


if __name__ == "__main__":
    sys.exit(main())
