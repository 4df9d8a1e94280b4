// Instantiations of the tensor-core configurations (double, cdouble on DMMA;
// float on TF32 / tf32x3) behind device/gemm_mma.hpp, their automatic
// choice, their split-k, and float operands copied onto the 16-byte grid.
#include "kernels/gemm/device/gemm_mma.hpp"

#include <cstdint>
#include <type_traits>

#include "kernels/gemm/device/gemm_mma_launch.cuh"
#include "kernels/gemm/device/gemm_operand_copy.cuh"
#include "kernels/gemm/device/gemm_split_k.cuh"

namespace egpu::kernels::device {
namespace {

// Calls f with a value of the MmaShape that (T, Tag, math) runs.
template <class T, class Tag, class F>
void with_shape(MathMode math, F&& f) {
  if constexpr (std::is_same_v<T, float>) {
    if (math == MathMode::tf32)
      f(MmaShape<float, Tag, MathMode::tf32>{});
    else
      f(MmaShape<float, Tag, MathMode::tf32x3>{});
  } else {
    f(MmaShape<T, Tag, MathMode::exact>{});
  }
}

template <class T, class Tag>
void launch_tag(const GemmArgs<T>& g, cudaStream_t s, const KSlices& slices = {}) {
  with_shape<T, Tag>(g.math, [&](auto shape) {
    using S = decltype(shape);
    launch_mma<T, Tag, S::math>(g, s, slices);
  });
}

// Calls f with a value of the tag of the tile split-k cuts for g: tf32x3's
// large tile where split_on_large_tile says so, complex<double>'s split
// tile, else the small tile.
template <class T, class F>
void with_split_tag(const GemmArgs<T>& g, F&& f) {
  if constexpr (std::is_same_v<T, cdouble>)
    f(TensorSplitTag{});
  else if (std::is_same_v<T, float> && split_on_large_tile(g.math, g.m, g.n))
    f(TensorLargeTag{});
  else
    f(TensorSmallTag{});
}

// tf32x3 split-k of a product with few rows runs the transposed product
// (C^T = op(B)^T op(A)^T, the reduction storing C^T row by row) where that
// cuts the large tile and g itself would not: 64x8192x8192 then runs as
// 8192x64x8192.
template <class T>
bool split_transposed(const GemmArgs<T>& g) {
  return std::is_same_v<T, float> && !split_on_large_tile(g.math, g.m, g.n) &&
         split_on_large_tile(g.math, g.n, g.m);
}

// The problem split-k runs for g: g, or its transpose where split_transposed(g).
template <class T>
struct SplitProblem {
  GemmArgs<T> args;
  bool transposed;
};
template <class T>
SplitProblem<T> split_problem(const GemmArgs<T>& g) {
  const bool transposed = split_transposed(g);
  return {transposed ? transpose_problem(g) : g, transposed};
}

// The slices of split-k on h, the problem it runs (split_problem).
template <class T>
KSlices plan_slices(const GemmArgs<T>& h, int sms) {
  KSlices plan;
  with_split_tag(h, [&](auto tag) {
    with_shape<T, decltype(tag)>(h.math, [&](auto shape) {
      using S = decltype(shape);
      plan = plan_split_k(h.m, h.n, h.k, S::bm, S::bn, S::bk, sms, S::min_blocks);
    });
  });
  return plan;
}

// One configuration on g as it is.
template <class T>
void run_config(const GemmArgs<T>& g, cudaStream_t s, GemmConfig config, int sms) {
  if (config == GemmConfig::split_k) {
    const SplitProblem<T> sp = split_problem(g);
    const GemmArgs<T>& h = sp.args;
    const KSlices plan = plan_slices(h, sms);
    if (plan.count >= 2) {
      with_split_tag(h, [&](auto tag) {
        gemm_split_k(
            h, plan, s,
            [&](const GemmArgs<T>& part, const KSlices& sl) { launch_tag<T, decltype(tag)>(part, s, sl); },
            sp.transposed);
      });
      return;
    }
    config = GemmConfig::tensor_small;
  }
  if (config == GemmConfig::tensor_small)
    launch_tag<T, TensorSmallTag>(g, s);
  else
    launch_tag<T, TensorLargeTag>(g, s);
}

}  // namespace

// tensor_small (chained) for double with k up to that tile's chain_max_k;
// else tensor_large when its tiles give every multiprocessor a block; else
// split_k when its tile (with_split_tag) gets at least two k-slices; else
// tensor_small.
template <class T>
GemmConfig choose_mma_config(const GemmArgs<T>& g, int sms) {
  if constexpr (std::is_same_v<T, double>)
    if (g.k <= MmaShape<T, TensorSmallTag, MathMode::exact>::chain_max_k) return GemmConfig::tensor_small;
  std::int64_t tiles = 0;
  with_shape<T, TensorLargeTag>(g.math, [&](auto shape) {
    using S = decltype(shape);
    tiles = ((g.m + S::bm - 1) / S::bm) * ((g.n + S::bn - 1) / S::bn);
  });
  if (tiles >= sms) return GemmConfig::tensor_large;
  return plan_slices(split_problem(g).args, sms).count >= 2 ? GemmConfig::split_k : GemmConfig::tensor_small;
}

template <class T>
void gemm_mma(const GemmArgs<T>& g, cudaStream_t s, GemmConfig config, int sms) {
  if (copies_operands(g))
    with_operands_on_grid(g, s, [&](const GemmArgs<T>& h) { run_config(h, s, config, sms); });
  else
    run_config(g, s, config, sms);
}

template GemmConfig choose_mma_config<float>(const GemmArgs<float>&, int);
template GemmConfig choose_mma_config<double>(const GemmArgs<double>&, int);
template GemmConfig choose_mma_config<cdouble>(const GemmArgs<cdouble>&, int);
template void gemm_mma<float>(const GemmArgs<float>&, cudaStream_t, GemmConfig, int);
template void gemm_mma<double>(const GemmArgs<double>&, cudaStream_t, GemmConfig, int);
template void gemm_mma<cdouble>(const GemmArgs<cdouble>&, cudaStream_t, GemmConfig, int);

}  // namespace egpu::kernels::device
