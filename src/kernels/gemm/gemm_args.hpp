// The own GEMM kernel family's interface: C = alpha * op(A) * op(B) + beta * C
// on device memory, C column-major. Plain C++ (no CUDA types) so that the
// executor and the tests include it from host code.
#pragma once

#include <cstdint>
#include <vector>

#include "common/complex.hpp"

namespace egpu::kernels {

// How an operand of the product is laid out in device memory, seen from the
// product: for op(A), m x k, col_major puts element (i, p) at a[i + p * lda]
// and row_major at a[i * lda + p] (op(A) = A^T of a column-major A). For
// op(B), k x n, likewise with (p, j) and ldb.
enum class Layout : std::uint8_t { col_major, row_major };

// Arithmetic of a float product: exact fp32 FMAs, or tensor cores with
// TF32 inputs (one product: ~1e-3 relative error), or three TF32 products
// of split operands (big*big + big*small + small*big: fp32-level error).
// Other scalars always run exact.
enum class MathMode : std::uint8_t { exact, tf32, tf32x3 };

template <class T>
struct GemmArgs {
  std::int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;
  std::int64_t lda = 0;
  Layout a_layout = Layout::col_major;
  bool conj_a = false;  // complex only: use conj(op(A))
  const T* b = nullptr;
  std::int64_t ldb = 0;
  Layout b_layout = Layout::col_major;
  bool conj_b = false;
  T* c = nullptr;  // column-major, c[i + j * ldc]
  std::int64_t ldc = 0;
  T alpha{}, beta{};
  bool beta_is_zero = true;  // C is not read at all (NaN in C does not propagate)
  MathMode math = MathMode::exact;
};

// Which tile configuration of the family runs a launch; chosen by shape,
// scalar and math mode when automatic. large / small: SIMT FMA kernels;
// medium: exact float's 128 x 128 tile, for shapes whose count of large
// (128 x 256) tiles leaves much of the last wave of blocks empty; the other
// scalars run large.
// tensor_large / tensor_small: mma.sync kernels (DMMA for double and
// complex<double> on sm_90 and later, TF32 or tf32x3 for float by `math`);
// where T and math have none (complex<float>, exact float, fp64 before
// sm_90) they run large / small instead. split_k: one short side and long
// k, k cut into slices across blocks by shape and SM count, partial sums
// reduced into C (device/gemm_split_k.cuh); SIMT scalars and modes: the
// skinny SIMT tile (float 256 x 64, complex<float> 128 x 64), or float's
// medium tile where both sides reach 128 (splits_on_medium_tile), with the
// operands swapped when m < n; tensor-core ones: around tensor_small's
// tile (tf32x3: the large one where it pads C no more), complex<double>
// around its own 64 x 64 x 16 (device/gemm_mma.cu, with_split_tag).
enum class GemmConfig : std::uint8_t {
  automatic, large, medium, small, tensor_large, tensor_small, split_k
};

// Name of a configuration, for tables and test messages.
const char* config_name(GemmConfig config);

// Every configuration gemm_tiled may choose for T under `math` (what the
// automatic choice can return), so that tests can run each one explicitly.
template <class T>
std::vector<GemmConfig> selectable_configs(MathMode math);

// Enqueues the product on `stream` (a cudaStream_t passed as void* to keep
// CUDA types out of host headers). Throws egpu::error on a launch failure.
// Preconditions (checked by the caller): m, n, k >= 0; lda, ldb, ldc large
// enough for the layout; pointers naturally aligned for T.
template <class T>
void gemm_tiled(const GemmArgs<T>& args, void* stream, GemmConfig config = GemmConfig::automatic);

}  // namespace egpu::kernels
