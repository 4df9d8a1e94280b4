// The device side of every generated reduction kernel, compiled by NVRTC
// after ew_params.h, ew_prelude.cuh and rd_params.h (it includes nothing).
// A generated source defines the value function of its program and
// instantiates the passes below with one accumulator type.
//
// Every combination happens in an order fixed by the shape and the launch
// configuration (which depends only on the shape and the device): each
// thread combines its values in index order, a block combines its threads
// by a fixed tree, the fold combines partials in index order. No atomics, so
// the same input gives the same bits.

namespace rd {

// ---- accumulators ---------------------------------------------------------------
// Each has identity(), add(value) (the next value in order), merge(other)
// (everything `other` combined, coming after this) and result().

// A compensated sum: hi + lo, where lo gathers the rounding error of every
// addition into hi (TwoSum, exact for any magnitudes). Once hi is infinite or
// NaN, lo means nothing and the result is hi: an infinite or NaN sum stays so.
template <class T> struct sum_real {
  T hi, lo;
  __device__ static sum_real identity() { sum_real a; a.hi = T(0); a.lo = T(0); return a; }
  __device__ void add(T x) {
    const T s = hi + x;
    const T b = s - hi;
    lo += (hi - (s - b)) + (x - b);
    hi = s;
  }
  __device__ void merge(const sum_real& o) {
    add(o.hi);
    lo += o.lo;
  }
  __device__ T result() const { return isfinite(hi) ? hi + lo : hi; }
};

// Float values summed in double: each thread's running sum rounds far below
// a float's precision, and partials combine as a compensated double sum;
// the float result is the exact sum rounded (about) once. One conversion
// and one addition per value, against TwoSum's six operations.
template <> struct sum_real<float> {
  sum_real<double> d;
  __device__ static sum_real identity() { sum_real a; a.d = sum_real<double>::identity(); return a; }
  __device__ void add(float x) { d.hi += static_cast<double>(x); }
  __device__ void merge(const sum_real& o) { d.merge(o.d); }
  __device__ float result() const { return static_cast<float>(d.result()); }
};

template <class T> struct sum_complex {
  sum_real<T> re, im;
  __device__ static sum_complex identity() {
    sum_complex a;
    a.re = sum_real<T>::identity();
    a.im = sum_real<T>::identity();
    return a;
  }
  __device__ void add(ew::cx<T> x) { re.add(x.re); im.add(x.im); }
  __device__ void merge(const sum_complex& o) { re.merge(o.re); im.merge(o.im); }
  __device__ ew::cx<T> result() const { return ew::mk(re.result(), im.result()); }
};

template <class V> struct sum_of { typedef sum_real<V> type; };
template <class T> struct sum_of<ew::cx<T> > { typedef sum_complex<T> type; };

template <class V> struct product {
  V v;
  __device__ static product identity() { product a; a.v = ew::cast<V>(1.0); return a; }
  __device__ void add(V x) { v = ew::mul(v, x); }
  __device__ void merge(const product& o) { v = ew::mul(v, o.v); }
  __device__ V result() const { return v; }
};

// min (Max false) or max of real values; NaN as soon as one value is NaN.
template <class T, bool Max> struct extreme {
  T v;
  __device__ static extreme identity() { extreme a; a.v = Max ? -ew::infinity<T>() : ew::infinity<T>(); return a; }
  __device__ void add(T x) {
    if (v != v) return;
    if (x != x || (Max ? x > v : x < v)) v = x;
  }
  __device__ void merge(const extreme& o) { add(o.v); }
  __device__ T result() const { return v; }
};

__device__ __forceinline__ bool nonzero(bool b) { return b; }
__device__ __forceinline__ bool nonzero(float x) { return x != 0.0f; }
__device__ __forceinline__ bool nonzero(double x) { return x != 0.0; }
template <class T> __device__ __forceinline__ bool nonzero(ew::cx<T> z) { return z.re != T(0) || z.im != T(0); }

template <class V> struct count {
  long long c;
  __device__ static count identity() { count a; a.c = 0; return a; }
  __device__ void add(V x) { c += nonzero(x) ? 1 : 0; }
  __device__ void merge(const count& o) { c += o.c; }
  __device__ long long result() const { return c; }
};

// ---- the passes ------------------------------------------------------------------
const int kThreads = 256;

// Thread 0 gets the block's threads combined by a fixed tree.
template <class Acc> __device__ Acc block_combine(Acc a) {
  __shared__ Acc s[kThreads];
  s[threadIdx.x] = a;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) s[threadIdx.x].merge(s[threadIdx.x + w]);
    __syncthreads();
  }
  const Acc all = s[0];
  __syncthreads();  // before the array is written again
  return all;
}

// The value of element n (or i, j) of the piece.
template <class Value, bool NeedsIJ>
__device__ __forceinline__ typename Value::type at(const egpu_ew_params& p, long long n, long long rows) {
  long long i = 0, j = 0;
  if (NeedsIJ) {
    j = n / rows;
    i = n - j * rows;
  }
  return Value::at(p, n, i, j);
}

// Loads a thread issues before combining them. Four: on an H100, eight or
// sixteen floats per thread read more slowly (the first pass reached 0.92
// and 0.82 of the copy rate against 0.95 and 0.90 with four).
const int kInFlight = 4;

// The reduced direction contiguous: a block per (value, stretch); its
// threads take every kThreads-th position, U loads in flight at a time.
template <class Acc, class Value, bool NeedsIJ>
__device__ void inner(const egpu_ew_params& p, const egpu_rd_pass& r) {
  typedef typename Value::type V;
  const int U = kInFlight;
  Acc* partials = static_cast<Acc*>(r.partials);
  const long long blocks = r.values * r.segments;
  for (long long b = blockIdx.x; b < blocks; b += gridDim.x) {
    const long long k = b / r.segments, s = b - k * r.segments;
    const long long base = k * r.length;
    const long long end = base + min(r.length, (s + 1) * r.segment);
    Acc a = Acc::identity();
    long long n = base + s * r.segment + threadIdx.x;
    for (; n + (U - 1) * kThreads < end; n += U * kThreads) {
      V x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = at<Value, NeedsIJ>(p, n + u * kThreads, r.rows);
#pragma unroll
      for (int u = 0; u < U; ++u) a.add(x[u]);
    }
    for (; n < end; n += kThreads) a.add(at<Value, NeedsIJ>(p, n, r.rows));
    a = block_combine(a);
    if (threadIdx.x == 0) partials[b] = a;
  }
}

// The reduced direction strided: a thread per (value, stretch), neighbouring
// threads on neighbouring values (contiguous loads), U loads in flight.
template <class Acc, class Value, bool NeedsIJ>
__device__ void outer(const egpu_ew_params& p, const egpu_rd_pass& r) {
  typedef typename Value::type V;
  const int U = kInFlight;
  Acc* partials = static_cast<Acc*>(r.partials);
  const long long per_stretch = (r.values + kThreads - 1) / kThreads;
  const long long blocks = per_stretch * r.segments;
  for (long long b = blockIdx.x; b < blocks; b += gridDim.x) {
    const long long s = b / per_stretch;
    const long long k = (b - s * per_stretch) * kThreads + threadIdx.x;
    if (k >= r.values) continue;
    const long long end = min(r.length, (s + 1) * r.segment);
    Acc a = Acc::identity();
    long long l = s * r.segment;
    for (; l + U - 1 < end; l += U) {
      V x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = at<Value, NeedsIJ>(p, k + (l + u) * r.rows, r.rows);
#pragma unroll
      for (int u = 0; u < U; ++u) a.add(x[u]);
    }
    for (; l < end; ++l) a.add(at<Value, NeedsIJ>(p, k + l * r.rows, r.rows));
    partials[k * r.segments + s] = a;
  }
}

// Few partials per value: a thread per value. Many: a block per value,
// threads over every kThreads-th partial, then the block's tree.
template <class Acc> __device__ void fold(const egpu_rd_fold& r) {
  const Acc* partials = static_cast<const Acc*>(r.partials);
  Acc* acc = static_cast<Acc*>(r.acc);
  if (r.segments <= 32) {
    for (long long k = (long long)blockIdx.x * kThreads + threadIdx.x; k < r.values;
         k += (long long)gridDim.x * kThreads) {
      Acc a = partials[k * r.segments];
      for (long long s = 1; s < r.segments; ++s) a.merge(partials[k * r.segments + s]);
      if (r.fresh) {
        acc[r.first + k] = a;
      } else {
        acc[r.first + k].merge(a);
      }
    }
    return;
  }
  for (long long k = blockIdx.x; k < r.values; k += gridDim.x) {
    Acc a = Acc::identity();
    for (long long s = threadIdx.x; s < r.segments; s += kThreads) a.merge(partials[k * r.segments + s]);
    a = block_combine(a);
    if (threadIdx.x == 0) {
      if (r.fresh) {
        acc[r.first + k] = a;
      } else {
        acc[r.first + k].merge(a);
      }
    }
  }
}

template <class R> __device__ __forceinline__ R finished(R v, const egpu_rd_finish& r) {
  if (r.finish == 1) return ew::sqrt(v);
  if (r.finish == 2) return ew::div(v, ew::constant<R>(r.divisor));
  return v;
}
__device__ __forceinline__ long long finished(long long v, const egpu_rd_finish&) { return v; }

template <class Acc, class R> __device__ void finish(const egpu_rd_finish& r) {
  const Acc* acc = static_cast<const Acc*>(r.acc);
  R* out = static_cast<R*>(r.out);
  for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < r.count;
       k += (long long)gridDim.x * blockDim.x)
    out[k] = finished(acc[k].result(), r);
}

}  // namespace rd
