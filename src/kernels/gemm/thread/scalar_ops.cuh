// Scalar operations of the GEMM family for real and complex T: zero,
// conjugate, add, multiply, multiply-add (4 FMAs for complex), and Pack<T, N>,
// an aligned group of N elements moved by one vector load/store.
#pragma once

#include "common/complex.hpp"

namespace egpu::kernels::thread {

template <class T> __device__ __forceinline__ T zero() { return T(0); }
template <> __device__ __forceinline__ cfloat zero<cfloat>() { return {0.f, 0.f}; }
template <> __device__ __forceinline__ cdouble zero<cdouble>() { return {0.0, 0.0}; }

// conj only where asked (run-time flag; a no-op for real T).
template <class T> __device__ __forceinline__ T conj_if(T x, bool) { return x; }
template <class R> __device__ __forceinline__ Complex<R> conj_if(Complex<R> x, bool c) {
  if (c) x.im = -x.im;
  return x;
}

// acc + a * b
template <class T> __device__ __forceinline__ T madd(T a, T b, T acc) { return fma(a, b, acc); }
template <class R>
__device__ __forceinline__ Complex<R> madd(Complex<R> a, Complex<R> b, Complex<R> acc) {
  acc.re = fma(a.re, b.re, acc.re);
  acc.re = fma(-a.im, b.im, acc.re);
  acc.im = fma(a.re, b.im, acc.im);
  acc.im = fma(a.im, b.re, acc.im);
  return acc;
}

template <class T> __device__ __forceinline__ T add(T a, T b) { return a + b; }
template <class R> __device__ __forceinline__ Complex<R> add(Complex<R> a, Complex<R> b) {
  return {a.re + b.re, a.im + b.im};
}

template <class T> __device__ __forceinline__ T mul(T a, T b) { return a * b; }
template <class R> __device__ __forceinline__ Complex<R> mul(Complex<R> a, Complex<R> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

// N elements moved as one access of N * sizeof(T) bytes (<= 16).
template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

}  // namespace egpu::kernels::thread
