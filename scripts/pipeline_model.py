#!/usr/bin/env python3
"""Rough time of an in-core host-resident product's pipeline, from rates.

Models the plans of src/planner/pipeline_plan.cpp in core: C tiles (square,
or TILE x --tile-n: the thin tiles of large page-locked double) in growing
squares, the first ROUNDS k pieces round all tiles, then each tile's other
pieces in turn; a piece goes up when first needed. One upload
stream in plan order, the kernels one at a time (two lanes share the GPU),
each tile's download after its last multiply on one download stream;
uploads run at UP GB/s, times --both-factor while a download runs.

  pipeline_model.py N ELEM TILE KB ROUNDS [--tile-n NB] [--a-depth KA] [--up GBs] [--rate TFLOPs] [...]
  pipeline_model.py N ELEM --search [--up GBs] [--rate TFLOPs] [...]

--a-depth cuts A's pieces KA deep (KB a multiple of it) while B's stay KB
deep, a multiply per A piece, ROUNDS counting A pieces: from column-major
operands, an A piece goes up in runs as long as the tile is tall whatever
its depth, a B piece in runs as long as it is deep.

--rate-at MxNxK=TFLOPS,... (or DEPTH=TFLOPS) gives the kernels' rate on
pieces of those shapes (or depths), as egpu-bench gemm measures them, the
others at --rate;
--down the download rate (default --up); --gemm-ms the floor the ratios
are over (default: the GEMM at --rate). --bands B cuts each tile's last
multiply into B row bands, each going down once multiplied, at
--band-factor times its tile's rate (--banded-tiles T: only the last T
tiles' last multiplies). --lead L cuts the first k piece in two, L deep
and KB - L (the planner's lead piece; ROUNDS counts both).

ELEM is 4 (float) or 8 (double). --search tries tiles of N/8 to N/2 (at
least 1024), pieces of 512 to 4096 deep and every number of rounds, and
prints the fastest plans. With flat rates (the defaults: every piece up at
55 GB/s, every kernel at the given Tflop/s) it bounds what this family of
plans can reach; measured rates on short pieces and short DMA runs are
lower (bench/results/float-tiles-probe-2026-11-27-h200.txt).
"""
import argparse
import math


def tile_order(tm, tn):
    order = []
    for s in range(max(tm, tn)):
        if s < tm:
            order += [(s, j) for j in range(min(s, tn - 1) + 1)]
        if s < tn:
            order += [(i, s) for i in range(min(s, tm) - 1, -1, -1)]
    return order


def plan_ops(n, tile, kb, rounds, tile_n=None, a_depth=None, bands=1, lead=0, banded_tiles=0):
    """The operations in issue order: ('up', key, elements) / ('mul', tile, a, b, flops, last, shape, banded) /
    ('down', tile, elements). With bands > 1, the last multiply of each tile (of the last banded_tiles tiles
    when > 0) is cut into that many row bands, each going down once multiplied. lead > 0 cuts the first k
    piece in two, lead deep and kb - lead (the planner's lead piece; rounds count both)."""
    tile_n = tile_n or tile
    ka = a_depth or kb
    starts = [0, lead] + list(range(kb, n, kb)) if lead else list(range(0, n, ka))
    tk = len(starts)
    order = tile_order(math.ceil(n / tile), math.ceil(n / tile_n))
    steps = [(x, p) for p in range(min(rounds, tk)) for x in range(len(order))]
    steps += [(x, p) for x in range(len(order)) for p in range(min(rounds, tk), tk)]
    ops, up = [], set()
    for x, p in steps:
        i, j = order[x]
        mi, nj = min(tile, n - i * tile), min(tile_n, n - j * tile_n)
        kp = (starts[p + 1] if p + 1 < tk else n) - starts[p]
        pb = p if lead else p * ka // kb  # the B piece holding this k
        b_depth = kp if lead else min(kb, n - pb * kb)
        for key, elems in ((("a", i, p), mi * kp), (("b", pb, j), b_depth * nj)):
            if key not in up:
                up.add(key)
                ops.append(("up", key, elems))
        last = p == tk - 1
        parts = bands if last and (banded_tiles <= 0 or x >= len(order) - banded_tiles) else 1
        for band in range(parts):
            ops.append(("mul", (x, band), ("a", i, p), ("b", pb, j), 2 * mi * nj * kp / parts, last, (mi, nj, kp),
                        parts > 1))
            if last:
                ops.append(("down", (x, band), mi * nj / parts))
    return ops


def simulate(ops, elem, up_rate, down_rate, kernel_rate, both_factor, band_factor=1.0):
    """Seconds until the last download ends (iterated: downloads slow the uploads they overlap). kernel_rate:
    flop/s, or a function of a multiply's (rows, columns, depth) giving them (a band's: its tile's); band
    multiplies run at band_factor times that."""
    rate_of = kernel_rate if callable(kernel_rate) else (lambda shape: kernel_rate)
    slow, end = [], 0.0
    for _ in range(4):
        t_up = t_gpu = t_down = 0.0
        ready, done, downs = {}, {}, []
        for op in ops:
            if op[0] == "up":
                d = op[2] * elem / up_rate
                if any(s <= t_up + d / 2 < e for s, e in slow):
                    d /= both_factor
                t_up += d
                ready[op[1]] = t_up
            elif op[0] == "mul":
                rate = rate_of(op[6]) * (band_factor if op[7] else 1.0)
                t_gpu = max(t_gpu, ready[op[2]], ready[op[3]]) + op[4] / rate
                if op[5]:
                    done[op[1]] = t_gpu
            else:
                start = max(t_down, done[op[1]])
                t_down = start + op[2] * elem / (down_rate * both_factor)
                downs.append((start, t_down))
        slow, end = downs, max(t_down, t_gpu)
    return end


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", type=int)
    ap.add_argument("elem", type=int, choices=(4, 8))
    ap.add_argument("plan", type=int, nargs="*", help="TILE KB ROUNDS")
    ap.add_argument("--search", action="store_true")
    ap.add_argument("--tile-n", type=int, default=0, help="width of the C tiles (default: TILE)")
    ap.add_argument("--a-depth", type=int, default=0, help="depth of A's pieces (default: KB)")
    ap.add_argument("--up", type=float, default=55.0, help="GB/s each way")
    ap.add_argument("--both-factor", type=float, default=0.88, help="each way's share while both run")
    ap.add_argument("--rate", type=float, default=56.0, help="kernel Tflop/s")
    ap.add_argument("--down", type=float, default=0.0, help="download GB/s (default: --up)")
    ap.add_argument("--rate-at", default="", help="MxNxK=TFLOPS or DEPTH=TFLOPS,...: the kernels' rate on pieces of "
                    "that shape or depth")
    ap.add_argument("--gemm-ms", type=float, default=0.0, help="the floor the ratios are over (default: the GEMM at --rate)")
    ap.add_argument("--bands", type=int, default=1, help="row bands of each tile's last multiply")
    ap.add_argument("--band-factor", type=float, default=1.0, help="the band multiplies' share of their tile's rate")
    ap.add_argument("--banded-tiles", type=int, default=0, help="band only the last this many tiles (default: all)")
    ap.add_argument("--lead", type=int, default=0, help="cut the first k piece in two, this deep and the rest")
    a = ap.parse_args()
    rate, up = a.rate * 1e12, a.up * 1e9
    down = a.down * 1e9 if a.down > 0 else up
    at = {key: float(t) * 1e12 for key, t in (x.split("=") for x in a.rate_at.split(",") if x)}

    def rate_of(shape):
        return at.get("x".join(map(str, shape)), at.get(str(shape[2]), rate))
    gemm = a.gemm_ms * 1e-3 if a.gemm_ms > 0 else 2 * a.n**3 / rate

    if a.lead and (a.a_depth or a.search or (len(a.plan) == 3 and not 0 < a.lead < a.plan[1])):
        ap.error("--lead must be under KB, and does not go with --a-depth or --search")
    if a.a_depth and (a.search or a.a_depth < 0 or (len(a.plan) == 3 and a.plan[1] % a.a_depth)):
        ap.error("--a-depth must divide KB, and does not go with --search")

    def run(tile, kb, rounds):
        return simulate(plan_ops(a.n, tile, kb, rounds, a.tile_n or None, a.a_depth or None, a.bands, a.lead,
                                 a.banded_tiles), a.elem, up,
                        down, rate_of, a.both_factor, a.band_factor)

    if a.search:
        found = []
        tiles = sorted({max(1024, a.n // d) for d in (8, 4, 2)})
        for tile in tiles:
            for kb in (512, 1024, 2048, 4096):
                for rounds in range(math.ceil(a.n / kb) + 1):
                    found.append((run(tile, kb, rounds), tile, kb, rounds))
        for t, tile, kb, rounds in sorted(found)[:5]:
            print(f"tile {tile} kb {kb} rounds {rounds}: {t * 1e3:.2f} ms, {t / gemm:.3f} x the floor's {gemm * 1e3:.2f} ms")
    elif len(a.plan) == 3:
        t = run(*a.plan)
        print(f"{t * 1e3:.2f} ms, {t / gemm:.3f} x the floor's {gemm * 1e3:.2f} ms")
    else:
        ap.error("give TILE KB ROUNDS, or --search")


if __name__ == "__main__":
    main()
