// Reductions of coefficient-wise programs whose leaves are in device
// memory. One generated source per program and reduction (kernels/reduction)
// holds the kernels: a first pass that evaluates the program and combines
// stretches of values into partials, a fold that combines each result's
// partials in order into an accumulator that may already hold earlier
// chunks, and a finish that turns the accumulators into the results.
// Every combination runs in an order fixed by the shape: the same input on
// the same device gives the same bits.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "egpu/detail/reduction.hpp"
#include "runtime/context.hpp"
#include "runtime/device_buffer.hpp"

namespace egpu::backend {

// The reduction of one program over pieces of it, all with the program's
// operations and its leaves' types (the chunks of a pipeline, or the whole
// program at once). The program comes oriented (kernels::to_leaf_order):
// each_column reduces down contiguous columns, each_row across them.
class DeviceReduction {
 public:
  // `count`: the reduced values of the whole program (1, cols or rows).
  // `spare`: accumulators beyond `count` the first pass may use to split
  // long stretches among more blocks (spare_for_speed() is enough for the
  // device's full speed; fewer only splits less). Allocates the
  // accumulators on `stream`.
  DeviceReduction(const detail::ElementwiseProgram& program, const detail::Reduction& reduction,
                  std::int64_t count, std::int64_t spare, runtime::Context& ctx, cudaStream_t stream);
  ~DeviceReduction();
  DeviceReduction(const DeviceReduction&) = delete;
  DeviceReduction& operator=(const DeviceReduction&) = delete;

  // Queues the reduction of `piece` (the program's operations over device
  // leaves, piece.rows x piece.cols) into accumulators [first, first +
  // reduced values of the piece). `fresh`: these accumulators hold nothing
  // yet. Pieces folded into the same accumulators must be queued in the same
  // order every time, on one stream. `finished_into`: this is the last piece
  // of its values, whose finished results the fold also writes there (at
  // first + k, device memory of the result type), so that they need no
  // finish().
  void fold(const detail::ElementwiseProgram& piece, std::int64_t first, bool fresh, cudaStream_t stream,
            void* finished_into = nullptr);

  // Queues the results of all accumulators into `out` (device memory,
  // `count` values of the result type).
  void finish(void* out, cudaStream_t stream);

  // Bytes of one accumulator; device memory is 2 * count + spare of them.
  static std::int64_t accumulator_bytes(const detail::ElementwiseProgram& program, const detail::Reduction& reduction);
  static std::int64_t spare_for_speed(int device);

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

// The whole of a device-resident program at once (at least one element;
// oriented here, any layout): the reduced_count results, of the program's
// value type or std::int64_t for count (detail/reduction.hpp), land in
// `out`, device memory, on `stream`.
void device_reduce(detail::ElementwiseProgram program, const detail::Reduction& reduction, void* out,
                   runtime::Context& ctx, cudaStream_t stream);

}  // namespace egpu::backend
