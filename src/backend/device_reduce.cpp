#include "backend/device_reduce.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backend/device_elementwise.hpp"
#include "egpu/error.hpp"
#include "kernels/elementwise/ew_params.h"
#include "kernels/reduction/rd_params.h"
#include "kernels/reduction/reduction_source.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/current_device.hpp"
#include "runtime/runtime_kernels.hpp"

namespace egpu::backend {

namespace {

using detail::ElementwiseProgram;
using detail::ReduceAxis;

constexpr std::int64_t kThreads = 256;
// First-pass blocks to aim for per SM: two full waves of 256-thread blocks
// (8 fill an SM), so that the memory sees enough loads in flight.
// (8, 32 or 64 per SM read 2^28 floats no faster on an H100.)
constexpr std::int64_t kBlocksPerSm = 16;
// A block of the inner pass takes at least this many values, a thread of
// the outer pass this many: below that, partials cost more than they save.
constexpr std::int64_t kMinInnerStretch = 2048;
constexpr std::int64_t kMinOuterStretch = 16;
// The fold takes a value per thread up to this many partials per value (a
// block per value beyond): the thread merges them one after another.
constexpr std::int64_t kMostPartialsPerThread = 64;
// Grids are capped; every pass loops over its blocks.
constexpr std::int64_t kMaxGrid = std::int64_t(1) << 30;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// How the first pass cuts a piece. The cut depends only on the piece's shape
// and the device's SM count, so that the same input gives the same bits.
struct Cut {
  bool inner = true;
  egpu_rd_pass pass{};
  std::int64_t blocks = 0;
};

// `capacity`: partials the pass may write (at least the piece's values);
// `pack`: values the inner pass reads at once (its stretches are whole
// rounds of the block's packs).
Cut cut(std::int64_t rows, std::int64_t cols, ReduceAxis axis, int sms, std::int64_t capacity, int pack) {
  Cut c;
  const std::int64_t target = std::int64_t(sms) * kBlocksPerSm;
  c.inner = axis != ReduceAxis::each_row;
  egpu_rd_pass& p = c.pass;
  p.rows = rows;
  p.values = axis == ReduceAxis::all ? 1 : axis == ReduceAxis::each_column ? cols : rows;
  p.length = axis == ReduceAxis::all ? rows * cols : axis == ReduceAxis::each_column ? rows : cols;
  if (c.inner) {
    const std::int64_t s = std::max<std::int64_t>(
        1, std::min<std::int64_t>({ceil_div(target, p.values), ceil_div(p.length, kMinInnerStretch), capacity / p.values}));
    const std::int64_t round = kThreads * pack;
    p.segment = ceil_div(ceil_div(p.length, s), round) * round;
    p.segments = ceil_div(p.length, p.segment);
    p.value_step = p.segments;  // a block's partial after its value's other stretches
    p.segment_step = 1;
    c.blocks = p.values * p.segments;
  } else {
    const std::int64_t per_stretch = ceil_div(p.values, kThreads);
    const std::int64_t s = std::max<std::int64_t>(
        1, std::min<std::int64_t>({ceil_div(target, per_stretch), ceil_div(p.length, kMinOuterStretch), capacity / p.values}));
    p.segment = ceil_div(p.length, s);
    p.segments = ceil_div(p.length, p.segment);
    p.value_step = 1;  // neighbouring threads' partials side by side (coalesced)
    p.segment_step = p.values;
    c.blocks = per_stretch * p.segments;
  }
  return c;
}

// How a kernel follows the one before it in the stream.
enum class Follows { after_it, while_it_ends };

// `while_it_ends`: a programmatic dependent launch (compute capability 9.0
// on), for the fold and the finish, which wait for the kernel before them
// (rd_prelude.cuh): their launch no longer adds to the critical path.
void launch(cudaKernel_t kernel, std::int64_t blocks, void** args, Follows follows, cudaStream_t stream,
            const char* what) {
  cudaLaunchAttribute early{};
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks, kMaxGrid))));
  cfg.blockDim = dim3(static_cast<unsigned>(kThreads));
  cfg.stream = stream;
  cfg.attrs = &early;
  cfg.numAttrs = follows == Follows::while_it_ends && runtime::current_compute_major() >= 9 ? 1 : 0;
  runtime::cuda_check(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(kernel), args), what);
}

}  // namespace

struct DeviceReduction::Impl {
  runtime::Context& ctx;
  detail::Reduction reduction;
  std::int64_t count, capacity, acc_bytes;
  int sms;
  runtime::DeviceBuffer acc, partials;
  bool have_kernels = false;
  kernels::EwKernelShape shape;
  cudaKernel_t inner = nullptr, outer = nullptr, fold = nullptr, finish = nullptr;

  Impl(const ElementwiseProgram& program, const detail::Reduction& r, std::int64_t n, std::int64_t spare,
       runtime::Context& c, cudaStream_t stream)
      : ctx(c),
        reduction(r),
        count(n),
        capacity(std::max<std::int64_t>(1, n) + std::max<std::int64_t>(0, spare)),
        acc_bytes(DeviceReduction::accumulator_bytes(program, r)),
        sms(multiprocessors(c.device())),
        acc(static_cast<std::size_t>(std::max<std::int64_t>(1, n) * acc_bytes), stream),
        partials(static_cast<std::size_t>(capacity * acc_bytes), stream) {}

  egpu_rd_finish finish_params(void* out) const {
    egpu_rd_finish f{};
    f.count = count;
    f.acc = acc.get();
    f.out = out;
    // The finish codes rd_params.h documents.
    static_assert(static_cast<int>(detail::ReduceFinish::none) == 0 &&
                  static_cast<int>(detail::ReduceFinish::sqrt) == 1 &&
                  static_cast<int>(detail::ReduceFinish::divide) == 2);
    f.finish = static_cast<int>(reduction.finish);
    f.divisor = {reduction.divisor.real(), reduction.divisor.imag()};
    return f;
  }

  void find_kernels(const ElementwiseProgram& piece) {
    const kernels::EwKernelShape s = kernels::reading_shape(piece);
    if (have_kernels && s == shape) return;
    const std::vector<cudaKernel_t>& k = runtime::runtime_kernels(
        kernels::reduction_prelude(), kernels::kernel_signature(piece, s, static_cast<int>(reduction.op)),
        [&] { return kernels::reduction_kernel_source(piece, reduction, s); },
        {kernels::kReduceInnerName, kernels::kReduceOuterName, kernels::kReduceFoldName, kernels::kReduceFinishName},
        ctx.device());
    inner = k[0];
    outer = k[1];
    fold = k[2];
    finish = k[3];
    shape = s;
    have_kernels = true;
  }
};

namespace {
// The checks come before anything reads the program.
const ElementwiseProgram& checked(const ElementwiseProgram& program, const detail::Reduction& reduction) {
  detail::validate(program, reduction);
  kernels::check_limits(program);
  return program;
}
}  // namespace

DeviceReduction::DeviceReduction(const ElementwiseProgram& program, const detail::Reduction& reduction,
                                 std::int64_t count, std::int64_t spare, runtime::Context& ctx, cudaStream_t stream)
    : m(std::make_unique<Impl>(checked(program, reduction), reduction, count, spare, ctx, stream)) {}

DeviceReduction::~DeviceReduction() = default;

std::int64_t DeviceReduction::accumulator_bytes(const ElementwiseProgram& program, const detail::Reduction& reduction) {
  return kernels::accumulator_bytes(reduction.op, program.code.back().type);
}

std::int64_t DeviceReduction::spare_for_speed(int device) {
  // The outer pass's widest cut: a partial per thread of the target grid.
  return std::int64_t(multiprocessors(device)) * kBlocksPerSm * kThreads;
}

void DeviceReduction::fold(const ElementwiseProgram& piece, std::int64_t first, bool fresh, cudaStream_t stream,
                           void* finished_into) {
  if (piece.rows == 0 || piece.cols == 0) throw egpu::error("reduction: an empty piece");
  m->find_kernels(piece);
  Cut c = cut(piece.rows, piece.cols, m->reduction.axis, m->sms, m->capacity, m->shape.packed ? m->shape.pack : 1);
  if (c.pass.values * c.pass.segments > m->capacity) throw egpu::error("reduction: a piece with more values than planned");
  c.pass.partials = m->partials.get();

  egpu_ew_params params = leaf_params(piece);
  void* pass_args[] = {&params, &c.pass};
  launch(c.inner ? m->inner : m->outer, c.blocks, pass_args, Follows::after_it, stream,
         "launching a reduction's first pass");

  egpu_rd_fold f{};
  f.values = c.pass.values;
  f.segments = c.pass.segments;
  f.value_step = c.pass.value_step;
  f.segment_step = c.pass.segment_step;
  f.partials = m->partials.get();
  f.acc = m->acc.get();
  f.first = first;
  f.fresh = fresh ? 1 : 0;
  f.per_thread = f.segments <= kMostPartialsPerThread ? 1 : 0;
  if (finished_into != nullptr) f.last = m->finish_params(finished_into);
  void* fold_args[] = {&f};
  launch(m->fold, f.per_thread ? ceil_div(f.values, kThreads) : f.values, fold_args, Follows::while_it_ends, stream,
         "launching a reduction's fold");
}

void DeviceReduction::finish(void* out, cudaStream_t stream) {
  if (!m->have_kernels) throw egpu::error("reduction: finished before any piece was folded");
  egpu_rd_finish f = m->finish_params(out);
  void* args[] = {&f};
  launch(m->finish, ceil_div(f.count, kThreads), args, Follows::while_it_ends, stream, "launching a reduction's finish");
}

void device_reduce(ElementwiseProgram program, const detail::Reduction& reduction, void* out, runtime::Context& ctx,
                   cudaStream_t stream) {
  if (program.rows == 0 || program.cols == 0) throw egpu::error("reduction: an empty program on the device");
  detail::Reduction r = reduction;
  const std::int64_t count = detail::reduced_count(program, r);
  kernels::to_leaf_order(program, r);
  DeviceReduction reducer(program, r, count, DeviceReduction::spare_for_speed(ctx.device()), ctx, stream);
  reducer.fold(program, 0, true, stream, out);  // one piece: its fold finishes
}

}  // namespace egpu::backend
