// Multistage global -> shared loader of one operand tile for the mma
// configurations, with cp.async (no staging through registers).
//
// The operand is a BX x BK tile of a matrix whose element (x, p) lies at
// ptr[x * sx + p * sp] (x along m for A, along n for B; p along k), with one
// unit stride fixed at compile time by KCONTIG:
//   KCONTIG = false (sx == 1: A col_major, B row_major): shared S[p][x],
//   KCONTIG = true  (sp == 1: A row_major, B col_major): shared S[x][p].
// Either way shared memory keeps the global contiguous direction, so every
// copy is a straight 16-byte cp.async; the warp-level fragment loads read
// whichever orientation is there (warp/mma_tile.cuh). Rows are padded
// (see pad_of) so that those fragment loads are free of bank conflicts.
//
// Two element maps, fixed at compile time by ELEMENTS:
//   !ELEMENTS: each thread copies PER_THREAD chunks of V = 16 / sizeof(T)
//     elements along the contiguous direction. With `vec` (base aligned to
//     16 bytes and the ld a multiple of V, checked by the host) a chunk
//     inside the matrix is one 16-byte copy; otherwise, and for the chunk
//     that crosses the matrix edge, one copy per element.
//   ELEMENTS (for operands off the 16-byte grid): one copy per element, the
//     lanes of a warp on consecutive elements of a shared row, so that every
//     copy instruction of a warp reads whole 32-byte sectors and writes
//     consecutive banks (lanes V elements apart spread each one over V times
//     the sectors and bank cycles).
// Elements outside the matrix are zero-filled and never read.
#pragma once

#include <cstdint>

#include "kernels/gemm/block/async_copy.cuh"
#include "kernels/gemm/gemm_tile_config.hpp"  // vector_elems

namespace egpu::kernels::block {

// Row padding, in elements, that makes the 16x8 fragment loads conflict-free
// (rows of x-major tiles hold 16 | BX elements, of k-major tiles 8 | BK):
// lanes read (row t, column g) of an x-major tile and (row g, column t) of a
// k-major one, g = lane / 4, t = lane % 4.
template <class T, bool KCONTIG>
constexpr int pad_of() {
  if constexpr (sizeof(T) == 4) return KCONTIG ? 4 : 8;   // 32 lanes in 32 banks
  if constexpr (sizeof(T) == 8) return 4;                 // two 16-lane wavefronts
  return KCONTIG ? 4 : 2;                                 // four 8-lane wavefronts
}

template <class T, int BX, int BK, int THREADS, bool KCONTIG, bool ELEMENTS = false>
struct AsyncTileLoader {
  static constexpr int V = vector_elems<T>;
  static constexpr int rows = KCONTIG ? BX : BK;  // shared tile rows
  static constexpr int cols = KCONTIG ? BK : BX;  // contiguous direction
  static constexpr int ld = cols + pad_of<T, KCONTIG>();
  static constexpr int stage_elems = rows * ld;
  static constexpr int chunks_per_row = cols / V;
  static constexpr int rows_per_pass = THREADS / chunks_per_row;
  static constexpr int per_thread = rows / rows_per_pass;
  static_assert(cols % V == 0 && THREADS % chunks_per_row == 0 && rows % rows_per_pass == 0,
                "chunk split");
  // ELEMENTS: whole shared rows per pass, one element per thread each.
  static constexpr int element_rows_per_pass = THREADS / cols;
  static constexpr int elements_per_thread = rows / (element_rows_per_pass > 0 ? element_rows_per_pass : 1);
  static_assert(!ELEMENTS || (THREADS % cols == 0 && rows % element_rows_per_pass == 0),
                "element split");
  static_assert((ld * sizeof(T)) % 16 == 0, "shared rows stay 16-byte aligned");

  const T* src;          // this thread's first chunk at the next k tile
  std::int64_t gld;      // global stride between shared rows
  std::int64_t k_step;   // pointer advance per k tile
  int row0, col0;        // this thread's first chunk (ELEMENTS: element) in the tile
  int x_left;            // matrix extent along x from the tile origin, clamped to BX
  bool vec;

  __device__ __forceinline__ AsyncTileLoader(const T* ptr, std::int64_t ld_global,
                                             std::int64_t x_total, std::int64_t x0, bool vec_)
      : gld(ld_global), vec(vec_) {
    if constexpr (ELEMENTS) {
      row0 = int(threadIdx.x) / cols;
      col0 = int(threadIdx.x) % cols;
    } else {
      row0 = int(threadIdx.x) / chunks_per_row;
      col0 = (int(threadIdx.x) % chunks_per_row) * V;
    }
    const std::int64_t left = x_total - x0;
    x_left = left >= BX ? BX : int(left);
    if (KCONTIG) {  // rows along x
      src = ptr + (x0 + row0) * ld_global + col0;
      k_step = BK;
    } else {  // rows along k
      src = ptr + std::int64_t(row0) * ld_global + (x0 + col0);
      k_step = BK * ld_global;
    }
  }

  // Issues the copies of the next k tile into `s` (one stage) and advances.
  // krem: elements of k left from this tile's start (may exceed BK); `safe`:
  // any valid address, given to copies that read nothing.
  __device__ __forceinline__ void load(T* s, std::int64_t krem64, const T* safe) {
    const int krem = krem64 >= BK ? BK : int(krem64);
    T* dst = s + row0 * ld + col0;
    if constexpr (ELEMENTS) {
      const int row_left = KCONTIG ? x_left : krem;  // valid shared rows
      const bool col_ok = col0 < (KCONTIG ? krem : x_left);
#pragma unroll
      for (int i = 0; i < elements_per_thread; ++i) {
        const bool ok = col_ok && row0 + i * element_rows_per_pass < row_left;
        const T* g = src + i * element_rows_per_pass * gld;
        cp_async<int(sizeof(T))>(dst + i * element_rows_per_pass * ld, ok ? g : safe,
                                 ok ? int(sizeof(T)) : 0);
      }
    } else if (vec && x_left == BX && krem == BK) {  // interior tile: no checks
#pragma unroll
      for (int i = 0; i < per_thread; ++i)
        cp_async<16>(dst + i * rows_per_pass * ld, src + i * rows_per_pass * gld, 16);
    } else {
      const int row_left = KCONTIG ? x_left : krem;  // valid shared rows
      const int col_left = (KCONTIG ? krem : x_left) - col0;  // valid elements of the chunk
#pragma unroll
      for (int i = 0; i < per_thread; ++i) {
        const bool row_ok = row0 + i * rows_per_pass < row_left;
        const T* g = src + i * rows_per_pass * gld;
        T* d = dst + i * rows_per_pass * ld;
        if (vec && (col_left >= V || !row_ok)) {  // whole chunk, or none of it
          cp_async<16>(d, row_ok ? g : safe, row_ok ? 16 : 0);
        } else {  // the chunk crossing the matrix edge: element by element
#pragma unroll
          for (int e = 0; e < V; ++e) {
            const bool ok = row_ok && e < col_left;
            cp_async<int(sizeof(T))>(d + e, ok ? g + e : safe, ok ? int(sizeof(T)) : 0);
          }
        }
      }
    }
    src += k_step;
  }

  // Advances past `tiles` k tiles another loader copied.
  __device__ __forceinline__ void skip(int tiles) { src += tiles * k_step; }
};

}  // namespace egpu::kernels::block
