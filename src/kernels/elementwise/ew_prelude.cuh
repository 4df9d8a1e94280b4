// The device side of every generated coefficient-wise kernel: the value
// types (the four scalars and bool), one function per operation with Eigen's
// meaning for each type, and the loads and stores. The library prepends this
// file to each kernel it generates (elementwise_source.cpp) and compiles the
// whole with NVRTC after ew_params.h, so it includes nothing: NVRTC's
// built-in math functions and types are all it uses.
//
// Eigen's meaning, operation by operation (Eigen 3.4's scalar functors):
// min/max are std::min/std::max (the first argument when either is NaN);
// rsqrt of a real is 1/sqrt; cube is x*x*x; inverse is 1/x; arg of a real is
// std::arg's, pi when the sign bit is set (-0.0 included), else 0;
// real/complex mixes follow std::complex's operators;
// complex division is Smith's algorithm; complex pow(x, y) is
// exp(y * log(x)), as C's cpow (so 0^y is 0 or infinite by the sign of
// Re y, as there); complex sqrt, rsqrt, log, expm1 and log1p are
// Eigen's own formulas.
//
// Complex values with infinite or NaN parts follow these formulas, not the
// special values of C's Annex G that the host's library gives (where it
// recovers an infinity, a formula here may give NaN or another value): the
// results of complex operations on non-finite values are not specified.

namespace ew {

template <class T> struct cx {
  T re, im;
};
typedef cx<float> c32;
typedef cx<double> c64;

template <class T> __device__ __forceinline__ cx<T> mk(T re, T im) { cx<T> z; z.re = re; z.im = im; return z; }

// ---- casts -------------------------------------------------------------------
template <class To> struct cast_to {
  template <class From> __device__ static To from(From x) { return static_cast<To>(x); }
};
template <class T> struct cast_to<cx<T> > {
  template <class From> __device__ static cx<T> from(From x) { return mk(static_cast<T>(x), T(0)); }
  template <class U> __device__ static cx<T> from(cx<U> x) { return mk(static_cast<T>(x.re), static_cast<T>(x.im)); }
};
template <class To, class From> __device__ __forceinline__ To cast(From x) { return cast_to<To>::from(x); }

// ---- arithmetic ----------------------------------------------------------------
#define EW_REAL_ARITH(T)                                                              \
  __device__ __forceinline__ T add(T x, T y) { return x + y; }                        \
  __device__ __forceinline__ T sub(T x, T y) { return x - y; }                        \
  __device__ __forceinline__ T mul(T x, T y) { return x * y; }                        \
  __device__ __forceinline__ T div(T x, T y) { return x / y; }
EW_REAL_ARITH(float)
EW_REAL_ARITH(double)
#undef EW_REAL_ARITH

template <class T> __device__ __forceinline__ cx<T> add(cx<T> x, cx<T> y) { return mk(x.re + y.re, x.im + y.im); }
template <class T> __device__ __forceinline__ cx<T> sub(cx<T> x, cx<T> y) { return mk(x.re - y.re, x.im - y.im); }
template <class T> __device__ __forceinline__ cx<T> mul(cx<T> x, cx<T> y) {
  return mk(x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re);
}
template <class T> __device__ __forceinline__ cx<T> div(cx<T> x, cx<T> y) {
  // Smith's algorithm: no overflow of |y|^2 for large y.
  if (fabs(y.re) >= fabs(y.im)) {
    const T r = y.im / y.re, d = y.re + y.im * r;
    return mk((x.re + x.im * r) / d, (x.im - x.re * r) / d);
  }
  const T r = y.re / y.im, d = y.re * r + y.im;
  return mk((x.re * r + x.im) / d, (x.im * r - x.re) / d);
}
// Real with complex, as std::complex's mixed operators.
template <class T> __device__ __forceinline__ cx<T> add(T x, cx<T> y) { return mk(x + y.re, y.im); }
template <class T> __device__ __forceinline__ cx<T> add(cx<T> x, T y) { return mk(x.re + y, x.im); }
template <class T> __device__ __forceinline__ cx<T> sub(T x, cx<T> y) { return mk(x - y.re, -y.im); }
template <class T> __device__ __forceinline__ cx<T> sub(cx<T> x, T y) { return mk(x.re - y, x.im); }
template <class T> __device__ __forceinline__ cx<T> mul(T x, cx<T> y) { return mk(x * y.re, x * y.im); }
template <class T> __device__ __forceinline__ cx<T> mul(cx<T> x, T y) { return mk(x.re * y, x.im * y); }
template <class T> __device__ __forceinline__ cx<T> div(T x, cx<T> y) { return div(mk(x, T(0)), y); }
template <class T> __device__ __forceinline__ cx<T> div(cx<T> x, T y) { return mk(x.re / y, x.im / y); }

// ---- real functions --------------------------------------------------------------
#define EW_REAL_FUNCTIONS(T, PI)                                                          \
  __device__ __forceinline__ T negate(T x) { return -x; }                               \
  __device__ __forceinline__ T abs(T x) { return fabs(x); }                             \
  __device__ __forceinline__ T abs2(T x) { return x * x; }                              \
  __device__ __forceinline__ T sqrt(T x) { return ::sqrt(x); }                          \
  __device__ __forceinline__ T rsqrt(T x) { return T(1) / ::sqrt(x); }                  \
  __device__ __forceinline__ T square(T x) { return x * x; }                            \
  __device__ __forceinline__ T cube(T x) { return x * x * x; }                          \
  __device__ __forceinline__ T inverse(T x) { return T(1) / x; }                        \
  __device__ __forceinline__ T exp(T x) { return ::exp(x); }                            \
  __device__ __forceinline__ T expm1(T x) { return ::expm1(x); }                        \
  __device__ __forceinline__ T log(T x) { return ::log(x); }                            \
  __device__ __forceinline__ T log1p(T x) { return ::log1p(x); }                        \
  __device__ __forceinline__ T log10(T x) { return ::log10(x); }                        \
  __device__ __forceinline__ T sin(T x) { return ::sin(x); }                            \
  __device__ __forceinline__ T cos(T x) { return ::cos(x); }                            \
  __device__ __forceinline__ T tan(T x) { return ::tan(x); }                            \
  __device__ __forceinline__ T asin(T x) { return ::asin(x); }                          \
  __device__ __forceinline__ T acos(T x) { return ::acos(x); }                          \
  __device__ __forceinline__ T atan(T x) { return ::atan(x); }                          \
  __device__ __forceinline__ T sinh(T x) { return ::sinh(x); }                          \
  __device__ __forceinline__ T cosh(T x) { return ::cosh(x); }                          \
  __device__ __forceinline__ T tanh(T x) { return ::tanh(x); }                          \
  __device__ __forceinline__ T floor(T x) { return ::floor(x); }                        \
  __device__ __forceinline__ T ceil(T x) { return ::ceil(x); }                          \
  __device__ __forceinline__ T round(T x) { return ::round(x); }                        \
  __device__ __forceinline__ T real(T x) { return x; }                                  \
  __device__ __forceinline__ T imag(T) { return T(0); }                                 \
  __device__ __forceinline__ T conj(T x) { return x; }                                  \
  __device__ __forceinline__ T arg(T x) { return ::signbit(x) ? T(PI) : T(0); }         \
  __device__ __forceinline__ T min(T x, T y) { return y < x ? y : x; }                  \
  __device__ __forceinline__ T max(T x, T y) { return x < y ? y : x; }                  \
  __device__ __forceinline__ T pow(T x, T y) { return ::pow(x, y); }                    \
  __device__ __forceinline__ bool eq(T x, T y) { return x == y; }                       \
  __device__ __forceinline__ bool ne(T x, T y) { return x != y; }                       \
  __device__ __forceinline__ bool lt(T x, T y) { return x < y; }                        \
  __device__ __forceinline__ bool le(T x, T y) { return x <= y; }                       \
  __device__ __forceinline__ bool gt(T x, T y) { return x > y; }                        \
  __device__ __forceinline__ bool ge(T x, T y) { return x >= y; }
EW_REAL_FUNCTIONS(float, 3.14159265358979323846)
EW_REAL_FUNCTIONS(double, 3.14159265358979323846)
#undef EW_REAL_FUNCTIONS

// ---- complex functions ------------------------------------------------------------
template <class T> __device__ __forceinline__ cx<T> negate(cx<T> z) { return mk(-z.re, -z.im); }
template <class T> __device__ __forceinline__ T abs(cx<T> z) { return ::hypot(z.re, z.im); }
template <class T> __device__ __forceinline__ T abs2(cx<T> z) { return z.re * z.re + z.im * z.im; }
template <class T> __device__ __forceinline__ T real(cx<T> z) { return z.re; }
template <class T> __device__ __forceinline__ T imag(cx<T> z) { return z.im; }
template <class T> __device__ __forceinline__ cx<T> conj(cx<T> z) { return mk(z.re, -z.im); }
template <class T> __device__ __forceinline__ T arg(cx<T> z) { return ::atan2(z.im, z.re); }
template <class T> __device__ __forceinline__ cx<T> square(cx<T> z) { return mul(z, z); }
template <class T> __device__ __forceinline__ cx<T> cube(cx<T> z) { return mul(mul(z, z), z); }
template <class T> __device__ __forceinline__ cx<T> inverse(cx<T> z) { return div(mk(T(1), T(0)), z); }
template <class T> __device__ __forceinline__ T infinity();
template <> __device__ __forceinline__ float infinity<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double infinity<double>() { return __longlong_as_double(0x7ff0000000000000ll); }
template <class T> __device__ __forceinline__ T quiet_nan();
template <> __device__ __forceinline__ float quiet_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double quiet_nan<double>() { return __longlong_as_double(0x7ff8000000000000ll); }

// sqrt, rsqrt and log as Eigen's complex_sqrt, complex_rsqrt and complex_log.
template <class T> __device__ __forceinline__ cx<T> sqrt(cx<T> z) {
  const T x = z.re, y = z.im;
  const T w = ::sqrt(T(0.5) * (fabs(x) + ::hypot(x, y)));
  if (isinf(y)) return mk(infinity<T>(), y);
  if (x == T(0)) return mk(w, y < T(0) ? -w : w);
  if (x > T(0)) return mk(w, y / (2 * w));
  return mk(fabs(y) / (2 * w), y < T(0) ? -w : w);
}
template <class T> __device__ __forceinline__ cx<T> rsqrt(cx<T> z) {
  const T x = z.re, y = z.im;
  const T abs_z = ::hypot(x, y);
  const T w = ::sqrt(T(0.5) * (fabs(x) + abs_z));
  const T woz = w / abs_z;
  if (abs_z == T(0)) return mk(infinity<T>(), quiet_nan<T>());
  if (isinf(x) || isinf(y)) return mk(T(0), T(0));
  if (x == T(0)) return mk(woz, y < T(0) ? woz : -woz);
  if (x > T(0)) return mk(woz, -y / (2 * w * abs_z));
  return mk(fabs(y) / (2 * w * abs_z), y < T(0) ? woz : -woz);
}
// exp with C's special values where they are cheap: a real argument stays
// real (exp(inf + 0i) = inf + 0i), and exp(-inf + i y) is 0 for any y.
// e^a f where e^a overflows and the product may not: (e^(a/2) f) e^(a/2).
template <class T> __device__ __forceinline__ T exp_times(T a, T f) {
  const T h = ::exp(a / T(2));
  return (h * f) * h;
}
// cosh(x) f and sinh(x) f, finite wherever the product is: past the
// overflow of cosh and sinh (|x| > 88.7 in float), both are e^|x| / 2 to
// the last bit. (The host's complex functions scale the same way; plain
// products gave infinities for values up to 2x below the largest float.)
template <class T> __device__ __forceinline__ T cosh_times(T x, T f) {
  const T c = ::cosh(x);
  return isinf(c) && isfinite(x) ? exp_times(fabs(x), f / T(2)) : c * f;
}
template <class T> __device__ __forceinline__ T sinh_times(T x, T f) {
  const T s = ::sinh(x);
  return isinf(s) && isfinite(x) ? copysign(T(1), x) * exp_times(fabs(x), f / T(2)) : s * f;
}
template <class T> __device__ __forceinline__ cx<T> exp(cx<T> z) {
  if (z.im == T(0)) return mk(::exp(z.re), z.im);
  if (isinf(z.re) && z.re < T(0)) return mk(T(0), isfinite(z.im) ? copysign(T(0), z.im) : T(0));
  const T e = ::exp(z.re);
  if (isinf(e) && isfinite(z.re)) return mk(exp_times(z.re, ::cos(z.im)), exp_times(z.re, ::sin(z.im)));
  return mk(e * ::cos(z.im), e * ::sin(z.im));
}
template <class T> __device__ __forceinline__ cx<T> log(cx<T> z) { return mk(::log(::hypot(z.re, z.im)), ::atan2(z.im, z.re)); }
// expm1 as Eigen's: expm1(x) + exp(x) (cos y - 1) + i exp(x) sin y.
template <class T> __device__ __forceinline__ cx<T> expm1(cx<T> z) {
  const T erm1 = ::expm1(z.re), er = erm1 + T(1);
  T sin2 = ::sin(z.im / T(2));
  sin2 = sin2 * sin2;
  return mk(erm1 - T(2) * er * sin2, er * ::sin(z.im));
}
// log1p as Eigen's fallback: x * (log(1 + x) / ((1 + x) - 1)), or x itself
// where 1 + x rounds to 1 or the logarithm is infinite.
template <class T> __device__ __forceinline__ cx<T> log1p(cx<T> z) {
  const cx<T> x1p = add(T(1), z);
  const cx<T> l = log(x1p);
  const bool is_small = x1p.re == T(1) && x1p.im == T(0);
  const bool is_inf = x1p.re == l.re && x1p.im == l.im;
  return (is_small || is_inf) ? z : mul(z, div(l, sub(x1p, T(1))));
}
// The principal square root with C's sign rule on the cut (the sign of a
// zero imaginary part chooses the side), for the inverse functions below.
template <class T> __device__ __forceinline__ cx<T> sqrt_signed(cx<T> z) {
  const T x = z.re, y = z.im;
  const T w = ::sqrt(T(0.5) * (fabs(x) + ::hypot(x, y)));
  if (isinf(y)) return mk(infinity<T>(), y);
  if (x >= T(0)) return mk(w, w == T(0) ? y : y / (2 * w));
  return mk(fabs(y) / (2 * w), copysign(w, y));
}
// The inverse trigonometric functions. asin and acos by Kahan's formulas
// ("Branch cuts for complex elementary functions", 1987), from s = sqrt(1 - z)
// and t = sqrt(1 + z):
//   asin z = atan2(x, Re(s t)) + i asinh(Im(conj(s) t)),
//   acos z = 2 atan2(Re s, Re t) + i asinh(Im(conj(t) s)).
// Nothing in them cancels: the logarithmic form asin z = -i log(iz +
// sqrt(1 - z^2)) adds two nearly opposite values in half the plane (the
// upper half, and the real axis beyond 1) and there loses every digit for
// large |z|, and acos z = pi/2 - asin z loses the real part near z = 1. The
// logarithmic forms stay for non-finite arguments (C's special values). On
// the cuts the sign of a zero imaginary part picks the side, as in C (1 - z
// keeps it, negated). On the real axis (inside the functions' real domain)
// and on the imaginary axis they are the real functions, with C's signed
// zeros: the general forms would leave a rounding residue there whose sign a
// later function on a cut would turn into a sign of the result.
template <class T> __device__ __forceinline__ cx<T> one_minus_square(cx<T> z) {
  return mk((T(1) - z.re) * (T(1) + z.re) + z.im * z.im, T(-2) * z.re * z.im);
}
template <class T> __device__ __forceinline__ cx<T> asin(cx<T> z) {
  if (z.im == T(0) && fabs(z.re) <= T(1)) return mk(::asin(z.re), z.im);
  if (z.re == T(0)) return mk(z.re, ::asinh(z.im));
  if (!isfinite(z.re) || !isfinite(z.im)) {
    const cx<T> iz = mk(-z.im, z.re);
    const cx<T> l = log(add(iz, sqrt_signed(one_minus_square(z))));
    return mk(l.im, -l.re);
  }
  const cx<T> s = sqrt_signed(mk(T(1) - z.re, -z.im)), t = sqrt_signed(mk(T(1) + z.re, z.im));
  return mk(::atan2(z.re, s.re * t.re - s.im * t.im), ::asinh(s.re * t.im - s.im * t.re));
}
template <class T> __device__ __forceinline__ cx<T> acos(cx<T> z) {
  if (z.im == T(0) && fabs(z.re) <= T(1)) return mk(::acos(z.re), -z.im);
  if (!isfinite(z.re) || !isfinite(z.im)) {
    const cx<T> a = asin(z);
    return mk(T(1.57079632679489661923) - a.re, -a.im);
  }
  const cx<T> s = sqrt_signed(mk(T(1) - z.re, -z.im)), t = sqrt_signed(mk(T(1) + z.re, z.im));
  return mk(T(2) * ::atan2(s.re, t.re), ::asinh(t.re * s.im - t.im * s.re));
}
// atan z = -i atanh(iz), and atanh w (w = a + ib) by its parts:
//   Re = log(((1 + a)^2 + b^2) / ((1 - a)^2 + b^2)) / 4, through log1p(4a /
//   ((1 - a)^2 + b^2)) where that argument is small (near w = 0, where the
//   ratio is near 1), and Im = atan2(2b, (1 - a)(1 + a) - b^2) / 2:
// accurate near 0 and near the branch points +-i, where the logarithmic form
// (i/2) (log(1 - iz) - log(1 + iz)) subtracts nearly equal logarithms (0.9 %
// off in float at |z| = 3e-6).
template <class T> __device__ __forceinline__ cx<T> atan(cx<T> z) {
  if (z.im == T(0)) return mk(::atan(z.re), z.im);
  if (z.re == T(0) && fabs(z.im) < T(1)) return mk(z.re, ::atanh(z.im));
  if (!isfinite(z.re) || !isfinite(z.im)) {
    const cx<T> iz = mk(-z.im, z.re);
    const cx<T> d = sub(log(sub(T(1), iz)), log(add(T(1), iz)));
    return mk(-d.im / T(2), d.re / T(2));
  }
  const T a = -z.im, b = z.re;
  const T below = (T(1) - a) * (T(1) - a) + b * b;
  const T v = T(4) * a / below;
  const T re = fabs(v) < T(0.5) ? ::log1p(v) / T(4) : ::log(((T(1) + a) * (T(1) + a) + b * b) / below) / T(4);
  const T im = ::atan2(T(2) * b, (T(1) - a) * (T(1) + a) - b * b) / T(2);
  return mk(im, -re);
}
template <class T> __device__ __forceinline__ cx<T> log10(cx<T> z) {
  const cx<T> l = log(z);
  const T ln10 = T(2.30258509299404568402);
  return mk(l.re / ln10, l.im / ln10);
}
template <class T> __device__ __forceinline__ cx<T> sin(cx<T> z) {
  return mk(cosh_times(z.im, ::sin(z.re)), sinh_times(z.im, ::cos(z.re)));
}
template <class T> __device__ __forceinline__ cx<T> cos(cx<T> z) {
  return mk(cosh_times(z.im, ::cos(z.re)), -sinh_times(z.im, ::sin(z.re)));
}
template <class T> __device__ __forceinline__ cx<T> sinh(cx<T> z) {
  return mk(sinh_times(z.re, ::cos(z.im)), cosh_times(z.re, ::sin(z.im)));
}
template <class T> __device__ __forceinline__ cx<T> cosh(cx<T> z) {
  return mk(cosh_times(z.re, ::cos(z.im)), sinh_times(z.re, ::sin(z.im)));
}
// tanh by Kahan's formula: with t = tan y, s = sinh x, b = 1 + t^2,
// tanh(x + iy) = (b s sqrt(1 + s^2) + i t) / (1 + b s^2), accurate near the
// poles of tan y; for |x| > 20 the value is sign(x) + 0i to the last bit.
template <class T> __device__ __forceinline__ cx<T> tanh(cx<T> z) {
  if (fabs(z.re) > T(20)) return mk(copysign(T(1), z.re), copysign(T(0), ::sin(T(2) * z.im)));
  const T t = ::tan(z.im), s = ::sinh(z.re);
  const T b = T(1) + t * t, d = T(1) + b * s * s;
  return mk(b * s * ::sqrt(T(1) + s * s) / d, t / d);
}
// tan(z) = -i tanh(iz).
template <class T> __device__ __forceinline__ cx<T> tan(cx<T> z) {
  const cx<T> t = tanh(mk(-z.im, z.re));
  return mk(t.im, -t.re);
}
template <class T> __device__ __forceinline__ cx<T> pow(cx<T> x, cx<T> y) { return exp(mul(y, log(x))); }
template <class T> __device__ __forceinline__ bool eq(cx<T> x, cx<T> y) { return x.re == y.re && x.im == y.im; }
template <class T> __device__ __forceinline__ bool ne(cx<T> x, cx<T> y) { return !eq(x, y); }

// ---- booleans ---------------------------------------------------------------------------
__device__ __forceinline__ bool logical_not(bool x) { return !x; }
__device__ __forceinline__ bool logical_and(bool x, bool y) { return x && y; }
__device__ __forceinline__ bool logical_or(bool x, bool y) { return x || y; }
template <class T> __device__ __forceinline__ T select(bool c, T x, T y) { return c ? x : y; }

// ---- loads, stores, constants -----------------------------------------------------------
// Element k of a leaf or of the destination. Complex values move as one
// 8- or 16-byte access where the executor found them aligned (the usual
// case), else as two scalars.
template <class T> struct access {
  __device__ static T load(const void* p, long long k) { return __ldg(static_cast<const T*>(p) + k); }
  __device__ static void store(void* p, long long k, T v) { static_cast<T*>(p)[k] = v; }
};
template <> struct access<bool> {  // never a leaf or a destination; here for completeness
  __device__ static bool load(const void* p, long long k) { return static_cast<const bool*>(p)[k]; }
};
template <class T, class V> struct complex_access {
  __device__ static cx<T> load(const void* p, long long k) {
    const V v = __ldg(static_cast<const V*>(p) + k);
    return mk(v.x, v.y);
  }
  __device__ static void store(void* p, long long k, cx<T> z) {
    V v;
    v.x = z.re;
    v.y = z.im;
    static_cast<V*>(p)[k] = v;
  }
};
template <> struct access<c32> : complex_access<float, float2> {};
template <> struct access<c64> : complex_access<double, double2> {};
template <class T> __device__ __forceinline__ T load(const void* p, long long k) { return access<T>::load(p, k); }
template <class T> __device__ __forceinline__ void store(void* p, long long k, T v) { access<T>::store(p, k, v); }
// Complex values at addresses not aligned to their size.
template <class T> __device__ __forceinline__ T load_parts(const void* p, long long k) {
  const auto* r = static_cast<const decltype(T().re)*>(p) + 2 * k;
  return mk(__ldg(r), __ldg(r + 1));
}
template <class T> __device__ __forceinline__ void store_parts(void* p, long long k, T v) {
  auto* r = static_cast<decltype(T().re)*>(p) + 2 * k;
  r[0] = v.re;
  r[1] = v.im;
}

// V consecutive elements as one access (the executor checked the alignment).
template <class T, int V> struct __align__(sizeof(T) * V) pack {
  T v[V];
};
// Plain loads and stores: on the H100, streaming hints (ld/st .cs) cost 3 to
// 6 % of the bandwidth here (bench/RESULTS.md).
template <class T, int V> __device__ __forceinline__ pack<T, V> load_pack(const void* p, long long k) {
  return static_cast<const pack<T, V>*>(p)[k / V];
}
// The V elements from element k on, whose address the caller found aligned
// to the pack (k need not be a multiple of V).
template <class T, int V> __device__ __forceinline__ pack<T, V> load_pack_at(const void* p, long long k) {
  return *reinterpret_cast<const pack<T, V>*>(static_cast<const T*>(p) + k);
}
template <class T, int V> __device__ __forceinline__ void store_pack(void* p, long long k, const pack<T, V>& v) {
  static_cast<pack<T, V>*>(p)[k / V] = v;
}

template <class T> __device__ __forceinline__ T constant(egpu_ew_constant c) { return static_cast<T>(c.re); }
template <> __device__ __forceinline__ c32 constant<c32>(egpu_ew_constant c) { return mk(float(c.re), float(c.im)); }
template <> __device__ __forceinline__ c64 constant<c64>(egpu_ew_constant c) { return mk(c.re, c.im); }

}  // namespace ew
