// complex<double> products as one real fp64 product. With C's interleaved
// storage read as the real 2m x n matrix C_r (ld 2 ldc), op(B)'s as the
// real 2k x n matrix B_r and alpha op(A) expanded into the real 2m x 2k
// matrix A_r, whose 2 x 2 block (i, p) is [re -im; im re] of alpha op(A)(i, p),
//   C_r = A_r B_r + beta C_r
// is C = alpha op(A) op(B) + beta C: the same 8mnk flops on the fp64 kernels,
// which run nearer cuBLAS DGEMM than the complex kernels run to ZGEMM
// (bench/NOTES-gemm.md, version 7).
#pragma once

#include <cuda_runtime.h>

#include "common/complex.hpp"
#include "kernels/gemm/gemm_args.hpp"

namespace egpu::kernels::device {

// Whether the automatic choice runs g as a real product: n large enough
// (A_r costs 48 m k bytes of memory traffic, about 80 / n of the product's
// time; op(B) other than B itself 32 k n more, about 50 / m) and beta real
// or unread (a complex beta would need C scaled in a pass of its own first,
// which a failure of the product after it would leave half-done).
bool runs_complex_as_real(const GemmArgs<cdouble>& g);

// Enqueues g as the real product above. Returns false, having enqueued
// nothing, where the memory for A_r (and a copy of op(B)) cannot be had.
bool gemm_complex_as_real(const GemmArgs<cdouble>& g, cudaStream_t stream);

}  // namespace egpu::kernels::device
