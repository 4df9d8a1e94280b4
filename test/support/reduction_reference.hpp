// The reference of a reduction (egpu/detail/reduction.hpp) for the tests,
// and the bound a result must meet. Each stretch's values, as the host
// computes them (Sample), are combined in long double (std::complex<long
// double> for complex values); u is the unit roundoff of the result's real
// type (2^-24 for float, 2^-53 for double), n the stretch's length.
//
// Bounds, from the library's contract (a compensated sum is within about
// 2u sum|x| plus a few u of its tree of partials):
//  - sum: per component, |got - ref| <= 8u sum|x| + sum a_i + n tiny. 8u is
//    the 2u of the compensated sum with room for the tree of partials and the
//    final rounding to T; a_i, the sample's allowance, covers a value the
//    library computes other than the host does (0 for a leaf, whose value both
//    read as it is); tiny, the smallest normal number, covers subnormal terms.
//    Not judged where sum|x| reaches half of T's largest value (partials may
//    overflow in T where long double does not).
//  - mean (divide): the sum's bound over |divisor|, plus 4u |ref| for the
//    division.
//  - norm (sqrt of a sum): |sqrt(s') - sqrt(s)| <= min(sqrt(e), e / sqrt(s))
//    for |s' - s| <= e, the sum's bound, plus 2u sqrt(s) for the root.
//  - prod: (c (n + 2) u + sum a_i / |x_i|) |ref|: n products that round once
//    each (c = 1; c = 3 for complex, whose products round within sqrt(5) u),
//    the rounding to T, and the values' allowances taken relative. Judged only
//    where no product of some of the values can overflow or underflow in T
//    (sum |log2 |x_i|| at most 60 for float, 500 for double): otherwise the
//    result depends on the order of the products.
//  - min, max: exact (within max a_i), NaN if any value is NaN.
//  - count: exact (within the number of uncertain values).
// Non-finite references: a real NaN must be NaN, a real infinity the same
// infinity (a complex sum is judged per component); a complex product or
// mean with a non-finite part is matched by any non-finite value (complex
// products and quotients of non-finite values follow C's Annex G on the
// host, plain formulas on the GPU). A stretch holding an uncertain sample is
// not judged (counted), except by count.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "egpu/detail/reduction.hpp"
#include "support/elementwise_reference.hpp"

namespace egpu_test {

// A reduction description, for tests that build programs by hand.
inline egpu::detail::Reduction reduction(egpu::detail::ReduceOp op, egpu::detail::ReduceAxis axis,
                                         egpu::detail::ReduceFinish finish = egpu::detail::ReduceFinish::none,
                                         std::complex<double> divisor = 1.0) {
  egpu::detail::Reduction r;
  r.op = op;
  r.axis = axis;
  r.finish = finish;
  r.divisor = divisor;
  return r;
}

inline std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

using LD = long double;
using CLD = std::complex<long double>;

// One value of a stretch as the host computed it.
struct Sample {
  CLD value;         // a real value has imaginary part 0, a boolean is 0 or 1
  LD allowance = 0;  // how far the library's value may lie from `value`
  bool uncertain = false;  // the library's value may be of another kind (finite or not, a flipped boolean)
};

template <class T> Sample exact_sample(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return Sample{CLD(v ? 1 : 0, 0)};
  else if constexpr (Eigen::NumTraits<T>::IsComplex) return Sample{CLD(v.real(), v.imag())};
  else return Sample{CLD(static_cast<LD>(v), 0)};
}
inline Sample exact_sample(const EwValue& v) {
  return with_kind(v.kind, [&](auto zero) { return exact_sample(v.get<decltype(zero)>()); });
}

// abs2 of a sample (re^2 + im^2, Eigen's formula: NaN for an infinite part
// next to a NaN) as the library computes it: exact here, with the sample's
// allowance carried through and 2u |x|^2 for the library's own rounding
// (re^2 + im^2 rounds twice).
inline Sample abs2_sample(const Sample& s, LD u) {
  const LD re = s.value.real(), im = s.value.imag();
  const LD square = re * re + im * im;
  if (!std::isfinite(square)) return Sample{CLD(square, 0), 0, s.uncertain};
  const LD m = std::sqrt(square);
  return Sample{CLD(square, 0), (2 * m + s.allowance) * s.allowance + 2 * u * square, s.uncertain};
}

template <class R> LD unit_roundoff() { return static_cast<LD>(std::numeric_limits<R>::epsilon()) / 2; }

// What one reduced value must be.
struct Expected {
  CLD value;  // the reference, finish applied
  CLD raw;    // before the finish
  LD abs_re = 0, abs_im = 0;   // sum of |re x|, |im x| over the finite parts
  LD allowance = 0;            // sum of the allowances
  LD max_allowance = 0;
  LD relative_allowance = 0;   // sum of a_i / |x_i|
  LD log_spread = 0;           // sum of |log2 |x_i|| over finite nonzero values
  std::int64_t n = 0, count = 0, uncertain = 0;
  bool nan = false, inf = false, zero = false, zero_with_allowance = false;
  bool empty_throws = false;   // min, max or divide of an empty stretch: the library throws
};

inline bool finite_parts(const CLD& z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }

inline void combine(Expected& e, const Sample& s, const egpu::detail::Reduction& r, bool complex) {
  using egpu::detail::ReduceOp;
  const CLD& v = s.value;
  ++e.n;
  if (s.uncertain) ++e.uncertain;
  e.nan = e.nan || std::isnan(v.real()) || std::isnan(v.imag());
  e.inf = e.inf || std::isinf(v.real()) || std::isinf(v.imag());
  e.zero = e.zero || v == CLD(0, 0);
  switch (r.op) {
    case ReduceOp::sum:
      e.raw = CLD(e.raw.real() + v.real(), e.raw.imag() + v.imag());  // per component, as the library sums
      if (std::isfinite(v.real())) e.abs_re += std::abs(v.real());
      if (std::isfinite(v.imag())) e.abs_im += std::abs(v.imag());
      e.allowance += s.allowance;
      break;
    case ReduceOp::prod: {
      e.raw = complex ? e.raw * v : CLD(e.raw.real() * v.real(), 0);
      const LD m = std::abs(v);
      if (std::isfinite(m) && m > 0) e.log_spread += std::abs(std::log2(m));
      if (s.allowance > 0) {
        if (m > 0) e.relative_allowance += s.allowance / m;
        else e.zero_with_allowance = true;
      }
      break;
    }
    case ReduceOp::min:
    case ReduceOp::max: {
      const LD x = v.real(), have = e.raw.real();
      if (e.n == 1 || std::isnan(x)) e.raw = CLD(x, 0);
      else if (!std::isnan(have)) e.raw = CLD(r.op == ReduceOp::min ? std::min(have, x) : std::max(have, x), 0);
      e.max_allowance = std::max(e.max_allowance, s.allowance);
      break;
    }
    case ReduceOp::count:
      if (v != CLD(0, 0)) ++e.count;
      break;
  }
}

inline void finish(Expected& e, const egpu::detail::Reduction& r, bool complex) {
  using egpu::detail::ReduceFinish;
  using egpu::detail::ReduceOp;
  e.empty_throws = e.n == 0 && (r.op == ReduceOp::min || r.op == ReduceOp::max || r.finish == ReduceFinish::divide);
  switch (r.finish) {
    case ReduceFinish::none: e.value = e.raw; break;
    case ReduceFinish::sqrt: e.value = CLD(std::sqrt(e.raw.real()), 0); break;
    case ReduceFinish::divide: {
      const CLD d(r.divisor.real(), r.divisor.imag());
      e.value = complex ? e.raw / d : CLD(e.raw.real() / d.real(), 0);
      break;
    }
  }
}

// The expected results of reduction r over a rows x cols expression whose
// value at (i, j) is sample(i, j) (complex: the values are complex), one per
// reduced value (1, cols or rows of them), in the library's order.
template <class SampleAt>
std::vector<Expected> expected_reduction(std::int64_t rows, std::int64_t cols, const egpu::detail::Reduction& r,
                                         bool complex, SampleAt&& sample) {
  using egpu::detail::ReduceAxis;
  using egpu::detail::ReduceOp;
  const std::int64_t count = r.axis == ReduceAxis::all ? 1 : r.axis == ReduceAxis::each_column ? cols : rows;
  Expected start;
  start.raw = r.op == ReduceOp::prod ? CLD(1, 0) : CLD(0, 0);
  std::vector<Expected> out(static_cast<std::size_t>(count), start);
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t k = r.axis == ReduceAxis::all ? 0 : r.axis == ReduceAxis::each_column ? j : i;
      combine(out[static_cast<std::size_t>(k)], sample(i, j), r, complex);
    }
  for (Expected& e : out) finish(e, r, complex);
  return out;
}

enum class Verdict { pass, unjudged, fail };

namespace reduction_judge {

inline bool same_real(LD got, LD ref) {
  if (std::isnan(ref)) return std::isnan(got);
  return got == ref;
}

// One component of a sum (or a real sum before its finish): its bound, or
// unjudged where partials in T may overflow.
template <class R> bool sum_bound(LD abs_sum, const Expected& e, LD& bound) {
  const LD u = unit_roundoff<R>();
  if (abs_sum >= static_cast<LD>(std::numeric_limits<R>::max()) / 2) return false;
  bound = 8 * u * abs_sum + e.allowance + static_cast<LD>(e.n) * static_cast<LD>(std::numeric_limits<R>::min());
  return true;
}

template <class R> Verdict sum_component(LD got, LD ref, LD abs_sum, const Expected& e, LD& bound) {
  if (!std::isfinite(ref)) return same_real(got, ref) ? Verdict::pass : Verdict::fail;
  if (!sum_bound<R>(abs_sum, e, bound)) return Verdict::unjudged;
  return std::abs(got - ref) <= bound ? Verdict::pass : Verdict::fail;
}

template <class R> Verdict sum(const Expected& e, const CLD& got, bool complex, LD& bound) {
  LD b_im = 0;
  const Verdict re = sum_component<R>(got.real(), e.value.real(), e.abs_re, e, bound);
  if (!complex || re == Verdict::fail) return re;
  const Verdict im = sum_component<R>(got.imag(), e.value.imag(), e.abs_im, e, b_im);
  bound = std::max(bound, b_im);
  if (im == Verdict::fail) return im;
  return re == Verdict::unjudged || im == Verdict::unjudged ? Verdict::unjudged : Verdict::pass;
}

template <class R> Verdict root(const Expected& e, LD got, LD& bound) {
  const LD s = e.raw.real();
  if (!std::isfinite(s)) return same_real(got, std::sqrt(s)) ? Verdict::pass : Verdict::fail;
  LD b = 0;
  if (!sum_bound<R>(e.abs_re, e, b)) return Verdict::unjudged;
  if (s < -b) return std::isnan(got) ? Verdict::pass : Verdict::fail;
  const LD ref = std::sqrt(std::max<LD>(s, 0));
  bound = (ref > 0 ? std::min(std::sqrt(b), b / ref) : std::sqrt(b)) + 2 * unit_roundoff<R>() * ref;
  if (s < 0 && std::isnan(got)) return Verdict::pass;  // a negative sum within its bound of 0
  return std::abs(got - ref) <= bound ? Verdict::pass : Verdict::fail;
}

template <class R> Verdict mean(const Expected& e, const CLD& got, bool complex, const CLD& divisor, LD& bound) {
  if (!finite_parts(e.raw)) {
    if (complex) return finite_parts(got) ? Verdict::fail : Verdict::pass;
    return same_real(got.real(), e.value.real()) ? Verdict::pass : Verdict::fail;
  }
  LD b_re = 0, b_im = 0;
  if (!sum_bound<R>(e.abs_re, e, b_re) || (complex && !sum_bound<R>(e.abs_im, e, b_im))) return Verdict::unjudged;
  const LD u = unit_roundoff<R>();
  bound = (b_re + b_im) / std::abs(divisor) + (complex ? 4 : 2) * u * std::abs(e.value) +
          static_cast<LD>(std::numeric_limits<R>::min());
  return std::abs(got - e.value) <= bound ? Verdict::pass : Verdict::fail;
}

template <class R> Verdict prod(const Expected& e, const CLD& got, bool complex, LD& bound) {
  const LD limit = std::is_same_v<R, float> ? 60 : 500;
  const bool ordered = e.log_spread <= limit && !e.zero_with_allowance;
  if (complex) {
    if (e.nan || e.inf) return finite_parts(got) ? Verdict::fail : Verdict::pass;
    if (!ordered) return Verdict::unjudged;
    if (e.zero) return got == CLD(0, 0) ? Verdict::pass : Verdict::fail;
  } else {
    // NaN whatever the order: a NaN value, or an infinity and a zero.
    if (e.nan || (e.inf && e.zero)) return std::isnan(got.real()) ? Verdict::pass : Verdict::fail;
    if (!ordered) return Verdict::unjudged;
    if (e.inf || e.zero) return got.real() == e.value.real() ? Verdict::pass : Verdict::fail;
  }
  const LD c = complex ? 3 : 1;
  bound = (c * static_cast<LD>(e.n + 2) * unit_roundoff<R>() + e.relative_allowance) * std::abs(e.value);
  return std::abs(got - e.value) <= bound ? Verdict::pass : Verdict::fail;
}

inline Verdict extreme(const Expected& e, LD got, LD& bound) {
  const LD ref = e.value.real();
  bound = e.max_allowance;
  if (!std::isfinite(ref) || bound == 0) return same_real(got, ref) ? Verdict::pass : Verdict::fail;
  return std::abs(got - ref) <= bound ? Verdict::pass : Verdict::fail;
}

}  // namespace reduction_judge

// Judges the library's result `got` (of type T: the program's value type, or
// std::int64_t for count) against e; `bound` gets the bound used, if any.
template <class T>
Verdict judge(const Expected& e, const egpu::detail::Reduction& r, const T& got, LD& bound) {
  using egpu::detail::ReduceFinish;
  using egpu::detail::ReduceOp;
  namespace rj = reduction_judge;
  bound = 0;
  if constexpr (std::is_same_v<T, std::int64_t>) {
    bound = static_cast<LD>(e.uncertain);
    return std::abs(got - e.count) <= e.uncertain ? Verdict::pass : Verdict::fail;
  } else {
    using R = typename Eigen::NumTraits<T>::Real;
    constexpr bool complex = Eigen::NumTraits<T>::IsComplex;
    if (e.uncertain > 0) return Verdict::unjudged;
    const CLD g = exact_sample(got).value;
    switch (r.op) {
      case ReduceOp::count: return Verdict::fail;  // a count is std::int64_t
      case ReduceOp::min:
      case ReduceOp::max: return rj::extreme(e, g.real(), bound);
      case ReduceOp::prod: return rj::prod<R>(e, g, complex, bound);
      case ReduceOp::sum: break;
    }
    switch (r.finish) {
      case ReduceFinish::sqrt: return rj::root<R>(e, g.real(), bound);
      case ReduceFinish::divide: return rj::mean<R>(e, g, complex, CLD(r.divisor.real(), r.divisor.imag()), bound);
      case ReduceFinish::none: break;
    }
    return rj::sum<R>(e, g, complex, bound);
  }
}

// Judgements of many reduced values: how many failed or were not judged,
// and the first few failures.
struct ReductionOutcome {
  long bad = 0, unjudged = 0, judged = 0;
  std::ostringstream report;
  void note(const std::string& line) {
    if (bad++ < 3) report << "  " << line << "\n";
  }
};

// Judges got[0 .. expected.size()) against `expected`.
template <class T>
void judge_all(const std::vector<Expected>& expected, const egpu::detail::Reduction& r, const T* got,
               const std::string& what, ReductionOutcome& o) {
  for (std::size_t k = 0; k < expected.size(); ++k) {
    LD bound = 0;
    const Verdict v = judge(expected[k], r, got[k], bound);
    if (v == Verdict::unjudged) ++o.unjudged;
    if (v != Verdict::unjudged) ++o.judged;
    if (v != Verdict::fail) continue;
    std::ostringstream line;
    line.precision(20);
    line << what << ", value " << k << " of " << expected.size() << ": got " << got[k] << ", reference ";
    if constexpr (std::is_same_v<T, std::int64_t>) line << expected[k].count;
    else line << expected[k].value;
    line << ", bound " << bound << " (n " << expected[k].n << ")";
    o.note(line.str());
  }
}

// Calls f(T()) with T the result type of reduction r over a program whose
// value has kind `value`: the value's type, or std::int64_t for count.
template <class F> auto with_result_type(egpu::detail::ValueKind value, const egpu::detail::Reduction& r, F&& f) {
  if (r.op == egpu::detail::ReduceOp::count) return f(std::int64_t());
  switch (value) {
    case egpu::detail::ValueKind::f32: return f(float());
    case egpu::detail::ValueKind::f64: return f(double());
    case egpu::detail::ValueKind::c32: return f(std::complex<float>());
    default: return f(std::complex<double>());
  }
}

inline const char* op_text(egpu::detail::ReduceOp op) {
  switch (op) {
    case egpu::detail::ReduceOp::sum: return "sum";
    case egpu::detail::ReduceOp::prod: return "prod";
    case egpu::detail::ReduceOp::min: return "min";
    case egpu::detail::ReduceOp::max: return "max";
    default: return "count";
  }
}
inline std::string reduction_text(const egpu::detail::Reduction& r) {
  using egpu::detail::ReduceAxis;
  using egpu::detail::ReduceFinish;
  std::string s = op_text(r.op);
  s += r.axis == ReduceAxis::all ? " of all" : r.axis == ReduceAxis::each_column ? " of each column" : " of each row";
  if (r.finish == ReduceFinish::sqrt) s += ", sqrt";
  if (r.finish == ReduceFinish::divide) s += ", divided";
  return s;
}

}  // namespace egpu_test
