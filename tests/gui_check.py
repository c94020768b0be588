#!/usr/bin/env python3
"""Pixel checks on the window's PNG snapshots (tests/gui.sh). Reads the PNGs `cabin gui` writes
(8-bit RGB, filter 0 rows, one IDAT; the tEXt chunk "cabin-regions" says where the conversation,
the input line, the heat map's cells and the precision grid's cells are) and the palette
(`cabin gui --print-palette`).

  gui_check.py differ A.png B.png REGION MIN_FRACTION    REGION's pixels differ by at least that
  gui_check.py same A.png B.png REGION                   REGION's pixels are the same
  gui_check.py grid A.png PALETTE LAYERS=TYPE ...        every grid cell is its type's colour
                                                         (LAYERS: 0, 0-3 or *; later ones win)
  gui_check.py heat A.png PALETTE                        the heat map's cells hold both ends of
                                                         the colour scale
Prints one line; exits 0 when the check holds, 1 when not, 2 on a bad file."""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError(f'{path}: not a PNG')
    pos, idat, text, w, h = 8, b'', {}, 0, 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if zlib.crc32(kind + body) != struct.unpack('>I', data[pos + 8 + n:pos + 12 + n])[0]:
            raise ValueError(f'{path}: chunk {kind!r}: bad CRC')
        if kind == b'IHDR':
            w, h, depth, colour = struct.unpack('>IIBB', body[:10])
            if depth != 8 or colour != 2:
                raise ValueError(f'{path}: not 8-bit RGB')
        elif kind == b'IDAT':
            idat += body
        elif kind == b'tEXt':
            key, _, val = body.partition(b'\0')
            text[key.decode('latin-1')] = val.decode('latin-1')
        pos += 12 + n
    raw = zlib.decompress(idat)
    row = w * 3 + 1
    if len(raw) != row * h or any(raw[y * row] != 0 for y in range(h)):
        raise ValueError(f'{path}: rows are not {w}x{h} RGB with filter 0')
    return w, h, raw, text.get('cabin-regions', '')


class Shot:
    def __init__(self, path):
        self.path = path
        self.w, self.h, self.raw, regions = read_png(path)
        self.rect, self.cells = {}, []
        for line in regions.splitlines():
            f = line.split()
            if f[0] == 'cell':
                self.cells.append(tuple(int(v) for v in f[1:]))
            elif f[0] != 'scale':
                self.rect[f[0]] = tuple(int(v) for v in f[1:])

    def px(self, x, y):
        i = y * (self.w * 3 + 1) + 1 + x * 3
        return tuple(self.raw[i:i + 3])

    def region(self, name):
        x, y, w, h = self.rect[name]
        return [self.px(i, j) for j in range(y, y + h) for i in range(x, x + w)]


def palette(path):
    types, heat = {}, {}
    for line in open(path):
        f = line.split()
        if f[0] == 'type':
            types[f[1].lower()] = tuple(int(v) for v in f[2:5])
        elif f[0] == 'heat':
            heat[int(f[1])] = tuple(int(v) for v in f[2:5])
    return types, heat


def main(argv):
    cmd = argv[1]
    if cmd in ('differ', 'same'):
        a, b = Shot(argv[2]), Shot(argv[3])
        name = argv[4]
        if a.rect[name] != b.rect[name]:
            print(f'{name}: the region moved ({a.rect[name]} vs {b.rect[name]})')
            return 1
        pa, pb = a.region(name), b.region(name)
        frac = sum(1 for u, v in zip(pa, pb) if u != v) / max(1, len(pa))
        if cmd == 'same':
            print(f'{name}: {frac:.4f} of {len(pa)} pixels differ (want 0)')
            return 0 if frac == 0 else 1
        want = float(argv[5])
        print(f'{name}: {frac:.4f} of {len(pa)} pixels differ (want >= {want})')
        return 0 if frac >= want else 1
    if cmd == 'grid':
        s = Shot(argv[2])
        types, _ = palette(argv[3])
        rules = []
        for spec in argv[4:]:
            layers, _, t = spec.partition('=')
            lo, _, hi = layers.partition('-')
            rules.append((None if layers == '*' else (int(lo), int(hi or lo)), types[t.lower()], t))
        bad, n = [], 0
        for layer, kind, x, y, w, h in s.cells:
            want = None
            for rng, col, t in rules:
                if rng is None or rng[0] <= layer <= rng[1]:
                    want = (col, t)
            got = s.px(x + w // 2, y + h // 2)
            n += 1
            if got != want[0]:
                bad.append(f'layer {layer} kind {kind}: {got}, want {want[1]} {want[0]}')
        print(f'grid: {n} cells, {len(bad)} off' + (': ' + '; '.join(bad[:4]) if bad else ''))
        return 0 if n > 0 and not bad else 1
    if cmd == 'heat':
        s = Shot(argv[2])
        _, heat = palette(argv[3])
        if s.rect.get('heat', (0, 0, 0, 0))[2] == 0:
            print('heat: no heat map cells drawn')
            return 1
        px = set(s.region('heat'))
        have = [heat[k] in px for k in (0, 1)]
        print(f'heat: the scale\'s cold end {heat[0]} {"found" if have[0] else "missing"}, hot end {heat[1]} {"found" if have[1] else "missing"}')
        return 0 if all(have) else 1
    if cmd == 'panels':   # every named panel is drawn, at least a title and two lines high
        s = Shot(argv[2])
        missing = [n for n in argv[3:] if s.rect.get('panel-' + n, (0, 0, 0, 0))[3] < 40]
        print(f'panels: {len(argv) - 3 - len(missing)} of {len(argv) - 3} drawn' + (': missing ' + ' '.join(missing) if missing else ''))
        return 0 if not missing else 1
    print(f'unknown check {cmd}')
    return 2


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv))
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f'gui_check: {e}')
        sys.exit(2)
