// Global -> register -> shared loader for one operand tile of the block.
//
// An operand is seen as a BX x BK tile of a matrix (x along m for A, along
// n for B; p along k) with leading dimension ld, in one of two layouts fixed
// at compile time (the layouts of gemm_args.hpp):
//   XC (x-contiguous, (x, p) at ptr[x + p * ld]): A col_major, B row_major
//      -> copied as is;
//   !XC (k-contiguous, (x, p) at ptr[x * ld + p]): A row_major, B col_major
//      -> transposed on the way.
// Shared memory always holds the tile k-major, S[p][x], so that the
// micro-tile reads contiguous x for one p (see thread/micro_tile.cuh).
//
// Each thread moves PER_THREAD elements per tile, as NV groups of V. Two
// element maps, chosen at compile time by VEC:
//   VEC (base aligned to V elements and the ld a multiple of V, checked by
//     the host): a group is V elements along the contiguous direction, one
//     16-byte global load where wholly in bounds;
//   !VEC: the lanes of a warp take consecutive elements along the contiguous
//     direction and a thread's elements lie `e_stride` apart, so that every
//     scalar load of the warp reads whole 32-byte sectors (a thread reading
//     V neighbours would spread each load over four times the sectors).
// At the matrix edges each element is checked and zero filled; tiles that lie
// wholly inside the matrix skip the checks. No out-of-bounds element is read.
#pragma once

#include <cstdint>

#include "kernels/gemm/gemm_tile_config.hpp"  // tile_load_vector
#include "kernels/gemm/thread/scalar_ops.cuh"

namespace egpu::kernels::block {

template <class T, int BX, int BK, int THREADS, bool XC, bool VEC>
struct TileLoader {
  static constexpr int per_thread = BX * BK / THREADS;
  static constexpr int V = tile_load_vector<T>(BX, BK, THREADS);  // powers of two: divides BX, BK
  static constexpr int NV = per_thread / V;
  static_assert(per_thread % V == 0 && BX % V == 0 && BK % V == 0, "vector split");
  // !VEC: a warp's lanes run along the contiguous direction, whole lines of
  // the tile per step of the thread's elements.
  static constexpr int line = XC ? BX : BK;                 // elements along the contiguous direction
  static constexpr int lines_per_step = THREADS / line;     // lines the block covers per element
  static_assert(VEC || THREADS % line == 0, "scalar map: the threads cover whole lines");

  const T* src[NV];       // this thread's group origins at the current k tile
  std::int64_t e_stride;  // !VEC: distance between a group's elements
  int x_left;             // rows (x) of the matrix from the tile origin, clamped to [0, BX]
  bool conj;
  T reg[NV][V];

  // Tile-local coordinates of element e of group v of this thread
  // (recomputed, not kept: registers are the scarce resource of the kernel).
  __device__ __forceinline__ static void coords(int v, int e, int& xl, int& pl) {
    if constexpr (VEC) {
      const int q = int(threadIdx.x) + v * THREADS;
      if constexpr (XC) {
        pl = q / (BX / V);
        xl = (q % (BX / V)) * V + e;
      } else {
        xl = q / (BK / V);
        pl = (q % (BK / V)) * V + e;
      }
    } else {
      const int along = int(threadIdx.x) % line;
      const int across = int(threadIdx.x) / line + (v * V + e) * lines_per_step;
      xl = XC ? along : across;
      pl = XC ? across : along;
    }
  }

  __device__ __forceinline__ TileLoader(const T* ptr, std::int64_t ld, std::int64_t x_total,
                                        std::int64_t x0, bool conj_)
      : e_stride(std::int64_t(lines_per_step) * ld), conj(conj_) {
    const std::int64_t left = x_total - x0;
    x_left = left >= BX ? BX : int(left);
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      int xl, pl;
      coords(v, 0, xl, pl);
      // Only dereferenced where in bounds (see load).
      src[v] = XC ? ptr + (x0 + xl) + std::int64_t(pl) * ld : ptr + (x0 + xl) * ld + pl;
    }
  }

  // Whether the tile lies wholly inside the matrix along x.
  __device__ __forceinline__ bool x_full() const { return x_left == BX; }

  // Loads the current k tile into registers and advances to the next one.
  // krem: elements of k left from this tile's start (may exceed BK);
  // k_step: pointer advance per k tile (BK * sp). CHECKED = false: the
  // caller guarantees an interior tile (x_full() and krem >= BK). The shared
  // stage the tile is bound for is store's (the parameter keeps the
  // interface of block::AsyncXcTileLoader, which copies into it directly).
  template <bool CHECKED = true, int LD>
  __device__ __forceinline__ void load(std::int64_t krem64, std::int64_t k_step, T (*)[LD]) {
    if constexpr (!CHECKED) {
      load_interior(k_step);
    } else {
      const int krem = krem64 >= BK ? BK : int(krem64);
      if (x_left == BX && krem == BK)
        load_interior(k_step);
      else
        load_edge(krem, k_step);
    }
  }

  template <int LD>
  __device__ __forceinline__ void load_interior(std::int64_t k_step, T (*)[LD]) {
    load_interior(k_step);
  }

  // An interior tile: every element in bounds, no checks.
  __device__ __forceinline__ void load_interior(std::int64_t k_step) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      if constexpr (VEC) {
        const auto pk = *reinterpret_cast<const thread::Pack<T, V>*>(src[v]);
#pragma unroll
        for (int e = 0; e < V; ++e) reg[v][e] = pk.v[e];
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) reg[v][e] = src[v][e * e_stride];
      }
      src[v] += k_step;
    }
  }

  // A tile at the matrix edge (krem < BK or fewer than BX rows along x):
  // each element checked, zero fill outside.
  __device__ __forceinline__ void load_edge(int krem, std::int64_t k_step) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      int xl, pl;
      coords(v, 0, xl, pl);
      // VEC: the last element of the group in bounds <=> the whole group is.
      const bool full = XC ? (x_left - xl >= V && pl < krem) : (xl < x_left && pl + V <= krem);
      if (VEC && full) {
        const auto pk = *reinterpret_cast<const thread::Pack<T, V>*>(src[v]);
#pragma unroll
        for (int e = 0; e < V; ++e) reg[v][e] = pk.v[e];
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          coords(v, e, xl, pl);
          const std::int64_t off = VEC ? std::int64_t(e) : e * e_stride;
          reg[v][e] = xl < x_left && pl < krem ? src[v][off] : thread::zero<T>();
        }
      }
      src[v] += k_step;
    }
  }

  // Writes the registers into the k-major shared tile s[BK][LD].
  template <int LD>
  __device__ __forceinline__ void store(T (*s)[LD]) const {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      int xl, pl;
      if constexpr (VEC && XC) {
        coords(v, 0, xl, pl);
        thread::Pack<T, V> pk;
#pragma unroll
        for (int e = 0; e < V; ++e) pk.v[e] = thread::conj_if(reg[v][e], conj);
        *reinterpret_cast<thread::Pack<T, V>*>(&s[pl][xl]) = pk;
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          coords(v, e, xl, pl);
          s[pl][xl] = thread::conj_if(reg[v][e], conj);
        }
      }
    }
  }
};

}  // namespace egpu::kernels::block
