#include "planner/pipeline_plan.hpp"

#include <algorithm>
#include <list>
#include <map>
#include <string>
#include <utility>

#include "egpu/error.hpp"
#include "planner/elementwise_plan.hpp"

namespace egpu::planner {
namespace {

// Tiles and pieces are multiples of this (unless a whole dimension is
// smaller), matching the kernels' block tiles.
constexpr std::int64_t kGranule = 128;

// A plan of more steps than this means the budget is far too small for the
// product: refuse it rather than build millions of tiny copies.
constexpr std::int64_t kMaxMultiplies = std::int64_t(1) << 22;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t x, std::int64_t g) { return ceil_div(x, g) * g; }

// Cuts `extent` into equal tiles no larger than about `target`.
std::int64_t balanced(std::int64_t extent, std::int64_t target) {
  target = std::max<std::int64_t>(1, target);
  if (extent <= target) return extent;
  const std::int64_t tiles = ceil_div(extent, target);
  const std::int64_t size = ceil_div(extent, tiles);
  return size >= kGranule ? std::min(extent, round_up(size, kGranule)) : size;
}

// Products of 4 bytes or more per flop: real double.
bool double_real(const GemmProblem& p) { return p.elem_size >= 4 * p.flops_per_element; }
// Real float: 4-byte elements, 2 flops each.
bool float_real(const GemmProblem& p) { return p.elem_size == 4 && p.flops_per_element == 2; }
// Real float of 8192 rows or columns or more: its own tiles, pieces and
// lead piece (default_panel, default_k_panel, with_lead).
bool large_float(const GemmProblem& p) { return float_real(p) && std::max(p.m, p.n) >= 8192; }

// Flops per byte of A and B.
double flops_per_byte(const GemmProblem& p) {
  const double flops = double(p.flops_per_element) * double(p.m) * double(p.n) * double(p.k);
  const double bytes = double(p.elem_size) * (double(p.m) * double(p.k) + double(p.k) * double(p.n));
  return flops / bytes;
}

// Fewer than 1024 flops per byte of A and B: the GPU, at 50-60 Tflop/s of
// double against 50-55 GB/s over the link (H100, H200), waits for the
// uploads rather than the uploads for the kernels.
bool bound_by_uploads(const GemmProblem& p) { return flops_per_byte(p) < 1024; }

// Defaults where column panels (below) do not apply or do not fit. C tiles:
// products whose operands all go by DMA from page-locked memory and that
// move 4 bytes or more per flop (double) take tiles of about a quarter of
// the larger side (at least 512), so that the last tiles, computed and
// brought down after the last bytes went up, are a small part of the call.
// The others take half of it, at least 1024: float and the complex scalars,
// whose kernels lose more rate on small tiles, and staged (pageable)
// operands, each of whose pieces costs the host a hand-over to the staging
// threads (but staged double of 4096 to 8191 takes quarters, with pieces of
// all of k: takes_whole_k_quarters). From 8192 up, double takes 4096 where
// that still makes four tiles or more (the pieces' columns then go up in runs
// of 32 KiB: DMA of 16 KiB runs went at 34-42 GB/s against 50-55 for longer
// ones; page-locked and in core it takes thin_tiles instead), real
// float a quarter of the larger side (at most 8192), the complex scalars
// from 16384 up 8192. k pieces a quarter of k or less, so the first kernel
// starts once a small part of A and B has arrived; from 8192 up, double
// and real float take 4096 deep: float's
// kernels ran at 46 Tflop/s on 4096 x 4096 x 2048 pieces against 49 on
// 4096 deep ones (own kernel, H200), and at 8192 and more float is bound
// by its kernels, not its uploads.
// (Measured on an H200, host-resident products, quarter against half
// tiles: pinned double 1024, 2048, 4096: 0.50-0.52 against 0.60-0.65 ms,
// 1.63-1.85 against 1.77-1.88, 6.37-6.55 against 6.90-7.17; pinned float
// 2048, 4096: 1.50-1.95 against 1.07-1.11, 4.4-4.8 against 4.3-4.5;
// pageable double 4096: 11-13 against 9.8-10.1. Float, x floor, own kernel
// / cuBLAS, against 4096 tiles 2048 deep at 8192 and 8192 tiles at 16384:
// 8192 pinned 1.09-1.10 / 1.08 against 1.20 / 1.13, pageable 1.15-1.16 /
// 1.15 against 1.24 / 1.17-1.18; 16384 pinned 1.03 / 1.06 against 1.06 /
// 1.10, pageable 1.03 / 1.06 against 1.08 / 1.11. Double at 8192, 4096
// tiles 4096 deep: pinned 29.8 ms against 31.9-33.4 with 2048 tiles 2048
// deep, pageable 32.7 against 34.7 with 4096 tiles 2048 deep; at 16384,
// 4096 tiles against 8192 tiles, both 4096 deep: pinned 177 against 189,
// pageable 179 against 189.)
// Real double staged from pageable memory, of 4096 to 8191 rows or columns
// (bound by its uploads: its m n / (4 (m + n)) flops per byte are at most an
// eighth of the larger side, fewer than 1024), takes tiles a quarter of the
// larger side with pieces of all of k (at most 4096): each operand goes up in
// a few large staged pieces, and C in small tiles whose downloads (and the
// host's copies of them out of pinned memory) start after a quarter of the
// bytes went up. (Measured on four H200s, pageable 4096 double, five or six
// rounds alternating on each, x floor, own / cuBLAS, medians: 1024 tiles of
// all of k 1.15 / 1.17, 1.15 / 1.20, 1.45 / 1.55 and 1.19 / 1.21, against
// 2048 tiles 1024 deep 1.28 / 1.26, 1.27 / 1.29, 1.33 / 1.29 and 1.27 / 1.26;
// faster in 16 of 22 paired rounds with the own kernel and 15 of 22 with
// cuBLAS, within 1.25 in 14 and 14 of 22 against 8 and 5. On the third host
// the calls ranged 1.19-2.41 with either plan. 2048 tiles of all of k took
// medians 1.25 / 1.26 on the first; quarter tiles of pieces a quarter of k
// deep, 11-13 ms, above. At 5000 on the fourth: medians 12.4 / 13.9 ms
// against 14.1 / 14.2 with 2560 tiles 1280 deep; at 6144 on the second: 19.7
// / 20.2 ms against 21.4 / 22.3 with 3072 tiles 1536 deep.)
bool takes_whole_k_quarters(const GemmProblem& p) {
  const std::int64_t larger = std::max(p.m, p.n);
  return p.staged && double_real(p) && larger >= 4096 && larger < 8192;
}
std::int64_t default_panel(const GemmProblem& p) {
  const std::int64_t larger = std::max(p.m, p.n);
  if (takes_whole_k_quarters(p)) return round_up(ceil_div(larger, 4), kGranule);
  if (double_real(p) && larger >= 8192 && ceil_div(p.m, 4096) * ceil_div(p.n, 4096) >= 4) return 4096;
  if (large_float(p)) return std::min<std::int64_t>(round_up(ceil_div(larger, 4), kGranule), 8192);
  if (larger >= 16384) return 8192;
  if (!p.staged && double_real(p))
    return std::clamp<std::int64_t>(round_up(ceil_div(larger, 4), kGranule), kGranule * 4, kGranule * 32);
  return std::max<std::int64_t>(kGranule * 8, ceil_div(larger, 2));
}
std::int64_t default_k_panel(const GemmProblem& p) {
  if (takes_whole_k_quarters(p)) return kGranule * 32;
  if (p.k >= 8192 && (double_real(p) || large_float(p))) return 4096;
  return std::clamp<std::int64_t>(ceil_div(p.k, 4), kGranule * 4, kGranule * 32);
}

// Real double of 8192 or more in m, n and k from page-locked memory takes,
// in core, C tiles 4096 long one way and a sixteenth of the other
// side wide (at least 512), with k pieces 4096 deep. Thin tiles finish one
// after another in the second half of k and go down while the last pieces
// go up; with square 4096 tiles, two quarters of C were multiplied and
// brought down after the last upload. The thin side is the one along which
// no piece is read in runs: n where B's runs go down its columns (k) (A's
// pieces then go up in runs as long as the tiles, 4096 where m divides so),
// m where A's runs go along its rows (k); with neither (A column-major, B
// row-major) the tiles stay square. No piece goes up in shorter runs than
// with square tiles. Pieces of 4096 x 4096 double (32 KiB runs) go up at
// the full DMA rate; runs of 16 KiB went at 34-42 GB/s against 50-55.
// (Measured on an H200, page-locked, medians of five calls after one
// warm-up (three at 12288 and 16384), seven runs at 8192 and five at 12288
// and 16384, both tilings in one process, ms, own kernel / cuBLAS, against
// square 4096 tiles: 8192 25.7-27.0 / 25.7-26.8 against 27.5-31.0 /
// 27.2-29.9, which ran in two modes (traced with cuBLAS, thin tiles: the
// first tile comes down at 14.5 ms and, from the second on, the downloads
// run back to back to the end); 12288 75.8-77.6 / 71.2-73.1 against
// 76.2-78.6 / 72.2-74.2; 16384 175.5-176.5 / 161.8-163.2 against 174.2-176.1 / 166.4-170.2. Tiles
// 1024 and 2048 wide at 8192 took 25.9-26.4 and 26.2-27.3 ms. From pageable
// memory the thin tiles took 83.3-86.5 ms at 12288 against 78.7-85.4, so
// staged operands keep the square tiles.)
constexpr std::int64_t kThinFrom = 8192, kThinLong = 4096;
bool takes_thin_tiles(const GemmProblem& p) {
  return !p.staged && double_real(p) && std::min(p.m, p.n) >= kThinFrom && p.k >= kThinFrom &&
         (p.b_runs_along_k || !p.a_runs_along_m);
}
struct TileTarget {
  std::int64_t m, n, k;
};
TileTarget thin_tiles(const GemmProblem& p) {
  auto thin_side = [](std::int64_t side) {
    return std::clamp<std::int64_t>(round_up(ceil_div(side, 16), kGranule), kGranule * 4, kThinLong);
  };
  if (p.b_runs_along_k) return {kThinLong, thin_side(p.n), default_k_panel(p)};
  return {thin_side(p.m), kThinLong, default_k_panel(p)};
}

// The default C tiles of a real product of at most 4096 rows that is bound
// by its uploads and goes up by DMA from page-locked memory (narrow float,
// below, from any memory): column panels, each all the rows of C, so that
// - an A piece (all rows, kb columns) is one contiguous run of a
//   column-major A, which goes up faster than a block of short columns;
// - the last panel, multiplied and brought down after the last upload, is
//   narrow while its kernels still span all the rows;
// - the panels go down, column by column, while the next ones go up.
// Double takes panels of an eighth of n (256 to 512 wide) and pieces half
// of k deep. Float of at most 768 flops per byte (square: n <= 3072) takes
// panels 256 wide with pieces of all of k (at most 4096): each panel is
// then one multiply of all its depth, and every piece one long copy.
// Float's kernels on pieces of a part of k ran at a fraction of their rate
// (2048 x 1024 x 512 at 28-37 Tflop/s, four in a row on one C tile), and
// each DMA costs about 3 us over its bytes (8 MiB in 256 KiB pieces went
// up at 34 GB/s, in 1 MiB pieces at 46, in one at 52; on any number of
// streams). Float of more flops per byte takes halves of n and pieces a
// quarter of k deep: its kernels, on the thin panels, no longer keep up
// with the uploads. (Measured on an H200, page-locked, x floor, three
// rounds (3584 five, 4000 two), own kernel / cuBLAS, narrow whole-k
// panels against halves and quarters: float 1024 1.88-2.12 / 1.85-2.15
// against 2.14-2.36 / 2.09-2.51,
// 1536 1.57-1.63 / 1.59-1.70 against 2.02-2.20 / 1.85-2.05, 2048 1.57-1.68
// / 1.50-1.56 against 1.65-1.80 / 1.64-1.76, 3072 1.68-1.70 / 1.57-1.60
// against 1.82-1.87 / 1.79-1.83; 3584 1.81-1.85 / 1.71-1.75 against
// 1.78-1.82 / 1.80-1.87, 4000 1.60 / 1.55-1.56 against 1.54-1.58 /
// 1.62-1.64; 384 and 512 wide panels took longer. Double against the
// square tiles before: 4096 1.23 / 1.24 against 1.35 / 1.37, 2048 1.28 /
// 1.25 against 1.44 / 1.43, 1024 1.69 / 1.60 against 1.79 / 1.72.) Float at
// 4096 does 1024 flops per byte and keeps its square tiles in rounds: as
// column panels it took 1.65-1.77 against 1.44. Staged (pageable) operands
// keep the square tiles but for the narrow float panels: each staged piece
// costs the host a hand-over, and halves and quarters, with more pieces,
// took 0.65 ms against 0.58 at 1024 float (medians of 5 runs), while the
// narrow whole-k panels cut fewer pieces than the square tiles (pageable
// float, three rounds, both backends: 1024 0.46-0.51 ms against 0.50-0.61,
// 1536 0.86-0.96 against 0.92-1.08, 3072 2.72-2.96 against 2.92-3.56;
// 2048 1.44-1.54 against 1.31-1.63; over nine rounds the medians were
// 1.53 / 1.54 ms against 1.51 / 1.61, own kernel / cuBLAS).
constexpr std::int64_t kMaxPanelRows = 4096;
// At most this many panels: each costs a multiply, a download and its
// pieces' copies, so a wide C of few rows (64 x 100000) takes wider panels
// than the widths above.
constexpr std::int64_t kMaxPanels = 16;
// Real float of at most 768 flops per byte: the narrow panels above.
bool takes_narrow_float_panels(const GemmProblem& p) { return float_real(p) && flops_per_byte(p) <= 768; }
bool takes_column_panels(const GemmProblem& p) {
  return (!p.staged || takes_narrow_float_panels(p)) && p.flops_per_element == 2 && p.m <= kMaxPanelRows &&
         bound_by_uploads(p);
}
TileTarget column_panels(const GemmProblem& p) {
  const std::int64_t widest = ceil_div(p.n, kMaxPanels);
  if (double_real(p))
    return {p.m, std::max(widest, std::clamp<std::int64_t>(ceil_div(p.n, 8), kGranule * 2, kGranule * 4)),
            std::clamp<std::int64_t>(ceil_div(p.k, 2), kGranule * 4, kGranule * 32)};
  if (takes_narrow_float_panels(p))
    return {p.m, std::max(widest, kGranule * 2), std::min<std::int64_t>(p.k, kGranule * 32)};
  return {p.m, std::max<std::int64_t>(kGranule, ceil_div(p.n, 2)),
          std::clamp<std::int64_t>(ceil_div(p.k, 4), kGranule * 2, kGranule * 32)};
}

// Least-recently-used assignment of pieces to a fixed number of slots.
class SlotCache {
 public:
  explicit SlotCache(std::int32_t slots) : m_slots(slots) {}
  // The slot holding `key`, and whether it has to be uploaded first.
  std::pair<std::int32_t, bool> place(std::int64_t key) {
    auto hit = m_where.find(key);
    if (hit != m_where.end()) {
      m_order.splice(m_order.end(), m_order, hit->second.second);
      return {hit->second.first, false};
    }
    std::int32_t slot;
    if (static_cast<std::int32_t>(m_where.size()) < m_slots) {
      slot = static_cast<std::int32_t>(m_where.size());
    } else {
      const std::int64_t victim = m_order.front();
      m_order.pop_front();
      slot = m_where[victim].first;
      m_where.erase(victim);
    }
    m_order.push_back(key);
    m_where[key] = {slot, std::prev(m_order.end())};
    return {slot, true};
  }

 private:
  std::int32_t m_slots;
  std::list<std::int64_t> m_order;  // least recently used first
  std::map<std::int64_t, std::pair<std::int32_t, std::list<std::int64_t>::iterator>> m_where;
};

struct Sizes {
  std::int64_t mb, nb, kb;
  std::int32_t slots_a, slots_b, slots_c;
  std::int64_t lead = 0;  // > 0: the first kb piece goes as two, `lead` deep and kb - lead
};

// The first row of each k piece: 0, kb, 2 kb, ...; with a lead piece 0,
// lead, kb, 2 kb, ...
std::vector<std::int64_t> piece_starts(const GemmProblem& p, const Sizes& s) {
  std::vector<std::int64_t> starts{0};
  if (s.lead > 0) starts.push_back(s.lead);
  for (std::int64_t p0 = s.kb; p0 < p.k; p0 += s.kb) starts.push_back(p0);
  return starts;
}
std::int64_t pieces_k(const GemmProblem& p, const Sizes& s) {
  return static_cast<std::int64_t>(piece_starts(p, s).size());
}

// Every piece of A and B and every C tile has a slot of its own.
bool holds_everything(const GemmProblem& p, const Sizes& s) {
  const std::int64_t tm = ceil_div(p.m, s.mb), tn = ceil_div(p.n, s.nb), tk = pieces_k(p, s);
  return s.slots_a == tm * tk && s.slots_b == tk * tn && s.slots_c == tm * tn;
}

std::int64_t slot_elements(const GemmProblem& p, const Sizes& s) {
  return s.slots_a * s.mb * s.kb + s.slots_b * s.kb * s.nb + s.slots_c * c_slot_elements(p, s.mb, s.nb);
}

// Slot counts for given tile sizes within `budget` elements, or slots_a == 0
// when they do not fit. Everything resident when it fits; otherwise the B
// pieces of one column of tiles (plus one, to start the next column early),
// two C slots (one computes while the other goes down) and as many A slots
// as remain.
Sizes slots_for(const GemmProblem& p, std::int64_t mb, std::int64_t nb, std::int64_t kb, std::int64_t budget) {
  const std::int64_t tm = ceil_div(p.m, mb), tn = ceil_div(p.n, nb), tk = ceil_div(p.k, kb);
  if (tm * tn * tk > kMaxMultiplies) return Sizes{mb, nb, kb, 0, 0, 0};
  Sizes all{mb, nb, kb, static_cast<std::int32_t>(tm * tk), static_cast<std::int32_t>(tk * tn),
            static_cast<std::int32_t>(tm * tn)};
  if (slot_elements(p, all) <= budget) return all;
  Sizes s{mb, nb, kb, 0, static_cast<std::int32_t>(std::min(tk * tn, tk + 1)),
          static_cast<std::int32_t>(std::min<std::int64_t>(tm * tn, 2))};
  const std::int64_t c_elems = c_slot_elements(p, mb, nb);
  auto a_room = [&](const Sizes& x) { return (budget - x.slots_b * kb * nb - x.slots_c * c_elems) / (mb * kb); };
  if (a_room(s) < std::min<std::int64_t>(tm * tk, 2)) s.slots_b = static_cast<std::int32_t>(std::min<std::int64_t>(tk * tn, 2));
  if (a_room(s) < std::min<std::int64_t>(tm * tk, 2)) s.slots_c = 1;
  if (a_room(s) < std::min<std::int64_t>(tm * tk, 2)) s.slots_b = 1;
  const std::int64_t room = a_room(s);
  s.slots_a = room >= 1 ? static_cast<std::int32_t>(std::min(room, tm * tk)) : 0;
  return s;
}

// Bytes that go up for a traversal with these slots (what build_ops would
// produce), estimated without building it.
std::int64_t traffic_estimate(const GemmProblem& p, const Sizes& s) {
  const std::int64_t tm = ceil_div(p.m, s.mb), tn = ceil_div(p.n, s.nb), tk = ceil_div(p.k, s.kb);
  const double a_resident = std::min(1.0, double(s.slots_a) / double(tm * tk));
  const double a_passes = a_resident >= 1.0 ? 1.0 : double(tn) - double(tn - 1) * a_resident;
  const double b_passes = s.slots_b >= tk ? 1.0 : double(tm);
  return static_cast<std::int64_t>(a_passes * double(p.m * p.k) + b_passes * double(p.k * p.n)) +
         (p.reads_c ? p.m * p.n : 0);
}

// In core, real float from 8192 up (in rounds, bound by its kernels)
// cuts its first k piece in two, a quarter of it deep and the rest, where
// the device has room for the two more rows of pieces: the first multiplies
// wait for a quarter of the first pieces' bytes, and the pieces after
// keep the depth on which the kernels keep their rate. (Measured on an
// H200, x floor, three runs, against uniform pieces: float 8192 pageable
// 1.08-1.11 against 1.13-1.16 with cuBLAS, 1.11-1.13 against 1.14-1.20 with
// the own kernel, pinned 1.06-1.07 against 1.08-1.09 and 1.09-1.10 against
// 1.10; 16384 float and 4096 float alike within the spread of the runs.
// Double took longer with a lead piece: 8192 pinned 1.48-1.60 against
// 1.31-1.52, 16384 pinned with the own kernel 1.20-1.22 against 1.16-1.18.)
Sizes with_lead(const GemmProblem& p, const Sizes& s, std::int64_t budget) {
  const std::int64_t tm = ceil_div(p.m, s.mb), tn = ceil_div(p.n, s.nb), tk = ceil_div(p.k, s.kb);
  if (!large_float(p) || !holds_everything(p, s) || bound_by_uploads(p) || tk < 2 || s.kb < 8 * kGranule) return s;
  Sizes led = s;
  led.lead = round_up(s.kb / 4, kGranule);
  led.slots_a = static_cast<std::int32_t>(tm * pieces_k(p, led));
  led.slots_b = static_cast<std::int32_t>(pieces_k(p, led) * tn);
  return slot_elements(p, led) <= budget ? led : s;
}

// Below these, kernels get too small to fill the GPU and the plan
// launch-bound; smaller tiles are taken only when nothing larger fits.
constexpr std::int64_t kMinTile = 1024, kMinPiece = 512;
// Deepest k piece the out-of-core search starts from by default.
constexpr std::int64_t kMaxOocPiece = 4096;

Sizes choose_sizes(const GemmProblem& p, const PipelineLimits& limits) {
  const std::int64_t budget = limits.device_budget_bytes / p.elem_size;
  // Column panels, or thin tiles, when the whole product fits with them.
  const bool panels = takes_column_panels(p), thin = !panels && takes_thin_tiles(p);
  if (limits.panel <= 0 && (panels || thin)) {
    const TileTarget t = panels ? column_panels(p) : thin_tiles(p);
    const std::int64_t mb = balanced(p.m, t.m), nb = balanced(p.n, t.n),
                       kb = balanced(p.k, limits.k_panel > 0 ? limits.k_panel : t.k);
    const Sizes s = slots_for(p, mb, nb, kb, budget);
    if (holds_everything(p, s)) return s;
  }
  std::int64_t target_mn = limits.panel > 0 ? limits.panel : default_panel(p);
  std::int64_t target_k = limits.k_panel > 0 ? limits.k_panel : default_k_panel(p);
  Sizes best{};
  std::int64_t best_score = -1;
  // Halve the tiles step by step. While they are not small, keep the size
  // that moves the fewest bytes (ties: the larger tiles); once they are
  // small, take the first that fits.
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::int64_t mb = balanced(p.m, target_mn), nb = balanced(p.n, target_mn), kb = balanced(p.k, target_k);
    const bool small = mb < std::min(p.m, kMinTile) || nb < std::min(p.n, kMinTile) || kb < std::min(p.k, kMinPiece);
    if (small && best_score >= 0) break;
    const Sizes s = slots_for(p, mb, nb, kb, budget);
    if (s.slots_a > 0) {
      const std::int64_t tm = ceil_div(p.m, mb), tn = ceil_div(p.n, nb);
      // A single C slot serialises each tile's download with the next
      // tile's kernels: count it as half as much traffic again.
      const bool one_c_slot = s.slots_c < std::min<std::int64_t>(2, tm * tn);
      const std::int64_t score = traffic_estimate(p, s) * (one_c_slot ? 3 : 2) / 2;
      if (best_score < 0 || score < best_score) {
        best = s;
        best_score = score;
      }
      if (small || s.slots_a >= tm * ceil_div(p.k, kb)) break;  // all of A fits: nothing to gain
    }
    if (target_mn <= 1 && target_k <= 1) break;
    if (target_k >= target_mn && target_k > 1)
      target_k = std::max<std::int64_t>(1, target_k / 2);
    else
      target_mn = std::max<std::int64_t>(1, target_mn / 2);
  }
  // Out of core with the tile sizes left to us, rectangular tiles can move
  // far fewer bytes: a C tile spanning all rows of A, say, needs each B
  // piece once. Try every combination of halved sizes that is not small.
  const bool in_core = best_score >= 0 && holds_everything(p, best);
  if (best_score >= 0 && !in_core && limits.panel <= 0) {
    auto halvings = [](std::int64_t extent, std::int64_t start, std::int64_t floor) {
      std::vector<std::int64_t> sizes;
      for (std::int64_t t = start; t >= 1; t /= 2) {
        const std::int64_t size = balanced(extent, t);
        if (size < std::min(extent, floor)) break;
        if (sizes.empty() || sizes.back() != size) sizes.push_back(size);
      }
      return sizes;
    };
    // Unless given, k pieces start deeper than in core: the first kernel's
    // start matters less than the bytes moved and the per-piece overheads.
    const std::int64_t k_start = limits.k_panel > 0 ? limits.k_panel : std::max(default_k_panel(p), kMaxOocPiece);
    for (std::int64_t mb : halvings(p.m, p.m, kMinTile))
      for (std::int64_t nb : halvings(p.n, p.n, kMinTile))
        // Deeper pieces here: each k piece re-reads and re-writes its C
        // tile on the device, which costs more for these wide tiles.
        for (std::int64_t kb : halvings(p.k, k_start, 2 * kMinPiece)) {
          const Sizes s = slots_for(p, mb, nb, kb, budget);
          if (s.slots_a == 0) continue;
          const bool one_c_slot = s.slots_c < std::min<std::int64_t>(2, ceil_div(p.m, mb) * ceil_div(p.n, nb));
          const std::int64_t score = traffic_estimate(p, s) * (one_c_slot ? 3 : 2) / 2;
          if (score < best_score) {
            best = s;
            best_score = score;
          }
        }
  }
  if (best_score < 0)
    throw egpu::error("device memory budget of " + std::to_string(limits.device_budget_bytes) +
                      " bytes is too small for this product (no tile fits, or the tiles that fit would take millions of steps)");
  return limits.panel <= 0 && limits.k_panel <= 0 ? with_lead(p, best, budget) : best;
}

// The order of the C tiles. In core (every piece stays on the device):
// growing squares, tile (0, 0), then the tiles of row 1 and column 1, then
// of row 2 and column 2, ...: each square's tiles need one new row of A
// pieces and one new column of B pieces, so the work that can start grows
// with the bytes that have arrived, and the tiles that wait for the last
// bytes are one column of the grid. Otherwise: columns of tiles outside,
// rows inside in alternating direction, so that the A pieces last used are
// used first again.
std::vector<std::pair<std::int64_t, std::int64_t>> tile_order(std::int64_t tm, std::int64_t tn, bool in_core) {
  std::vector<std::pair<std::int64_t, std::int64_t>> order;
  if (in_core) {
    for (std::int64_t s = 0; s < std::max(tm, tn); ++s) {
      if (s < tm)
        for (std::int64_t j = 0; j <= std::min(s, tn - 1); ++j) order.emplace_back(s, j);
      if (s < tn)
        for (std::int64_t i = std::min(s, tm) - 1; i >= 0; --i) order.emplace_back(i, s);
    }
    return order;
  }
  for (std::int64_t tj = 0; tj < tn; ++tj)
    for (std::int64_t step = 0; step < tm; ++step) order.emplace_back(tj % 2 == 0 ? step : tm - 1 - step, tj);
  return order;
}

// Leading k pieces taken across all tiles in core (see build_ops): half
// of them for a product that keeps the kernels busier than the copies
// (bound_by_uploads false), so that every piece that goes up in these
// rounds frees a multiply or more for the kernels at once, after which the
// tiles are finished in turn and their downloads spread over the second
// half of the call. A product bound by its uploads goes tile by tile (no
// rounds), so that tiles finish and go down while the rest goes up.
// (Measured on an H200, double, in rounds against tile by tile: 16384
// pinned 177 against 184 ms; 8192 pinned 30.1 against 32.2, pageable 34.7
// against 36.0; 4096 pinned (512 flops per byte) 6.75-6.97 against
// 6.42-6.52.)
std::int64_t default_k_rounds(const GemmProblem& p, std::int64_t tiles_k) {
  return bound_by_uploads(p) ? 0 : tiles_k / 2;
}

// The traversal. Out of core: the tiles in tile_order, k innermost, so
// that the pieces in the slots are used while they are there. In core
// (every piece stays): the first `rounds` k pieces (default_k_rounds when
// negative) round by round over all tiles in tile_order, then each tile's
// remaining pieces in turn. Tile by tile from the start, the first tile's
// kernels would wait for all k pieces of its rows and columns.
std::vector<Op> build_ops(const GemmProblem& p, const Sizes& s, std::int64_t rounds) {
  const std::vector<std::int64_t> starts = piece_starts(p, s);
  const std::int64_t tm = ceil_div(p.m, s.mb), tn = ceil_div(p.n, s.nb), tk = static_cast<std::int64_t>(starts.size());
  SlotCache a_cache(s.slots_a), b_cache(s.slots_b);
  const bool in_core = holds_everything(p, s);
  const std::vector<std::pair<std::int64_t, std::int64_t>> order = tile_order(tm, tn, in_core);
  // A lead piece adds a round: the rounds still cover half of k.
  const std::int64_t chosen = default_k_rounds(p, ceil_div(p.k, s.kb)) + (s.lead > 0 ? 1 : 0);
  const std::int64_t across = in_core ? std::clamp<std::int64_t>(rounds < 0 ? chosen : rounds, 0, tk) : 0;
  // The multiplies in issue order: (tile, k piece); tiles are numbered in
  // tile_order, which is also the order in which they first appear.
  std::vector<std::pair<std::int32_t, std::int64_t>> steps;
  for (std::int64_t tp = 0; tp < across; ++tp)
    for (std::size_t t = 0; t < order.size(); ++t) steps.emplace_back(static_cast<std::int32_t>(t), tp);
  for (std::size_t t = 0; t < order.size(); ++t)
    for (std::int64_t tp = across; tp < tk; ++tp) steps.emplace_back(static_cast<std::int32_t>(t), tp);

  std::vector<Op> ops;
  for (const auto& [tile, tp] : steps) {
    const std::int64_t ti = order[static_cast<std::size_t>(tile)].first, tj = order[static_cast<std::size_t>(tile)].second;
    Op c;
    c.tile = tile;
    c.slot = static_cast<std::int32_t>(tile % s.slots_c);
    c.i0 = ti * s.mb;
    c.mi = std::min(s.mb, p.m - c.i0);
    c.j0 = tj * s.nb;
    c.nj = std::min(s.nb, p.n - c.j0);
    if (tp == 0 && p.reads_c) {
      Op up = c;
      up.kind = OpKind::upload_c;
      ops.push_back(up);
    }
    Op mul = c;
    mul.kind = OpKind::multiply;
    mul.p0 = starts[static_cast<std::size_t>(tp)];
    mul.kp = (tp + 1 < tk ? starts[static_cast<std::size_t>(tp + 1)] : p.k) - mul.p0;
    mul.first_k = tp == 0;
    mul.last_k = tp == tk - 1;
    // The A piece (rows of the tile, this k) and the B piece (this k,
    // columns of the tile) go up unless their cache holds them.
    auto place = [&](SlotCache& cache, std::int64_t key, OpKind kind) {
      const auto [slot, missing] = cache.place(key);
      if (missing) {
        Op up = mul;
        up.kind = kind;
        up.slot = slot;
        up.tile = -1;
        (kind == OpKind::upload_a ? up.nj : up.mi) = 0;
        (kind == OpKind::upload_a ? up.j0 : up.i0) = 0;
        up.piece_p0 = up.p0;
        up.piece_kp = up.kp;
        ops.push_back(up);
      }
      return slot;
    };
    mul.a_slot = place(a_cache, ti * tk + tp, OpKind::upload_a);
    mul.b_slot = place(b_cache, tp * tn + tj, OpKind::upload_b);
    // The epilogue's leaves go up after the tile's last A and B pieces,
    // so that they do not hold back its first multiply.
    if (mul.last_k)
      for (std::size_t l = 0; l < p.tile_leaves.size(); ++l) {
        Op up = c;
        up.kind = OpKind::upload_leaf;
        up.leaf = static_cast<std::int32_t>(l);
        ops.push_back(up);
      }
    ops.push_back(mul);
    if (mul.last_k) {
      Op down = c;
      down.kind = OpKind::download_c;
      ops.push_back(down);
    }
  }
  return ops;
}

// Narrow float panels (column_panels) wait for all of A, which every panel
// multiplies over all of k, before their first kernel and their first
// download: 0.34 ms of a call of 0.90 at 2048 (cuBLAS, traced, H200). From
// page-locked memory, where A is 8 MiB or more, the first panel's B goes
// up first and A after it in two parts (halves of k) of its one slot, each
// multiplied into the first panel once it is up; the other panels then
// multiply all of A at once, as before. (Measured on an H200, page-locked,
// three rounds, ms, cuBLAS / own kernel, two parts against none: 2048
// 0.918-0.952 / 0.967-0.986 against 0.941-1.024 / 0.982-1.052, 3072
// 2.14-2.20 / 2.45-2.52 against 2.17-2.27 / 2.48-2.56, 1536 alike. Four
// parts at 2048 and eight at 3072 gained less (0.949-0.995 / 0.968-1.022,
// 2.21-2.23 / 2.46-2.48); at 1024, A of 4 MiB, two parts gained nothing.
// Staged, eight parts at 3072 took 3.07-3.48 ms against 2.99-3.20: each
// staged part costs the host a hand-over.)
constexpr std::int64_t kPartsFromBytes = std::int64_t(8) << 20;
std::int64_t a_parts(const GemmProblem& p) { return !p.staged && p.m * p.k * p.elem_size >= kPartsFromBytes ? 2 : 1; }
std::vector<Op> first_panel_in_parts(const GemmProblem& p, const Sizes& s, std::vector<Op> ops) {
  const std::int64_t tm = ceil_div(p.m, s.mb), tn = ceil_div(p.n, s.nb);
  const std::int64_t depth = round_up(ceil_div(p.k, a_parts(p)), kGranule);
  if (!takes_narrow_float_panels(p) || tm != 1 || tn < 2 || s.kb != p.k || depth >= p.k) return ops;
  // The first panel's ops: [upload_c] upload_a upload_b [upload_leaf...] multiply.
  const auto first_multiply = std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.kind == OpKind::multiply; });
  std::vector<Op> head, leaves;
  const Op* up_a = nullptr;
  for (auto it = ops.begin(); it != first_multiply; ++it) {
    if (it->kind == OpKind::upload_a && up_a != nullptr) return ops;  // (one A piece in these plans)
    if (it->kind == OpKind::upload_a)
      up_a = &*it;
    else if (it->kind == OpKind::upload_leaf)
      leaves.push_back(*it);
    else
      head.push_back(*it);  // upload_c, upload_b
  }
  if (up_a == nullptr || first_multiply == ops.end() || up_a->kp != p.k) return ops;
  std::vector<Op> out = head;
  for (std::int64_t p0 = 0; p0 < p.k; p0 += depth) {
    Op part = *up_a;
    part.p0 = p0;
    part.kp = std::min(depth, p.k - p0);
    out.push_back(part);
    Op mul = *first_multiply;
    mul.p0 = part.p0;
    mul.kp = part.kp;
    mul.first_k = p0 == 0;
    mul.last_k = p0 + part.kp == p.k;
    if (mul.last_k) out.insert(out.end(), leaves.begin(), leaves.end());
    out.push_back(mul);
  }
  out.insert(out.end(), first_multiply + 1, ops.end());
  return out;
}

}  // namespace

std::int64_t c_slot_elements(const GemmProblem& problem, std::int64_t mb, std::int64_t nb) {
  std::int64_t elements = mb * nb;
  for (const LeafTraffic& leaf : problem.tile_leaves)
    elements += ceil_div(
        ElementwisePlan::slot_bytes(leaf.elem_size, ElementwisePlan::piece_rows(leaf, mb),
                                    ElementwisePlan::piece_cols(leaf, nb)),
        problem.elem_size);
  return elements;
}

PipelinePlan plan_pipeline(const GemmProblem& problem, const PipelineLimits& limits) {
  if (problem.m <= 0 || problem.n <= 0 || problem.k <= 0 || problem.elem_size <= 0)
    throw egpu::error("plan_pipeline: sizes must be positive");
  const Sizes s = choose_sizes(problem, limits);
  PipelinePlan plan;
  plan.problem = problem;
  plan.mb = s.mb;
  plan.nb = s.nb;
  plan.kb = s.kb;
  plan.k_lead = s.lead;
  plan.slots_a = s.slots_a;
  plan.slots_b = s.slots_b;
  plan.slots_c = s.slots_c;
  plan.device_bytes = slot_elements(problem, s) * problem.elem_size;
  plan.ops = build_ops(problem, s, limits.k_rounds);
  if (limits.panel <= 0 && limits.k_panel <= 0) plan.ops = first_panel_in_parts(problem, s, std::move(plan.ops));
  for (const Op& op : plan.ops) {
    const std::int64_t e = problem.elem_size;
    switch (op.kind) {
      case OpKind::upload_a: plan.h2d_bytes += op.mi * op.kp * e; break;
      case OpKind::upload_b: plan.h2d_bytes += op.kp * op.nj * e; break;
      case OpKind::upload_c: plan.h2d_bytes += op.mi * op.nj * e; break;
      case OpKind::download_c: plan.d2h_bytes += op.mi * op.nj * e; break;
      case OpKind::upload_leaf: {
        const LeafTraffic& leaf = problem.tile_leaves[static_cast<std::size_t>(op.leaf)];
        plan.h2d_bytes += leaf.elem_size * ElementwisePlan::piece_rows(leaf, op.mi) * ElementwisePlan::piece_cols(leaf, op.nj);
        break;
      }
      case OpKind::multiply:
      case OpKind::evaluate: break;
    }
  }
  // In core: A, B and C cross once (the leaves' pieces always do).
  std::int64_t minimum =
      (problem.m * problem.k + problem.k * problem.n + (problem.reads_c ? problem.m * problem.n : 0)) *
      problem.elem_size;
  for (const Op& op : plan.ops)
    if (op.kind == OpKind::upload_leaf) {
      const LeafTraffic& leaf = problem.tile_leaves[static_cast<std::size_t>(op.leaf)];
      minimum += leaf.elem_size * ElementwisePlan::piece_rows(leaf, op.mi) * ElementwisePlan::piece_cols(leaf, op.nj);
    }
  plan.in_core = plan.h2d_bytes == minimum;
  return plan;
}

}  // namespace egpu::planner
