// Facts about one product of the GEMM family and the rewrites that keep
// its result, shared by the launches and the automatic choices. Plain C++
// (no CUDA) so that the choices can be tested on the CPU.
#pragma once

#include <cstdint>

#include "kernels/gemm/gemm_args.hpp"

namespace egpu::kernels::device {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The vector path of an operand needs its base aligned to the vector and
// every line along the strided direction to start on a vector boundary.
template <class T, int V>
bool vector_ok(const T* ptr, std::int64_t ld) {
  if (V == 1) return true;
  return reinterpret_cast<std::uintptr_t>(ptr) % (std::uintptr_t(V) * sizeof(T)) == 0 &&
         ld % V == 0;
}

// The product with swapped operands, C^T = op(B)^T op(A)^T: m and n swapped
// (n x m), each operand's layout flipped. Stored through the original c
// and ldc, its element (i, j) lies at c[i * ldc + j].
template <class T>
GemmArgs<T> transpose_problem(const GemmArgs<T>& g) {
  auto flip = [](Layout l) { return l == Layout::col_major ? Layout::row_major : Layout::col_major; };
  GemmArgs<T> t = g;
  t.m = g.n;
  t.n = g.m;
  t.a = g.b;
  t.lda = g.ldb;
  t.a_layout = flip(g.b_layout);
  t.conj_a = g.conj_b;
  t.b = g.a;
  t.ldb = g.lda;
  t.b_layout = flip(g.a_layout);
  t.conj_b = g.conj_a;
  return t;
}

}  // namespace egpu::kernels::device
