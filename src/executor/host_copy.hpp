// Copies between the user's memory and the pinned staging slots, whose
// destination no core reads soon: a slot is read next by DMA, and results
// put into a large Eigen object are not read by this call at all. Ordinary
// stores first read each destination line into the copying core's cache
// and leave it dirty there, where DMA must then fetch it; non-temporal
// stores write memory directly. Measured on a lent H200 host (16 cores):
// pageable uploads of 2048 x 1024 double pieces in chunks of 2 MiB ran at
// 21 GB/s with memcpy and 45 GB/s with these stores.
#pragma once

#include <cstddef>

namespace egpu::executor {

// Copies `bytes` from src to dst with non-temporal stores where the
// processor has them (x86-64), else memcpy. The stores are ordered only by
// fence_stream_copies().
void stream_copy(void* dst, const void* src, std::size_t bytes);

// Orders every stream_copy of this thread before what the thread does
// next (handing the bytes to DMA, or to another thread). Call it once after
// a thread's copies.
void fence_stream_copies();

}  // namespace egpu::executor
