// Copies between strided host memory (the user's Eigen object) and dense
// device tiles through the thread's two pinned slots: while one slot's
// DMA runs, the host packs or unpacks the other.
#pragma once

#include <cuda_runtime.h>

#include "executor/host_matrix.hpp"
#include "runtime/context.hpp"

namespace egpu::executor {

// Queues the upload of `src` into `dst` (shape from dense_shape) on the
// context's stream; conjugates on the way when `conjugate` is set. Returns
// once every element is in a pinned slot or on the device.
template <class T>
void upload(const HostMatrix<T>& src, const DenseShape& shape, bool conjugate, T* dst, runtime::Context& ctx);

// Copies the dense device tile `src` into `dst`, waiting for the work
// queued before it on the context's stream.
template <class T>
void download(const T* src, const DenseShape& shape, const HostMatrix<T>& dst, runtime::Context& ctx);

}  // namespace egpu::executor
