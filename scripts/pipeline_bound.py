#!/usr/bin/env python3
"""How near its floor a host-resident product could come, with any schedule.

A product C = A B of square N x N operands from page-locked memory: A and B
go up, C comes down, the GPU multiplies. Given the rates of one run (the
bench prints them: the backend's device GEMM time, each way's copy rate and
the rate of both ways at once), this prints

  floor   max(GEMM, (A + B) / H2D, C / D2H, (A + B + C) / both): the bench's
          floor for page-locked operands;
  bound   a lower bound on the time of every schedule (any pieces, any
          order, kernels at the device GEMM's rate): at each instant t of a
          call that ends at T, what has gone up by t must leave the work and
          the downloads still to do room before T. Up to t, let r be the
          share of A's rows and q of B's columns that are all up, a and b
          the other uploaded shares of A and B. Then
            (r + q + a + b) (A up alone) <= t,
            t + (1 - work) GEMM <= T, where work <= r q + min(a, sqrt(a (q +
              b))) + min(b r, sqrt(r b)) (an entry of C needs a row of A and
              a column of B; the Loomis-Whitney inequality bounds the
              multiply-adds the rest allows),
            t + (1 - r q) (C down alone) <= T (only entries whose row and
              column are all up can be finished and on their way down),
            t + ((2 - r - q - a - b) + (1 - r q)) (one matrix both ways) <= T.
          T is the least end for which every t admits such a state. States
          are searched on a grid: a real state, rounded up to the grid,
          does at least its work and finishes at least its entries, so the
          grid's states get the upload time of four grid steps more (and
          r + a, q + b two steps over 1), and the bound stays a bound;
  fluid   the fastest schedule of one family, with everything divisible:
          A and B go up at the link's rate in k order over all rows and
          columns (every multiply-add whose k has arrived can run) until a
          share x0 of them is up; from then on, rows of A and columns of B
          are completed in turn, the full share growing as ((x - x0) / (1 -
          x0))^g of the uploaded share x, while the rest keeps going up in
          k; entries of C whose row and column are complete go down at
          the D2H rate (times --both-factor while uploads run; uploads too
          while downloads run). The GPU works whenever work is available.
          Plans of whole-piece copies and kernels come near it only with
          small tiles and thin k pieces, and pay for each piece's DMA and
          kernel (scripts/pipeline_model.py).

  pipeline_bound.py N ELEM --gemm-ms MS [--h2d GBs] [--d2h GBs] [--both GBs]

ELEM is 4 (float) or 8 (double). Needs numpy (Debian: python3-numpy).
"""
import argparse

import numpy as np


def schedule_free_bound(h, gemm, down, both_h, grid=41, instants=200):
    """Least T (seconds) such that every instant admits a state (see above)."""
    g = np.linspace(0, 1, grid)
    step = g[1]
    r, q, a, b = np.meshgrid(g, g, g, g, indexing="ij")
    ok = (r + a <= 1 + 2 * step + 1e-12) & (q + b <= 1 + 2 * step + 1e-12)
    up = (r + q + a + b - 4 * step) * h
    work = np.minimum(1, r * q + np.minimum(a, np.sqrt(a * (q + b))) + np.minimum(b * r, np.sqrt(r * b)))
    fin = r * q
    left_to_move = ((2 - r - q - a - b) + (1 - fin)) * both_h

    def feasible(end):
        for t in np.linspace(0, end, instants):
            state = ok & (up <= t) & (t + (1 - work) * gemm <= end) & (t + (1 - fin) * down <= end)
            state &= t + left_to_move <= end
            if not state.any():
                return False
        return True

    lo, hi = max(2 * h, gemm, down, 3 * both_h), 3 * (2 * h + gemm + down)
    for _ in range(25):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
    return hi


def fluid_schedule(up_all, gemm, down, x0, g, both_factor, dt):
    """End (seconds) of the family's schedule for x0, g (see above)."""

    def full_share(uploaded):  # of A's rows and B's columns, all up
        return 1.0 if uploaded >= 1 else (0.0 if uploaded < x0 else ((uploaded - x0) / (1 - x0)) ** g)

    t = done = down_share = uploaded = 0.0
    while t < 10 * (up_all + gemm + down):
        downloading = down_share < min(full_share(uploaded) ** 2, done)
        uploading = uploaded < 1
        uploaded = min(1.0, uploaded + dt / up_all * (both_factor if downloading else 1.0))
        full = full_share(uploaded)
        available = uploaded - full * (1 - uploaded)
        done = min(done + dt / gemm, available, 1.0)
        finished = min(full * full, done)
        down_share = min(down_share + dt / down * (both_factor if uploading else 1.0), finished)
        t += dt
        if down_share >= 1 - 1e-9 and done >= 1 - 1e-9:
            return t
    return float("inf")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", type=int)
    ap.add_argument("elem", type=int, choices=(4, 8))
    ap.add_argument("--gemm-ms", type=float, required=True, help="the backend's device GEMM time at N, ms")
    ap.add_argument("--h2d", type=float, default=55.4, help="GB/s")
    ap.add_argument("--d2h", type=float, default=55.4, help="GB/s")
    ap.add_argument("--both", type=float, default=102.0, help="GB/s, both ways at once")
    ap.add_argument("--both-factor", type=float, default=0.88, help="each way's share while both run (fluid)")
    a = ap.parse_args()
    matrix = a.n * a.n * a.elem
    h, down, both_h, gemm = matrix / (a.h2d * 1e9), matrix / (a.d2h * 1e9), matrix / (a.both * 1e9), a.gemm_ms * 1e-3
    floor = max(gemm, 2 * h, down, 3 * both_h)
    bound = schedule_free_bound(h, gemm, down, both_h)
    dt = floor / 4000
    fluid = min((fluid_schedule(2 * h, gemm, down, x0, g, a.both_factor, dt), x0, g)
                for x0 in np.linspace(0, 0.9, 19) for g in (0.5, 0.7, 1.0, 1.5, 2.0))
    print(f"N {a.n} elem {a.elem}: floor {floor * 1e3:.3f} ms; "
          f"bound {bound * 1e3:.3f} ms ({bound / floor:.3f} x floor); "
          f"fluid {fluid[0] * 1e3:.3f} ms ({fluid[0] / floor:.3f} x floor, x0 {fluid[1]:.2f}, g {fluid[2]:g})")


if __name__ == "__main__":
    main()
