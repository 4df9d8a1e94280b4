// A complex number usable in host and device code, layout-compatible with
// std::complex<T> (two T, real first) so that buffers pass between the two
// without conversion. Kernels use it instead of std::complex, whose
// operators are not device functions, and instead of cuda::std::complex,
// whose multiplication carries C99 Annex G inf/NaN recovery branches.
#pragma once

#if defined(__CUDACC__)
#define EGPU_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define EGPU_HOST_DEVICE inline
#endif

namespace egpu::kernels {

template <class T>
struct alignas(2 * sizeof(T)) Complex {
  T re, im;
};

using cfloat = Complex<float>;
using cdouble = Complex<double>;

template <class T> struct real_of { using type = T; };
template <class T> struct real_of<Complex<T>> { using type = T; };
template <class T> using real_of_t = typename real_of<T>::type;

template <class T> struct is_complex { static constexpr bool value = false; };
template <class T> struct is_complex<Complex<T>> { static constexpr bool value = true; };

}  // namespace egpu::kernels
