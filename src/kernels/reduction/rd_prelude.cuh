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

// Programmatic dependent launch (compute capability 9.0 on): the fold and
// the finish are launched while the kernel before them runs; they wait here
// until it has finished and its writes are visible. A first pass lets them
// be launched as soon as its last blocks have started.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void let_next_kernel_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Loads a thread issues before combining them, in both first passes. On an
// H100 (egpu-bench reduce, 2^28 values and 16384^2 matrices), 8 or 16 per
// thread read no faster in the inner pass and more slowly in the outer one
// (f32 column sums of row-major data: 0.97 of the copy rate with 4, 0.93
// with 8, 0.90 with 16).
const int kInFlight = 4;

// The reduced direction contiguous: a block per (value, stretch); its
// threads take every kThreads-th position, U loads in flight at a time.
template <class Acc, class Value, bool NeedsIJ>
__device__ void inner(const egpu_ew_params& p, const egpu_rd_pass& r) {
  typedef typename Value::type V;
  const int U = kInFlight;
  let_next_kernel_launch();
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
    if (threadIdx.x == 0) partials[k * r.value_step + s * r.segment_step] = a;
  }
}

// The same when every leaf is linear (Value::pack values per read): thread
// t takes the groups of pack neighbouring positions t, t + kThreads, ... of
// its stretch (whose length the host makes a multiple of kThreads * pack),
// U groups in flight, each leaf read as one pack where the stretch is
// aligned for it and value by value where not (the same additions in the
// same order either way); a last, shorter group goes to the thread whose
// turn it is. A warp reads 512 bytes per load, as cub::DeviceReduce does.
template <class Acc, class Value>
__device__ void inner_packed(const egpu_ew_params& p, const egpu_rd_pass& r) {
  typedef typename Value::type V;
  const int U = kInFlight, G = Value::pack;
  let_next_kernel_launch();
  Acc* partials = static_cast<Acc*>(r.partials);
  const long long blocks = r.values * r.segments;
  for (long long b = blockIdx.x; b < blocks; b += gridDim.x) {
    const long long k = b / r.segments, s = b - k * r.segments;
    const long long lo = k * r.length + s * r.segment;
    const long long hi = k * r.length + min(r.length, (s + 1) * r.segment);
    const bool whole_packs = Value::aligned(p, lo);
    const long long groups = (hi - lo) / G;
    Acc a = Acc::identity();
    long long q = threadIdx.x;
    for (; q + (U - 1) * kThreads < groups; q += U * kThreads) {
      V x[U][G];
      if (whole_packs) {
#pragma unroll
        for (int u = 0; u < U; ++u) Value::at_pack(p, lo + (q + u * kThreads) * G, x[u]);
      } else {
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int e = 0; e < G; ++e) x[u][e] = Value::at(p, lo + (q + u * kThreads) * G + e, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int e = 0; e < G; ++e) a.add(x[u][e]);
    }
    for (; q < groups; q += kThreads) {
      V x[G];
      if (whole_packs) {
        Value::at_pack(p, lo + q * G, x);
      } else {
#pragma unroll
        for (int e = 0; e < G; ++e) x[e] = Value::at(p, lo + q * G + e, 0, 0);
      }
#pragma unroll
      for (int e = 0; e < G; ++e) a.add(x[e]);
    }
    if (q == groups)
      for (long long n = lo + groups * G; n < hi; ++n) a.add(Value::at(p, n, 0, 0));
    a = block_combine(a);
    if (threadIdx.x == 0) partials[k * r.value_step + s * r.segment_step] = a;
  }
}

// The reduced direction strided: a thread per (value, stretch), neighbouring
// threads on neighbouring values (contiguous loads), U loads in flight;
// neighbouring threads' partials side by side (segment_step = values), so
// that the fold reads them as the pass wrote them, a warp at a time.
template <class Acc, class Value, bool NeedsIJ>
__device__ void outer(const egpu_ew_params& p, const egpu_rd_pass& r) {
  typedef typename Value::type V;
  const int U = kInFlight;
  let_next_kernel_launch();
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
    partials[k * r.value_step + s * r.segment_step] = a;
  }
}

template <class R> __device__ __forceinline__ R finished(R v, const egpu_rd_finish& r) {
  if (r.finish == 1) return ew::sqrt(v);
  if (r.finish == 2) return ew::div(v, ew::constant<R>(r.divisor));
  return v;
}
__device__ __forceinline__ long long finished(long long v, const egpu_rd_finish&) { return v; }

// acc[first + k] = a, or merged after what is there; the last fold also
// writes the finished result.
template <class Acc, class R> __device__ __forceinline__ void deposit(const egpu_rd_fold& r, long long k, Acc a) {
  Acc* acc = static_cast<Acc*>(r.acc);
  if (!r.fresh) {
    Acc before = acc[r.first + k];
    before.merge(a);
    a = before;
  }
  acc[r.first + k] = a;
  if (r.last.out != 0) static_cast<R*>(r.last.out)[r.first + k] = finished(a.result(), r.last);
}

// A thread per value (the host's choice for few partials per value, or
// partials that neighbouring values keep side by side) or a block per
// value (threads over every kThreads-th partial, then the block's tree).
// Partials are read several at a time before they are merged in order
// (eight by a thread that folds a value alone, four by each thread of a
// block): the fold is on the critical path of every reduction, and its
// loads are what it waits for.
template <class Acc, class R> __device__ void fold(const egpu_rd_fold& r) {
  wait_for_previous_kernel();
  let_next_kernel_launch();
  const Acc* partials = static_cast<const Acc*>(r.partials);
  const long long step = r.segment_step;
  if (r.per_thread) {
    const int U = 8;
    for (long long k = (long long)blockIdx.x * kThreads + threadIdx.x; k < r.values;
         k += (long long)gridDim.x * kThreads) {
      const Acc* q = partials + k * r.value_step;
      Acc a = q[0];
      long long s = 1;
      for (; s + U <= r.segments; s += U) {
        Acc x[U];
#pragma unroll
        for (int u = 0; u < U; ++u) x[u] = q[(s + u) * step];
#pragma unroll
        for (int u = 0; u < U; ++u) a.merge(x[u]);
      }
      for (; s < r.segments; ++s) a.merge(q[s * step]);
      deposit<Acc, R>(r, k, a);
    }
    return;
  }
  const int U = 4;
  for (long long k = blockIdx.x; k < r.values; k += gridDim.x) {
    const Acc* q = partials + k * r.value_step;
    Acc a = Acc::identity();
    long long s = threadIdx.x;
    for (; s + (U - 1) * kThreads < r.segments; s += U * kThreads) {
      Acc x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = q[(s + u * kThreads) * step];
#pragma unroll
      for (int u = 0; u < U; ++u) a.merge(x[u]);
    }
    for (; s < r.segments; s += kThreads) a.merge(q[s * step]);
    a = block_combine(a);
    if (threadIdx.x == 0) deposit<Acc, R>(r, k, a);
  }
}

template <class Acc, class R> __device__ void finish(const egpu_rd_finish& r) {
  wait_for_previous_kernel();
  const Acc* acc = static_cast<const Acc*>(r.acc);
  R* out = static_cast<R*>(r.out);
  for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < r.count;
       k += (long long)gridDim.x * blockDim.x)
    out[k] = finished(acc[k].result(), r);
}

}  // namespace rd
