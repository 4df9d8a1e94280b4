// Warp-wide tensor-core instructions (PTX mma.sync) used by the mma
// configurations, and the TF32 rounding. Fragment layouts of the m16n8k8
// shapes (g = lane / 4, t = lane % 4), shared by the f64 and tf32 forms:
//   A (16x8, row): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
//   B (8x8, col):  b0 (t, g), b1 (t+4, g)
//   C (16x8):      c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1)
#pragma once

#include <cstdint>

namespace egpu::kernels::warp {

// d += a * b, fp64 (DMMA; the m16n8 shapes need sm_90).
__device__ __forceinline__ void mma_f64_16x8x8(double (&d)[4], const double (&a)[4],
                                               const double (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // no fp64 m16n8 shapes before sm_90; the host does not launch these there
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#endif
}

// d += a * b, fp64, k = 16: A elements e = 0..7 at (g + 8 (e & 1), t + 4 (e >> 1)),
// B elements e = 0..3 at (t + 4e, g).
__device__ __forceinline__ void mma_f64_16x8x16(double (&d)[4], const double (&a)[8],
                                                const double (&b)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // no fp64 m16n8 shapes before sm_90; the host does not launch these there
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
      "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
        "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#endif
}

// d += a * b, TF32 inputs, fp32 accumulation (HMMA, sm_80+).
__device__ __forceinline__ void mma_tf32_16x8x8(float (&d)[4], const std::uint32_t (&a)[4],
                                                const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// x rounded to TF32 (nearest, ties away from zero), as the bits of a float
// whose low 13 mantissa bits are zero.
__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// x = big + small with big = tf32(x), small = tf32(x - big).
__device__ __forceinline__ void split_tf32(float x, std::uint32_t& big, std::uint32_t& small) {
  big = to_tf32(x);
  small = to_tf32(x - __uint_as_float(big));
}

// x with its sign flipped where mask has the sign bit (run-time conj).
__device__ __forceinline__ double flip_sign(double x, std::uint64_t mask) {
  return __longlong_as_double(__double_as_longlong(x) ^ static_cast<long long>(mask));
}

}  // namespace egpu::kernels::warp
