// Random product cases for egpu::gpu, shared by the adapter test (recording
// backend), the CPU fallback test and the GPU property tests.
//
// A case is a random shape (0 and 1 included), an op on each side (none,
// transpose, adjoint, conjugate), operands and destination stored with
// arbitrary strides inside larger buffers (column-major, row-major, inner
// strides, offsets: strided blocks and Maps with inner and outer strides),
// an assignment form (=, noalias() =, +=, noalias() +=, -=, noalias() -=)
// and a scalar factor placement. A second family ("special" cases) covers
// what needs concrete Eigen types: plain matrices with aliasing and
// resizing, Block, Ref, row-major Matrix destinations, operands without
// direct access, mixed real * complex, gpu() inside a larger expression.
//
// Every result is checked against a reference computed in wider precision
// from the same inputs, with the bound of test_support.hpp; for `=` the
// destination is poisoned with NaN first, and the storage around a strided
// destination must come out untouched.
#pragma once

#include <Eigen/Dense>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "egpu/egpu.hpp"
#include "support/test_support.hpp"

namespace egpu_test {

enum class Op { N, T, H, C };  // none, transpose, adjoint, conjugate
enum class Form { assign, noalias_assign, add, noalias_add, sub, noalias_sub };
// A*B, alpha*(A*B), -(A*B)*alpha. (Factors inside the operands, alpha*A*B,
// make new product types and so many more template instantiations; the
// adapter test and the special cases cover those.)
enum class Scale { none, outer, negated };

inline const char* op_name(Op op) {
  switch (op) {
    case Op::N: return "N";
    case Op::T: return "T";
    case Op::H: return "H";
    default: return "C";
  }
}
inline const char* form_name(Form f) {
  switch (f) {
    case Form::assign: return "=";
    case Form::noalias_assign: return "noalias() =";
    case Form::add: return "+=";
    case Form::noalias_add: return "noalias() +=";
    case Form::sub: return "-=";
    default: return "noalias() -=";
  }
}
inline bool accumulates(Form f) { return f != Form::assign && f != Form::noalias_assign; }
inline bool subtracts(Form f) { return f == Form::sub || f == Form::noalias_sub; }

template <class S> using ColMap = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>,
                                             Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
template <class S> using RowMap = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                                             Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
template <class S> using Plain = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

// A rows x cols matrix at buf[offset + i*rs + j*cs], inside a larger,
// randomly filled buffer.
template <class S> struct Strided {
  std::vector<S> buf;
  Index rows = 0, cols = 0, rs = 1, cs = 1, offset = 0;

  S* data() { return buf.data() + offset; }
  // Column-major view: inner stride rs, outer stride cs (any of the two may be 1).
  ColMap<S> col() { return ColMap<S>(data(), rows, cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(cs, rs)); }
  // Row-major view of the same elements.
  RowMap<S> row() { return RowMap<S>(data(), rows, cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(rs, cs)); }
  std::string text() const {
    std::ostringstream s;
    s << rows << "x" << cols << "(rs " << rs << ", cs " << cs << ", off " << offset << ")";
    return s.str();
  }
  // Whether every element outside the view equals `before`'s.
  bool outside_unchanged(const std::vector<S>& before) const {
    std::vector<char> in(buf.size(), 0);
    for (Index j = 0; j < cols; ++j)
      for (Index i = 0; i < rows; ++i) in[static_cast<std::size_t>(offset + i * rs + j * cs)] = 1;
    for (std::size_t t = 0; t < buf.size(); ++t)
      if (!in[t] && !(buf[t] == before[t])) return false;
    return true;
  }
};

// row_major: rows are contiguous-ish (cs is the small stride). strided:
// inner strides 2 or 3 now and then, padded leading dimension, offset.
template <class S> Strided<S> make_strided(Index rows, Index cols, bool row_major, bool strided) {
  Strided<S> x;
  x.rows = rows;
  x.cols = cols;
  const Index inner = strided && coin(0.35) ? uniform_index(2, 3) : 1;
  const Index pad = strided ? uniform_index(1, 9) : 0;
  x.offset = strided ? uniform_index(1, 5) : 0;
  if (!row_major) {
    x.rs = inner;
    x.cs = std::max<Index>(rows, 1) * inner + pad;
  } else {
    x.cs = inner;
    x.rs = std::max<Index>(cols, 1) * inner + pad;
  }
  const Index span = rows > 0 && cols > 0 ? (rows - 1) * x.rs + (cols - 1) * x.cs + 1 : 0;
  x.buf.resize(static_cast<std::size_t>(x.offset + span + (strided ? 3 : 0)));
  for (auto& v : x.buf) v = random_scalar<S>();
  return x;
}

// A random dimension in [0, max_dim]: 0 and 1 often, small and odd sizes,
// and now and then the full range.
inline Index random_dim(Index max_dim) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng());
  Index d;
  if (u < 0.08) d = 0;
  else if (u < 0.2) d = 1;
  else if (u < 0.55) d = uniform_index(2, 40);
  else if (u < 0.8) d = uniform_index(2, std::max<Index>(2, max_dim / 4)) | 1;  // odd
  else d = uniform_index(2, std::max<Index>(2, max_dim));
  return std::min(d, max_dim);
}

// Which assignment (=, +=, -=) goes with which op pair. Every (op(A),
// op(B), assignment) triple is its own set of template instantiations, as
// costly to compile as an Eigen product each; this table keeps 16 of the 48
// while still giving every conj pattern, every transpose pattern and (for
// real scalars, where H is T and C is N) every op pair all three
// assignments. Whether noalias() is used, the scale, shapes and strides
// stay random.
constexpr int form_kind_table[4][4] = {{0, 1, 2, 1}, {2, 0, 1, 0}, {1, 2, 1, 0}, {2, 0, 2, 1}};
inline Form form_for(Op a, Op b, bool noalias) {
  switch (form_kind_table[static_cast<int>(a)][static_cast<int>(b)]) {
    case 0: return noalias ? Form::noalias_assign : Form::assign;
    case 1: return noalias ? Form::noalias_add : Form::add;
    default: return noalias ? Form::noalias_sub : Form::sub;
  }
}

struct CaseSpec {
  Index m = 0, n = 0, k = 0;
  Op op_a = Op::N, op_b = Op::N;
  bool a_row_major = false, b_row_major = false, c_row_major = false;
  bool a_strided = false, b_strided = false, c_strided = false;
  Form form = Form::assign;
  Scale scale = Scale::none;
};

inline CaseSpec random_spec(Index max_dim) {
  CaseSpec s;
  s.m = random_dim(max_dim);
  s.n = random_dim(max_dim);
  s.k = random_dim(max_dim);
  // Keep the volume of large cases bounded: a cheap reference, many cases.
  while (double(s.m) * double(s.n) * double(s.k) > 0.25 * double(max_dim) * double(max_dim) * double(max_dim) &&
         max_dim > 64) {
    Index& big = s.m >= s.n && s.m >= s.k ? s.m : (s.n >= s.k ? s.n : s.k);
    big = big / 2 + 1;
  }
  auto op = [] { return static_cast<Op>(uniform_index(0, 3)); };
  s.op_a = op();
  s.op_b = op();
  s.a_row_major = coin(0.3);
  s.b_row_major = coin(0.3);
  s.c_row_major = coin(0.35);
  s.a_strided = coin(0.4);
  s.b_strided = coin(0.4);
  s.c_strided = coin(0.4);
  s.form = form_for(s.op_a, s.op_b, coin());
  s.scale = static_cast<Scale>(uniform_index(0, 2));
  return s;
}

template <class Dst, class Src> void apply_form(Form f, Dst&& dst, const Src& src) {
  switch (f) {
    case Form::assign: dst = src; break;
    case Form::noalias_assign: dst.noalias() = src; break;
    case Form::add: dst += src; break;
    case Form::noalias_add: dst.noalias() += src; break;
    case Form::sub: dst -= src; break;
    case Form::noalias_sub: dst.noalias() -= src; break;
  }
}

// Calls f(tag, op(v)) with tag an std::integral_constant<int, op>.
template <class V, class F> void with_op(Op op, const V& v, F&& f) {
  switch (op) {
    case Op::N: f(std::integral_constant<int, 0>(), v); break;
    case Op::T: f(std::integral_constant<int, 1>(), v.transpose()); break;
    case Op::H: f(std::integral_constant<int, 2>(), v.adjoint()); break;
    case Op::C: f(std::integral_constant<int, 3>(), v.conjugate()); break;
  }
}

// apply_form for the forms of one assignment kind (form_for's table), so
// that only that kind's Eigen assignment is instantiated.
template <int Kind, class Dst, class Src> void apply_kind(bool noalias, Dst&& dst, const Src& src) {
  if constexpr (Kind == 0) {
    if (noalias) dst.noalias() = src;
    else dst = src;
  } else if constexpr (Kind == 1) {
    if (noalias) dst.noalias() += src;
    else dst += src;
  } else {
    if (noalias) dst.noalias() -= src;
    else dst -= src;
  }
}

template <class P, class V> P apply_op(Op op, const V& v) {
  switch (op) {
    case Op::N: return P(v);
    case Op::T: return P(v.transpose());
    case Op::H: return P(v.adjoint());
    default: return P(v.conjugate());
  }
}

struct CaseOutcome {
  double ratio = 0;          // error / bound; NaN on NaN output
  bool outside_ok = true;    // storage around the destination untouched
  std::string text;          // what the case was
  bool ok() const { return ratio <= kRatioLimit && outside_ok; }
};

// Worst error ratio and case count per scalar type, for the summary line.
template <class S> CaseOutcome run_case(const CaseSpec& spec, const egpu::Options& options) {
  using W = wider_t<S>;
  using PW = Plain<W>;
  const bool ta = spec.op_a == Op::T || spec.op_a == Op::H;
  const bool tb = spec.op_b == Op::T || spec.op_b == Op::H;
  Strided<S> a = make_strided<S>(ta ? spec.k : spec.m, ta ? spec.m : spec.k, spec.a_row_major, spec.a_strided);
  Strided<S> b = make_strided<S>(tb ? spec.n : spec.k, tb ? spec.k : spec.n, spec.b_row_major, spec.b_strided);
  Strided<S> c = make_strided<S>(spec.m, spec.n, spec.c_row_major, spec.c_strided);
  const S alpha0 = spec.scale == Scale::none ? S(1) : random_scalar<S>();
  const S alpha = spec.scale == Scale::negated ? S(-alpha0) : alpha0;
  if (!accumulates(spec.form)) poison(c.col());
  const std::vector<S> c_before = c.buf;
  const Plain<S> c0 = c.col();

  // Reference, in wider precision.
  const PW opa = apply_op<Plain<S>>(spec.op_a, a.col()).template cast<W>();
  const PW opb = apply_op<Plain<S>>(spec.op_b, b.col()).template cast<W>();
  PW ref = (W(alpha) * opa) * opb;
  if (subtracts(spec.form)) ref = -ref;
  if (accumulates(spec.form)) ref += c0.template cast<W>();

  auto av = a.col();
  auto bv = b.col();
  const bool noalias = spec.form == Form::noalias_assign || spec.form == Form::noalias_add ||
                       spec.form == Form::noalias_sub;
  BOOST_REQUIRE(spec.form == form_for(spec.op_a, spec.op_b, noalias));
  with_op(spec.op_a, av, [&](auto tag_a, const auto& x) {
    with_op(spec.op_b, bv, [&](auto tag_b, const auto& y) {
      constexpr int kind = form_kind_table[decltype(tag_a)::value][decltype(tag_b)::value];
      switch (spec.scale) {
        case Scale::none: apply_kind<kind>(noalias, c.col(), egpu::gpu(x * y, options)); break;
        case Scale::outer: apply_kind<kind>(noalias, c.col(), egpu::gpu(alpha0 * (x * y), options)); break;
        case Scale::negated: apply_kind<kind>(noalias, c.col(), egpu::gpu(-(x * y) * alpha0, options)); break;
      }
    });
  });

  CaseOutcome out;
  const double err = diff_norm(c.col(), ref);
  const double bound = error_bound<S>(spec.k, std::abs(alpha), frob(a.col()), frob(b.col()),
                                      accumulates(spec.form) ? 1.0 : 0.0,
                                      accumulates(spec.form) ? frob(c0) : 0.0);
  out.ratio = error_ratio(err, bound);
  out.outside_ok = c.outside_unchanged(c_before);
  std::ostringstream s;
  s << scalar_name<S>() << " m=" << spec.m << " n=" << spec.n << " k=" << spec.k << " op(A)=" << op_name(spec.op_a)
    << " A " << (spec.a_row_major ? "row" : "col") << a.text() << " op(B)=" << op_name(spec.op_b) << " B "
    << (spec.b_row_major ? "row" : "col") << b.text() << " C " << (spec.c_row_major ? "row" : "col") << c.text()
    << " form '" << form_name(spec.form) << "' scale "
    << (spec.scale == Scale::none ? "none" : spec.scale == Scale::outer ? "alpha*(A*B)" : "-(A*B)*alpha")
    << " error ratio " << out.ratio << (out.outside_ok ? "" : " WROTE OUTSIDE THE DESTINATION");
  out.text = s.str();
  return out;
}

// Cases on concrete Eigen types. kind in [0, special_kinds).
constexpr int special_kinds = 13;

template <class S> CaseOutcome run_special(int kind, Index m, Index n, Index k, const egpu::Options& options) {
  using W = wider_t<S>;
  using PW = Plain<W>;
  using M = Plain<S>;
  using R = real_t<S>;
  using RowM = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  auto w = [](const auto& x) { return PW(x.template cast<W>()); };
  CaseOutcome out;
  double err = 0, bound = 1;
  std::ostringstream s;
  s << scalar_name<S>() << " special kind " << kind << " m=" << m << " n=" << n << " k=" << k << ": ";
  switch (kind) {
    case 0: {  // C = gpu(C * B): C is an operand and (resized) destination
      M c = random_matrix<M>(m, k), b = random_matrix<M>(k, n);
      const PW ref = w(c) * w(b);
      const double na = frob(c), nb = frob(b);
      c = egpu::gpu(c * b, options);
      s << "C = gpu(C * B)";
      err = c.rows() == m && c.cols() == n ? diff_norm(c, ref) : 1e300;
      bound = error_bound<S>(k, 1, na, nb, 0, 0);
      break;
    }
    case 1: {  // C += gpu(C * B), B square
      M c = random_matrix<M>(m, k), b = random_matrix<M>(k, k);
      const PW ref = w(c) + w(c) * w(b);
      const double na = frob(c), nb = frob(b);
      c += egpu::gpu(c * b, options);
      s << "C += gpu(C * B)";
      err = diff_norm(c, ref);
      bound = error_bound<S>(k, 1, na, nb, 1, na);
      break;
    }
    case 2: {  // B = gpu(A * B), B resized
      M a = random_matrix<M>(m, k), b = random_matrix<M>(k, n);
      const PW ref = w(a) * w(b);
      const double na = frob(a), nb = frob(b);
      b = egpu::gpu(a * b, options);
      s << "B = gpu(A * B)";
      err = b.rows() == m && b.cols() == n ? diff_norm(b, ref) : 1e300;
      bound = error_bound<S>(k, 1, na, nb, 0, 0);
      break;
    }
    case 3: {  // C -= gpu(alpha * C.adjoint() * C): C square, both operands alias the destination
      M c = random_matrix<M>(m, m);
      const S alpha = random_scalar<S>();
      const PW ref = w(c) - W(alpha) * w(c).adjoint() * w(c);
      const double nc = frob(c);
      c -= egpu::gpu(alpha * c.adjoint() * c, options);
      s << "C -= gpu(alpha * C.adjoint() * C)";
      err = diff_norm(c, ref);
      bound = error_bound<S>(m, std::abs(alpha), nc, nc, 1, nc);
      break;
    }
    case 4: {  // overlapping blocks of one matrix: X.block = gpu(X.block' * B)
      const Index rows = m + k + 3, cols = std::max(n, k) + 4;
      M x = random_matrix<M>(rows, cols), b = random_matrix<M>(k, n);
      const Index r0 = m > 0 ? uniform_index(0, std::min<Index>(m, 2)) : 0;
      PW ref = w(x);
      ref.block(0, 1, m, n) = w(x.block(r0, 0, m, k)) * w(b);
      const double na = frob(x.block(r0, 0, m, k)), nb = frob(b);
      x.block(0, 1, m, n) = egpu::gpu(x.block(r0, 0, m, k) * b, options);
      s << "X.block(0,1,m,n) = gpu(X.block(" << r0 << ",0,m,k) * B)";
      err = diff_norm(x, ref);
      bound = error_bound<S>(k, 1, na, nb, 0, 0);
      break;
    }
    case 5: {  // block destination and block operands of larger matrices, +=
      M x = random_matrix<M>(m + 5, n + 3), a = random_matrix<M>(m + 2, k + 7), b = random_matrix<M>(k + 1, n + 4);
      PW ref = w(x);
      ref.block(2, 1, m, n) += w(a.block(1, 3, m, k)) * w(b.block(1, 2, k, n));
      const double na = frob(a.block(1, 3, m, k)), nb = frob(b.block(1, 2, k, n)), nc = frob(x);
      x.block(2, 1, m, n).noalias() += egpu::gpu(a.block(1, 3, m, k) * b.block(1, 2, k, n), options);
      s << "X.block.noalias() += gpu(A.block * B.block)";
      err = diff_norm(x, ref);
      bound = error_bound<S>(k, 1, na, nb, 1, nc);
      break;
    }
    case 6: {  // row-major Matrix destination, resized, with row-major operand
      RowM a = random_matrix<RowM>(m, k);
      M b = random_matrix<M>(n, k);
      RowM c = random_matrix<RowM>(1, 2);
      const PW ref = w(a) * w(b).transpose();
      c = egpu::gpu(a * b.transpose(), options);
      s << "RowMajor C = gpu(RowMajor A * B.transpose())";
      err = c.rows() == m && c.cols() == n ? diff_norm(c, ref) : 1e300;
      bound = error_bound<S>(k, 1, frob(a), frob(b), 0, 0);
      break;
    }
    case 7: {  // Ref operands and destination
      M a = random_matrix<M>(m, k), b = random_matrix<M>(k, n), c = random_matrix<M>(m, n);
      const PW ref = w(c) - w(a) * w(b);
      const double nc = frob(c);
      Eigen::Ref<const M> ra(a), rb(b);
      Eigen::Ref<M> rc(c);
      rc -= egpu::gpu(ra * rb, options);
      s << "Ref -= gpu(Ref * Ref)";
      err = diff_norm(c, ref);
      bound = error_bound<S>(k, 1, frob(a), frob(b), 1, nc);
      break;
    }
    case 8: {  // operand without direct access: (A + A2) * B
      M a = random_matrix<M>(m, k), a2 = random_matrix<M>(m, k), b = random_matrix<M>(k, n), c(m, n);
      poison(c);
      const PW ref = (w(a) + w(a2)) * w(b);
      c.noalias() = egpu::gpu((a + a2) * b, options);
      s << "C.noalias() = gpu((A + A2) * B)";
      err = diff_norm(c, ref);
      bound = error_bound<S>(k, 1, frob(a) + frob(a2), frob(b), 0, 0);
      break;
    }
    case 9: {  // mixed real * complex (complex scalars), else an Array operand
      M b = random_matrix<M>(k, n), c(m, n);
      poison(c);
      if constexpr (is_complex_v<S>) {
        Plain<R> a = random_matrix<Plain<R>>(m, k);
        const PW ref = w(a.template cast<S>()) * w(b);
        c = egpu::gpu(a * b, options);
        s << "C = gpu(real A * complex B)";
        err = diff_norm(c, ref);
        bound = error_bound<S>(k, 1, frob(a), frob(b), 0, 0);
      } else {
        Eigen::Array<S, Eigen::Dynamic, Eigen::Dynamic> a = random_matrix<M>(m, k).array();
        const PW ref = w(a.matrix()) * w(b);
        c = egpu::gpu(a.matrix() * b, options);
        s << "C = gpu(A.array().matrix() * B)";
        err = diff_norm(c, ref);
        bound = error_bound<S>(k, 1, frob(a.matrix()), frob(b), 0, 0);
      }
      break;
    }
    case 10: {  // gpu(A * B) inside a larger expression
      M a = random_matrix<M>(m, k), b = random_matrix<M>(k, n), e = random_matrix<M>(m, n), d(m, n);
      poison(d);
      const PW ref = w(a) * w(b) + w(e);
      d = egpu::gpu(a * b, options) + e;
      s << "D = gpu(A * B) + E";
      err = diff_norm(d, ref);
      bound = error_bound<S>(k, 1, frob(a), frob(b), 1, frob(e));
      break;
    }
    case 11: {  // -(A * B) and (A * B) * s into a Map with an inner stride
      M a = random_matrix<M>(m, k), b = random_matrix<M>(k, n);
      const S s2 = random_scalar<S>();
      std::vector<S> buf(static_cast<std::size_t>(2 * m * n + 1));
      ColMap<S> c(buf.data(), m, n, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(2 * m, 2));
      poison(c);
      const PW ref = -(w(a) * w(b)) * W(s2);
      c = egpu::gpu(-(a * b) * s2, options);
      s << "Map<inner 2> = gpu(-(A * B) * s)";
      err = diff_norm(c, ref);
      bound = error_bound<S>(k, std::abs(s2), frob(a), frob(b), 0, 0);
      break;
    }
    default: {  // a fixed-size Block destination and a conjugated transposed product
      M a = random_matrix<M>(k, 4), b = random_matrix<M>(k, 3), x = random_matrix<M>(6, 5);
      PW ref = w(x);
      ref.template block<4, 3>(1, 2) = w(a).adjoint() * w(b).conjugate();
      x.template block<4, 3>(1, 2) = egpu::gpu(a.adjoint() * b.conjugate(), options);
      s << "X.block<4,3>() = gpu(A.adjoint() * B.conjugate())";
      err = diff_norm(x, ref);
      bound = error_bound<S>(k, 1, frob(a), frob(b), 0, 0);
      break;
    }
  }
  out.ratio = error_ratio(err, bound);
  s << " error ratio " << out.ratio;
  out.text = s.str();
  return out;
}

// Runs `count` random cases and `specials` special cases of scalar S, each
// checked with BOOST_TEST; returns the tally.
template <class S> Tally run_random_cases(int count, int specials, Index max_dim, const egpu::Options& options) {
  Tally tally;
  for (int t = 0; t < count; ++t) {
    const CaseOutcome o = run_case<S>(random_spec(max_dim), options);
    tally.add(o.ratio);
    BOOST_TEST(o.ok(), o.text);
  }
  for (int t = 0; t < specials; ++t) {
    const int kind = t % special_kinds;
    const Index sd = std::max<Index>(max_dim / 3, 2);
    const CaseOutcome o = run_special<S>(kind, random_dim(sd), random_dim(sd), random_dim(sd), options);
    tally.add(o.ratio);
    BOOST_TEST(o.ok(), o.text);
  }
  return tally;
}

// The cases are compiled once per scalar, in gemm_cases_<scalar>.cpp (the
// egpu_gemm_cases library that every test running them links): they are the
// heaviest instantiations of the test suite, and their code does not depend
// on which backend a test links. `extern` here; an explicit definition in
// those files.
#define EGPU_TEST_GEMM_CASES(EXTERN, S)                                                  \
  EXTERN template CaseOutcome run_case<S>(const CaseSpec&, const egpu::Options&);       \
  EXTERN template CaseOutcome run_special<S>(int, Index, Index, Index, const egpu::Options&); \
  EXTERN template Tally run_random_cases<S>(int, int, Index, const egpu::Options&);
EGPU_TEST_GEMM_CASES(extern, float)
EGPU_TEST_GEMM_CASES(extern, double)
EGPU_TEST_GEMM_CASES(extern, std::complex<float>)
EGPU_TEST_GEMM_CASES(extern, std::complex<double>)

}  // namespace egpu_test
