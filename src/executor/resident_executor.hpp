// Calls that read or write device memory (DeviceMatrix data): the whole
// call runs on the device, queued on the calling thread's stream. Host
// operands go up first into device temporaries (each distinct one once, a
// broadcast vector as a vector); a host destination is computed in a device
// temporary and comes down at the end, the one place such a call waits. A
// call whose destination is on the device returns once its work is queued
// and its host operands have been read.
#pragma once

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/detail/reduction.hpp"
#include "egpu/options.hpp"

namespace egpu::executor {

// Whether any operand, leaf or the destination of the call is device memory.
bool touches_device(const detail::GemmDesc& desc);
bool touches_device(const detail::ElementwiseProgram& program, const detail::MatrixDesc* out);

// desc validated; any k (k == 0: C = beta C, or zeros).
void run_resident_gemm(const detail::GemmDesc& desc, const Options& options);
// As run_elementwise, with leaves and out in host or device memory.
void run_resident_elementwise(const detail::ElementwiseProgram& program, const detail::MatrixDesc& out,
                              detail::ScalarKind out_scalar, bool accumulates, const Options& options);
// As run_reduction; the values land at `result` in host memory (waits), or
// in device memory when result_on_device (queued).
void run_resident_reduction(const detail::ElementwiseProgram& program, const detail::Reduction& reduction,
                            void* result, const Options& options, bool result_on_device);

}  // namespace egpu::executor
