// Whether host memory is pinned (page-locked and known to CUDA): such
// memory is copied by DMA; pageable memory goes through staging buffers.
#pragma once

namespace egpu::runtime {

// True when both the first and the last byte of a range are in pinned host
// memory (pointers CUDA does not know are pageable: not an error).
bool is_pinned_range(const void* first, const void* last);

}  // namespace egpu::runtime
