// Global -> shared loader of an x-contiguous operand tile for the tiled
// SIMT kernel, with cp.async: the same element map and shared layout as
// block::TileLoader's 16-byte path for XC operands (VEC), without staging
// the tile in registers. The copies of the next stage are issued into the
// free shared buffer at the start of a stage and waited for at its
// hand-over (kernel/gemm_tiled_kernel.cuh), where the register loader
// stores its registers.
//
// An XC operand tile (x, p) lies at ptr[x + p * ld] and goes to s[p][x]
// unchanged, so every group of V elements along x is one 16-byte copy. At
// the matrix edges a group copies only its elements inside the matrix
// (cp.async's source size) and zero-fills the rest. Real scalars only:
// nothing is conjugated on the way.
#pragma once

#include <cstdint>

#include "common/complex.hpp"
#include "kernels/gemm/block/async_copy.cuh"
#include "kernels/gemm/block/tile_loader.cuh"

namespace egpu::kernels::block {

template <class T, int BX, int BK, int THREADS>
struct AsyncXcTileLoader {
  using Map = TileLoader<T, BX, BK, THREADS, true, true>;  // the groups and their places
  static constexpr int V = Map::V, NV = Map::NV;
  static constexpr int bytes = V * int(sizeof(T));
  static_assert(bytes == 16, "one 16-byte copy per group");
  static_assert(!is_complex<T>::value, "conjugation needs the register path");

  const T* src[NV];  // this thread's group origins at the next k tile
  const T* safe;     // a valid address, given to copies that read nothing
  int x_left;        // rows (x) of the matrix from the tile origin, clamped to [0, BX]

  // Tile-local coordinates of the first element of group v of this thread.
  __device__ __forceinline__ static void coords(int v, int& xl, int& pl) { Map::coords(v, 0, xl, pl); }

  // The tile origin (x0, 0) lies inside the matrix whenever the loader is
  // used: x0 < x_total and k > 0.
  __device__ __forceinline__ AsyncXcTileLoader(const T* ptr, std::int64_t ld, std::int64_t x_total,
                                               std::int64_t x0, bool /*conj*/)
      : safe(ptr + x0) {
    const std::int64_t left = x_total - x0;
    x_left = left >= BX ? BX : int(left);
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      int xl, pl;
      coords(v, xl, pl);
      src[v] = ptr + (x0 + xl) + std::int64_t(pl) * ld;
    }
  }

  __device__ __forceinline__ bool x_full() const { return x_left == BX; }

  // Issues the copies of the current k tile into the shared stage s and
  // advances to the next one (TileLoader::load's contract).
  template <bool CHECKED = true, int LD>
  __device__ __forceinline__ void load(std::int64_t krem64, std::int64_t k_step, T (*s)[LD]) {
    if constexpr (!CHECKED) {
      load_interior(k_step, s);
    } else {
      const int krem = krem64 >= BK ? BK : int(krem64);
      if (x_left == BX && krem == BK)
        load_interior(k_step, s);
      else
        load_edge(krem, k_step, s);
    }
  }

  template <int LD>
  __device__ __forceinline__ void load_interior(std::int64_t k_step, T (*s)[LD]) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      int xl, pl;
      coords(v, xl, pl);
      cp_async<bytes>(&s[pl][xl], src[v], bytes);
      src[v] += k_step;
    }
    cp_async_commit();
  }

  template <int LD>
  __device__ __forceinline__ void load_edge(int krem, std::int64_t k_step, T (*s)[LD]) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      int xl, pl;
      coords(v, xl, pl);
      const int left = x_left - xl;
      const int n = pl < krem ? (left >= V ? V : (left > 0 ? left : 0)) : 0;
      cp_async<bytes>(&s[pl][xl], n > 0 ? src[v] : safe, n * int(sizeof(T)));
      src[v] += k_step;
    }
    cp_async_commit();
  }

  // The stage issued last has landed in shared memory (this thread's
  // copies; the caller's barrier makes them everyone's).
  template <int LD>
  __device__ __forceinline__ void store(T (*)[LD]) const {
    cp_async_wait<0>();
  }
};

}  // namespace egpu::kernels::block
