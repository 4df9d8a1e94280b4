#include "executor/gemm_executor.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/device_gemm.hpp"
#include "egpu/detail/elementwise_program.hpp"
#include "egpu/error.hpp"
#include "executor/device_budget.hpp"
#include "executor/pipeline_parts.hpp"
#include "executor/tile_epilogue.hpp"
#include "planner/pipeline_plan.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device.hpp"
#include "runtime/device_buffer.hpp"

namespace egpu::executor {
namespace {

// The product with C as the kernels want it, column-major: a row-major C
// is computed as C^T = B^T A^T, which swaps the operands and their strides.
template <class T>
struct Problem {
  HostMatrix<T> a, b, c;
  T alpha, beta;
  bool beta_is_zero;
  bool transposed = false;  // computed as C^T = B^T A^T

  explicit Problem(const detail::GemmDesc& d)
      : a(host_matrix<T>(d.a)),
        b(host_matrix<T>(d.b)),
        c(host_matrix<T>(d.c)),
        alpha(scalar_from<T>(d.alpha)),
        beta(scalar_from<T>(d.beta)),
        beta_is_zero(d.beta_is_zero) {
    if (natural_layout(c) == Layout::row_major) {
      HostMatrix<T> at = a.transposed();
      a = b.transposed();
      b = at;
      c = c.transposed();
      transposed = true;
    }
  }
};

// Device memory for the largest piece in either layout, lines padded.
template <class T>
std::size_t piece_bytes(std::int64_t rows, std::int64_t cols) {
  const std::int64_t col = padded_ld<T>(rows) * cols, row = padded_ld<T>(cols) * rows;
  return sizeof(T) * static_cast<std::size_t>(std::max(col, row));
}

// The offset of element (row, col) in a dense device piece.
std::size_t element_offset(const DenseShape& shape, std::int64_t row, std::int64_t col) {
  return static_cast<std::size_t>(shape.layout == Layout::col_major ? row + col * shape.ld : row * shape.ld + col);
}

// One operand's device slots: the buffer, and how the piece now in each
// slot is laid out. k runs along the pieces' columns (A) or rows (B: k_rows).
template <class T>
struct OperandSlots {
  runtime::DeviceBuffer buffer;
  std::size_t slot_elems = 0;
  bool k_rows = false;
  std::vector<DenseShape> shape;
  std::vector<std::int64_t> piece_p0;  // where in k the slot's piece starts
  std::vector<char> conj;  // the kernel conjugates this slot's piece
  std::vector<cudaEvent_t> ready;              // after the upload into the slot
  // Per compute stream: after its last multiply reading the slot's piece
  // that an upload into the slot waits for (reads_before_uploads).
  std::vector<std::vector<cudaEvent_t>> read;
  // Uploads (parts included) into each slot so far, and per slot the count
  // each compute stream has waited for: a stream waits for an upload once.
  std::vector<std::int64_t> uploads;
  std::vector<std::vector<std::int64_t>> waited;

  OperandSlots(std::int32_t slots, std::size_t bytes_per_slot, bool k_along_rows, cudaStream_t stream,
               Events& events, std::size_t compute_streams)
      : buffer(bytes_per_slot * static_cast<std::size_t>(slots), stream),
        slot_elems(bytes_per_slot / sizeof(T)),
        k_rows(k_along_rows),
        shape(static_cast<std::size_t>(slots)),
        piece_p0(static_cast<std::size_t>(slots), 0),
        conj(static_cast<std::size_t>(slots), 0),
        ready(events.make(static_cast<std::size_t>(slots))) {
    for (std::int32_t s = 0; s < slots; ++s) read.push_back(events.make(compute_streams));
    uploads.assign(static_cast<std::size_t>(slots), 0);
    waited.assign(static_cast<std::size_t>(slots), std::vector<std::int64_t>(compute_streams, 0));
  }
  // Makes compute stream `lane` wait for the uploads into `slot` so far.
  void wait_ready(std::int32_t slot, std::size_t lane, cudaStream_t stream) {
    const auto s = static_cast<std::size_t>(slot);
    if (waited[s][lane] == uploads[s]) return;  // the stream already waits for them
    wait(stream, ready[s]);
    waited[s][lane] = uploads[s];
  }
  T* at(std::int32_t slot) { return buffer.as<T>() + static_cast<std::size_t>(slot) * slot_elems; }
  // Where k = p0 of the slot's piece lies.
  T* at_k(std::int32_t slot, std::int64_t p0) {
    const auto s = static_cast<std::size_t>(slot);
    const std::int64_t dk = p0 - piece_p0[s];
    return at(slot) + (k_rows ? element_offset(shape[s], dk, 0) : element_offset(shape[s], 0, dk));
  }

  // Queues the upload of k [part_p0, part_p0 + part_kp) of `piece`, which
  // spans k [p0, p0 + kp), into `slot`: the piece's first part once every
  // multiply that read the slot's previous piece is done. A multiply queued
  // after a part waits for the parts up to it (one stream, in order).
  void upload(std::int32_t slot, const HostMatrix<T>& piece, std::int64_t p0, std::int64_t part_p0,
              std::int64_t part_kp, bool pinned, Backend backend, StagingRing& ring, cudaStream_t stream, int threads) {
    const auto s = static_cast<std::size_t>(slot);
    if (part_p0 == p0) {
      for (cudaEvent_t e : read[s]) wait(stream, e);
      shape[s] = dense_shape<T>(piece.rows, piece.cols, natural_layout(piece));
      // cuBLAS has no conjugate-without-transpose: such a piece is conjugated on the way up.
      conj[s] = piece.conj && (shape[s].layout == Layout::row_major || backend::conjugates_col_major(backend));
      piece_p0[s] = p0;
    }
    const std::int64_t dk = part_p0 - p0;
    const HostMatrix<T> part = k_rows ? piece.block(dk, 0, part_kp, piece.cols) : piece.block(0, dk, piece.rows, part_kp);
    DenseShape part_shape = shape[s];  // the slot's lines, ld apart
    part_shape.lines = shape[s].layout == Layout::col_major ? part.cols : part.rows;
    part_shape.line_length = shape[s].layout == Layout::col_major ? part.rows : part.cols;
    executor::upload(part, pinned, part_shape, piece.conj && !conj[s], at_k(slot, part_p0), ring, stream, threads);
    record(ready[s], stream);
    ++uploads[s];
  }
};

// For each operation of the plan (a multiply; false for the others),
// whether a piece is uploaded later into the A slot it reads, and into its
// B slot: only then must the upload wait for it.
std::vector<std::pair<bool, bool>> reads_before_uploads(const planner::PipelinePlan& plan) {
  std::vector<char> a_later(static_cast<std::size_t>(plan.slots_a), 0), b_later(static_cast<std::size_t>(plan.slots_b), 0);
  std::vector<std::pair<bool, bool>> before(plan.ops.size(), {false, false});
  for (std::size_t i = plan.ops.size(); i-- > 0;) {
    const Op& op = plan.ops[i];
    if (op.kind == OpKind::upload_a && op.p0 == op.piece_p0) a_later[static_cast<std::size_t>(op.slot)] = 1;
    if (op.kind == OpKind::upload_b && op.p0 == op.piece_p0) b_later[static_cast<std::size_t>(op.slot)] = 1;
    if (op.kind == OpKind::multiply)
      before[i] = {a_later[static_cast<std::size_t>(op.a_slot)] != 0, b_later[static_cast<std::size_t>(op.b_slot)] != 0};
  }
  return before;
}

// Device bytes the plan's slots take once every line is padded.
template <class T>
std::size_t allocated_bytes(const planner::PipelinePlan& plan, const TileEpilogue* epilogue) {
  return piece_bytes<T>(plan.mb, plan.kb) * static_cast<std::size_t>(plan.slots_a) +
         piece_bytes<T>(plan.kb, plan.nb) * static_cast<std::size_t>(plan.slots_b) +
         sizeof(T) * static_cast<std::size_t>(padded_ld<T>(plan.mb) * plan.nb) * static_cast<std::size_t>(plan.slots_c) +
         (epilogue ? static_cast<std::size_t>(epilogue->slot_bytes(plan.slots_c, plan.mb, plan.nb)) : 0);
}

// The planner counts elements; padding lines to 16 bytes adds to that (much
// for thin pieces), so plan again within a smaller budget until the padded
// slots fit the device budget too.
template <class T>
planner::PipelinePlan plan_product(const Problem<T>& p, const TileEpilogue* epilogue, const Options& options,
                                   bool staged) {
  planner::GemmProblem problem;
  problem.m = p.c.rows;
  problem.n = p.c.cols;
  problem.k = p.a.cols;
  problem.elem_size = static_cast<std::int64_t>(sizeof(T));
  problem.flops_per_element = kernels::is_complex<T>::value ? 8 : 2;
  problem.staged = staged;
  problem.reads_c = !p.beta_is_zero;
  problem.a_runs_along_m = natural_layout(p.a) == Layout::col_major;
  problem.b_runs_along_k = natural_layout(p.b) == Layout::col_major;
  if (epilogue) problem.tile_leaves = epilogue->tile_leaves();
  auto plan_for = [&](std::size_t budget) {
    double target = static_cast<double>(budget);
    for (int attempt = 0;; ++attempt) {
      planner::PipelinePlan plan = planner::plan_pipeline(
          problem, {static_cast<std::int64_t>(target), options.panel, options.k_panel, options.k_rounds});
      const std::size_t bytes = allocated_bytes<T>(plan, epilogue);
      if (bytes <= budget) return plan;
      if (attempt == 8)
        throw egpu::error("device memory budget of " + std::to_string(budget) + " bytes is too small for this product");
      target *= 0.98 * static_cast<double>(budget) / static_cast<double>(bytes);
    }
  };
  // An in-core plan holds the whole product: more memory would not change it.
  const auto bytes = [&](const planner::PipelinePlan& plan) { return allocated_bytes<T>(plan, epilogue); };
  return plan_within_budget(options.device_memory_limit, plan_for, bytes,
                            [](const planner::PipelinePlan& plan) { return plan.in_core; });
}

template <class T>
void run(const detail::GemmDesc& desc, const Options& options) {
  const Problem<T> p(desc);
  runtime::Context& ctx = runtime::thread_context();
  Streams streams(ctx, stream_count(options));
  const int threads = staging_threads(options);

  std::optional<TileEpilogue> epilogue;
  if (desc.epilogue != nullptr) epilogue.emplace(desc, p.transposed, ctx);
  const bool a_pinned = is_pinned(p.a), b_pinned = is_pinned(p.b), c_pinned = is_pinned(p.c);
  const planner::PipelinePlan plan =
      plan_product<T>(p, epilogue ? &*epilogue : nullptr, options, !(a_pinned && b_pinned && c_pinned));

  // A call that reads C (beta != 0, or C a leaf of the epilogue) writes
  // nothing into the user's C until every kernel has succeeded: with all C
  // tiles on the device, downloads wait for the last kernel; otherwise
  // finished tiles are held on the host and copied into C at the end.
  const bool reads_c = !p.beta_is_zero;
  const bool accumulates = reads_c || desc.epilogue_reads_c;
  const bool defer_downloads = accumulates && plan.slots_c == plan.tiles_m() * plan.tiles_n();
  const ResultTarget<T> target(p.c, accumulates && !defer_downloads);

  Events events;
  const std::size_t computes = streams.compute.size();
  OperandSlots<T> a(plan.slots_a, piece_bytes<T>(plan.mb, plan.kb), false, streams.up, events, computes);
  OperandSlots<T> b(plan.slots_b, piece_bytes<T>(plan.kb, plan.nb), true, streams.up, events, computes);
  const std::size_t c_slot_elems = static_cast<std::size_t>(padded_ld<T>(plan.mb) * plan.nb);
  runtime::DeviceBuffer c_buffer(sizeof(T) * c_slot_elems * static_cast<std::size_t>(plan.slots_c), streams.up);
  const std::vector<cudaEvent_t> c_ready = events.make(static_cast<std::size_t>(plan.slots_c));
  const std::vector<cudaEvent_t> c_done = events.make(static_cast<std::size_t>(plan.slots_c));
  const std::vector<cudaEvent_t> c_free = events.make(static_cast<std::size_t>(plan.slots_c));
  if (epilogue) epilogue->allocate(plan, streams, events);
  start_after_up(streams, events);

  Trace trace;
  const DrainOnExit drain{streams};
  Writer<T> writer(ctx, streams.down, c_buffer.as<T>(), c_slot_elems, target.out(), c_pinned && !target.held(), c_free,
                   defer_downloads, threads, trace, downloads_in(plan));

  StagingRing ring{&ctx.up_ring()};
  const T one = scalar_from<T>(1.0);
  const kernels::MathMode math = math_mode<T>(options.precision);

  const std::vector<std::pair<bool, bool>> read_before_upload = reads_before_uploads(plan);
  for (std::size_t i = 0; i < plan.ops.size(); ++i) {
    const Op& op = plan.ops[i];
    maybe_fail();
    writer.check();
    switch (op.kind) {
      case OpKind::upload_a: {
        const int span = trace.begin([&] { return region("upload A", op.i0, op.mi, op.p0, op.kp); }, "H2D", streams.up);
        a.upload(op.slot, p.a.block(op.i0, op.piece_p0, op.mi, op.piece_kp), op.piece_p0, op.p0, op.kp, a_pinned,
                 options.backend, ring, streams.up, threads);
        trace.end(span, streams.up);
        break;
      }
      case OpKind::upload_b: {
        const int span = trace.begin([&] { return region("upload B", op.p0, op.kp, op.j0, op.nj); }, "H2D", streams.up);
        b.upload(op.slot, p.b.block(op.piece_p0, op.j0, op.piece_kp, op.nj), op.piece_p0, op.p0, op.kp, b_pinned,
                 options.backend, ring, streams.up, threads);
        trace.end(span, streams.up);
        break;
      }
      case OpKind::upload_c: {
        writer.claim(op.slot, streams.up);
        const int span = trace.begin([&] { return region("upload C", op.i0, op.mi, op.j0, op.nj); }, "H2D", streams.up);
        upload(p.c.block(op.i0, op.j0, op.mi, op.nj), c_pinned, dense_shape<T>(op.mi, op.nj, Layout::col_major), false,
               c_buffer.as<T>() + static_cast<std::size_t>(op.slot) * c_slot_elems, ring, streams.up, threads);
        trace.end(span, streams.up);
        record(c_ready[static_cast<std::size_t>(op.slot)], streams.up);
        break;
      }
      case OpKind::multiply: {
        const std::size_t lane = static_cast<std::size_t>(op.tile) % computes;
        const cudaStream_t stream = streams.compute[lane];
        const auto cs = static_cast<std::size_t>(op.slot), as = static_cast<std::size_t>(op.a_slot),
                   bs = static_cast<std::size_t>(op.b_slot);
        if (op.first_k) {
          if (reads_c)
            wait(stream, c_ready[cs]);
          else
            writer.claim(op.slot, stream);
        }
        a.wait_ready(op.a_slot, lane, stream);
        b.wait_ready(op.b_slot, lane, stream);
        kernels::GemmArgs<T> args;
        args.m = op.mi;
        args.n = op.nj;
        args.k = op.kp;
        args.a = a.at_k(op.a_slot, op.p0);
        args.lda = a.shape[as].ld;
        args.a_layout = a.shape[as].layout;
        args.conj_a = a.conj[as] != 0;
        args.b = b.at_k(op.b_slot, op.p0);
        args.ldb = b.shape[bs].ld;
        args.b_layout = b.shape[bs].layout;
        args.conj_b = b.conj[bs] != 0;
        args.c = c_buffer.as<T>() + cs * c_slot_elems;
        args.ldc = padded_ld<T>(op.mi);
        args.alpha = p.alpha;
        args.beta = op.first_k ? p.beta : one;
        args.beta_is_zero = op.first_k && p.beta_is_zero;
        args.math = math;
        const int span = trace.begin(
            [&] {
              return "multiply " + region("C", op.i0, op.mi, op.j0, op.nj) + " k " + std::to_string(op.p0) + "+" +
                     std::to_string(op.kp);
            },
            "kernels " + std::to_string(lane), stream);
        backend::device_gemm(options.backend, args, ctx, stream);
        trace.end(span, stream);
        // The coefficient-wise rest of the expression, in place on the
        // finished tile, before it leaves the device.
        if (op.last_k && epilogue) epilogue->apply(op, {args.c, op.mi, op.nj, 1, args.ldc, false}, lane, stream, trace);
        // Only what a later operation waits for: an upload into the slot
        // (the plan's later pieces there), the tile's download.
        if (read_before_upload[i].first) record(a.read[as][lane], stream);
        if (read_before_upload[i].second) record(b.read[bs][lane], stream);
        if (op.last_k) record(c_done[cs], stream);
        break;
      }
      case OpKind::download_c: {
        // c_done is re-recorded by the slot's next tile only after this
        // download is queued (Writer::claim), so the writer sees this tile's.
        writer.push({op, c_done[static_cast<std::size_t>(op.slot)], dense_shape<T>(op.mi, op.nj, Layout::col_major)});
        break;
      }
      case OpKind::upload_leaf:
        if (!epilogue) throw egpu::error("gemm pipeline: a leaf's upload in a plan without an epilogue");
        epilogue->upload(op, ring, threads, trace);
        break;
      case OpKind::evaluate:
        throw egpu::error("gemm pipeline: a coefficient-wise evaluation in a product's plan");
    }
  }
  finish_call(writer, streams, target, threads, trace, "gemm pipeline");
}

}  // namespace

void run_gemm(const detail::GemmDesc& desc, const Options& options) {
  const FailureScope failure_scope;  // an injected failure applies to this product only
  with_element_type(desc.scalar, [&](auto t) { run<decltype(t)>(desc, options); });
}

}  // namespace egpu::executor
