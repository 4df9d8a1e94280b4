// Transparent mode: Eigen's triangular products C += alpha * A * B onto one
// triangle of C (`selfadjointView<>().rankUpdate(U)`, `LLT`'s blocked
// update, SYRK / HERK in BLAS terms) also reach the
// dispatch. Eigen runs them on one thread with its own kernel; here the
// triangle is split in halves recursively: each square off the diagonal is
// a general product, written as Eigen code, so that it goes through
// transparent mode's hook and the dispatch (the GPU, or Eigen's GEMM on all
// its threads); the triangles on the diagonal below kLeaf run on Eigen's
// own kernel. Elements of the other triangle are neither read nor written.
//
// How: a partial specialization of Eigen's general_matrix_matrix_triangular_
// product for equal scalars and a column-major result with unit inner
// stride (a row-major result is the transpose, which Eigen maps onto this
// one), as Eigen's BLAS back end does; Eigen's own version of the same
// product stays reachable as Version BuiltIn. Not with EIGEN_USE_BLAS,
// which specializes the same product for BLAS.
#pragma once

#include <Eigen/Core>

#include "egpu/adapter/assign.hpp"

#ifndef EIGEN_USE_BLAS
namespace egpu::detail {

// Triangles up to this size stay on Eigen's kernel whole; larger ones are
// split.
constexpr Eigen::Index kRankUpdateLeaf = 256;

// d += alpha * op(x) * op(y), op conjugating where asked (complex only).
template <bool ConjX, bool ConjY, class D, class X, class Y, class Scalar>
void add_product(D&& d, const X& x, const Y& y, const Scalar& alpha) {
  if constexpr (ConjX && ConjY) d.noalias() += alpha * (x.conjugate() * y.conjugate());
  else if constexpr (ConjX) d.noalias() += alpha * (x.conjugate() * y);
  else if constexpr (ConjY) d.noalias() += alpha * (x * y.conjugate());
  else d.noalias() += alpha * (x * y);
}

// C's triangle (UpLo) += alpha * op(L) * op(R) over rows and columns [i0,
// i0 + n), where `builtin(i0, n)` runs Eigen's kernel on such a square.
template <int UpLo, bool ConjL, bool ConjR, class C, class L, class R, class Scalar, class BuiltIn>
void rank_update_split(C& c, const L& l, const R& r, const Scalar& alpha, Eigen::Index i0, Eigen::Index n,
                       const BuiltIn& builtin) {
  if (n <= kRankUpdateLeaf) return builtin(i0, n);
  const Eigen::Index h = n / 2, depth = l.cols();
  if constexpr (UpLo == Eigen::Lower)
    add_product<ConjL, ConjR>(c.block(i0 + h, i0, n - h, h), l.block(i0 + h, 0, n - h, depth), r.block(0, i0, depth, h),
                              alpha);
  else
    add_product<ConjL, ConjR>(c.block(i0, i0 + h, h, n - h), l.block(i0, 0, h, depth), r.block(0, i0 + h, depth, n - h),
                              alpha);
  rank_update_split<UpLo, ConjL, ConjR>(c, l, r, alpha, i0, h, builtin);
  rank_update_split<UpLo, ConjL, ConjR>(c, l, r, alpha, i0 + h, n - h, builtin);
}

}  // namespace egpu::detail

namespace Eigen::internal {

template <typename Index, typename Scalar, int LhsStorageOrder, bool ConjugateLhs, int RhsStorageOrder,
          bool ConjugateRhs, int UpLo>
struct general_matrix_matrix_triangular_product<Index, Scalar, LhsStorageOrder, ConjugateLhs, Scalar, RhsStorageOrder,
                                                ConjugateRhs, ColMajor, 1, UpLo, Specialized> {
  using Eigens = general_matrix_matrix_triangular_product<Index, Scalar, LhsStorageOrder, ConjugateLhs, Scalar,
                                                          RhsStorageOrder, ConjugateRhs, ColMajor, 1, UpLo, BuiltIn>;
  static void run(Index size, Index depth, const Scalar* lhs, Index lhsStride, const Scalar* rhs, Index rhsStride,
                  Scalar* res, Index resIncr, Index resStride, const Scalar& alpha,
                  level3_blocking<Scalar, Scalar>& blocking) {
    const auto builtin = [&](Index i0, Index n) {
      const Index l0 = LhsStorageOrder == ColMajor ? i0 : i0 * lhsStride;
      const Index r0 = RhsStorageOrder == ColMajor ? i0 * rhsStride : i0;
      Eigens::run(n, depth, lhs + l0, lhsStride, rhs + r0, rhsStride, res + i0 * resIncr + i0 * resStride, resIncr,
                  resStride, alpha, blocking);
    };
    if constexpr (!egpu::detail::is_supported_scalar_v<Scalar>) {
      builtin(0, size);
    } else {
      // (resIncr is 1: this specialization is for unit inner stride.)
      if (size <= egpu::detail::kRankUpdateLeaf || egpu::detail::in_cpu_scope())
        return builtin(0, size);
      using LhsMatrix = Matrix<Scalar, Dynamic, Dynamic, LhsStorageOrder == RowMajor ? RowMajor : ColMajor>;
      using RhsMatrix = Matrix<Scalar, Dynamic, Dynamic, RhsStorageOrder == RowMajor ? RowMajor : ColMajor>;
      Map<Matrix<Scalar, Dynamic, Dynamic>, 0, OuterStride<>> c(res, size, size, OuterStride<>(resStride));
      const Map<const LhsMatrix, 0, OuterStride<>> l(lhs, size, depth, OuterStride<>(lhsStride));
      const Map<const RhsMatrix, 0, OuterStride<>> r(rhs, depth, size, OuterStride<>(rhsStride));
      // Conjugation as Eigen's kernel applies it (complex operands only).
      egpu::detail::rank_update_split<UpLo, ConjugateLhs && NumTraits<Scalar>::IsComplex,
                                      ConjugateRhs && NumTraits<Scalar>::IsComplex>(c, l, r, alpha, 0, size, builtin);
    }
  }
};

}  // namespace Eigen::internal
#endif
