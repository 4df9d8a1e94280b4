// The pipeline planner (src/planner/pipeline_plan), pure C++. Each plan is
// checked by replaying its operations in issue order against a model of the
// device slots:
//  - every multiply reads, in its A slot, the A piece (i0..i0+mi, p0..p0+kp)
//    and in its B slot the B piece (p0..p0+kp, j0..j0+nj): the last upload
//    into each slot was exactly that piece;
//  - the multiplies of a C tile cover k = [0, k) in order, with first_k /
//    last_k right, all in the tile's C slot; upload_c into that slot comes
//    before the first one exactly when reads_c; a C slot takes a new tile
//    only after the previous one went down;
//  - each tile goes down once, right after (the next operation) its last
//    multiply; tiles are numbered in order of appearance and partition C;
//  - slots in range, piece sizes within mb/nb/kb (the largest used);
//    device_bytes is the slot formula and within the budget; h2d_bytes and
//    d2h_bytes are the sums over the operations;
//  - in_core exactly when every byte of A, B (and C when read) goes up
//    once, and always when all pieces of the chosen tiles fit the budget;
//  - the first multiply comes early: after a small part of the inputs;
//  - with an epilogue's leaves (tile_leaves), each tile's piece of each
//    leaf goes up once, into the tile's C slot (free of the previous tile),
//    before the tile's last multiply; they count in device_bytes, h2d_bytes and
//    in_core;
//  - a budget below the smallest pieces throws egpu::error.
// Random problems (1 .. ~5000, odd sizes, 1), elements of 4/8/16 bytes,
// budgets from tiny (but feasible) to huge, explicit panels now and then.
// Coefficient-wise plans (planner/elementwise_plan) are replayed the same
// way: chunks partition the destination; each evaluate finds, in every
// leaf's slot, its own chunk's piece (a broadcast leaf's piece, uploaded
// once when no chunk cuts along it); no upload overwrites a piece before an
// evaluate read it; an output slot takes a new chunk only after the
// previous one went down; byte counts are the sums; an accumulating problem
// keeps every result on the device whenever that fits.
// Fresh seed each run (printed); replay with EGPU_TEST_SEED.
#define BOOST_TEST_MODULE planner
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "egpu/error.hpp"
#include "planner/elementwise_plan.hpp"
#include "planner/pipeline_plan.hpp"

using egpu::planner::GemmProblem;
using egpu::planner::LeafTraffic;
using egpu::planner::Op;
using egpu::planner::OpKind;
using egpu::planner::PipelineLimits;
using egpu::planner::PipelinePlan;
using egpu::planner::plan_pipeline;
using i64 = std::int64_t;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 g = [] {
    std::uint64_t seed = (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    if (const char* s = std::getenv("EGPU_TEST_SEED"); s != nullptr && *s != '\0') seed = std::strtoull(s, nullptr, 0);
    std::printf("planner_test: seed %llu (replay with EGPU_TEST_SEED)\n", static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    return std::mt19937_64(seed);
  }();
  return g;
}
i64 uniform(i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng()); }
i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

i64 random_dim() {
  switch (uniform(0, 6)) {
    case 0: return 1;
    case 1: return uniform(1, 9);
    case 2: return uniform(2, 300) | 1;                  // odd
    case 3: return 128 * uniform(1, 39) + uniform(-1, 1);  // around the kernels' granule
    case 4: return uniform(1000, 5000) | 1;
    default: return uniform(1, 5000);
  }
}

std::string describe(const GemmProblem& p, const PipelineLimits& l) {
  std::ostringstream s;
  s << "m=" << p.m << " n=" << p.n << " k=" << p.k << " elem=" << p.elem_size << " reads_c=" << p.reads_c
    << " budget=" << l.device_budget_bytes << " panel=" << l.panel << " k_panel=" << l.k_panel
    << " k_rounds=" << l.k_rounds;
  for (const LeafTraffic& t : p.tile_leaves)
    s << " leaf(" << t.elem_size << (t.varies_down_rows ? " rows" : "") << (t.varies_across_cols ? " cols" : "") << ")";
  return s.str();
}
// The problem alone, for checks of plans made through plan_with_room.
std::string shape_text(const GemmProblem& p) {
  std::ostringstream s;
  s << "m=" << p.m << " n=" << p.n << " k=" << p.k << " elem=" << p.elem_size << " flops=" << p.flops_per_element
    << " staged=" << p.staged;
  return s.str();
}
std::string describe_plan(const PipelinePlan& plan) {
  std::ostringstream s;
  s << " -> mb=" << plan.mb << " nb=" << plan.nb << " kb=" << plan.kb << " lead=" << plan.k_lead
    << " slots a/b/c=" << plan.slots_a << "/" << plan.slots_b << "/" << plan.slots_c
    << " device_bytes=" << plan.device_bytes << " ops=" << plan.ops.size() << " in_core=" << plan.in_core;
  return s.str();
}
const char* kind_name(OpKind k) {
  switch (k) {
    case OpKind::upload_a: return "upload_a";
    case OpKind::upload_b: return "upload_b";
    case OpKind::upload_c: return "upload_c";
    case OpKind::multiply: return "multiply";
    case OpKind::upload_leaf: return "upload_leaf";
    case OpKind::evaluate: return "evaluate";
    default: return "download_c";
  }
}
std::string op_text(std::size_t at, const Op& op) {
  std::ostringstream s;
  s << "op #" << at << " " << kind_name(op.kind) << " slot=" << op.slot << " a_slot=" << op.a_slot
    << " b_slot=" << op.b_slot << " tile=" << op.tile << " i0=" << op.i0 << " mi=" << op.mi << " j0=" << op.j0
    << " nj=" << op.nj << " p0=" << op.p0 << " kp=" << op.kp << " first_k=" << op.first_k << " last_k=" << op.last_k;
  return s.str();
}

// Whether the intervals [start, start + len) partition [0, total).
bool partitions(std::vector<std::pair<i64, i64>> iv, i64 total) {
  std::sort(iv.begin(), iv.end());
  i64 at = 0;
  for (const auto& [start, len] : iv) {
    if (start != at || len <= 0) return false;
    at += len;
  }
  return at == total;
}

struct Piece {  // the region of an A piece (r0, rn = rows; p0, kp) or B piece (p0, kp; r0, rn = columns)
  i64 r0 = -1, rn = -1, p0 = -1, kp = -1;
  i64 filled = 0;     // k [p0, p0 + filled) has gone up (its parts, in order)
  bool read = false;  // by a multiply since it went up
  bool operator==(const Piece& o) const { return r0 == o.r0 && rn == o.rn && p0 == o.p0 && kp == o.kp; }
};
struct TileState {
  i64 i0, mi, j0, nj;
  std::int32_t slot;
  std::vector<char> leaves_up;  // per tile leaf: its piece went up
  bool c_uploaded = false;
  i64 next_p = 0;  // where the next multiply must start in k
  bool downloaded = false;
};

// What the check found, beyond pass / fail.
struct Facts {
  double first_multiply_fraction = 0;  // input bytes uploaded before the first multiply / all input bytes
  i64 multiplies = 0;
};

// Bytes a leaf's piece of mi x nj takes, and the elements of the product's
// scalar that one C slot of mb x nb takes with the leaves' pieces beside it
// (each piece's slot on 256 bytes).
i64 leaf_bytes(const LeafTraffic& t, i64 mi, i64 nj) {
  return t.elem_size * (t.varies_down_rows ? mi : 1) * (t.varies_across_cols ? nj : 1);
}
i64 model_c_slot_elements(const GemmProblem& p, i64 mb, i64 nb) {
  i64 elements = mb * nb;
  for (const LeafTraffic& t : p.tile_leaves) elements += ceil_div(ceil_div(leaf_bytes(t, mb, nb), 256) * 256, p.elem_size);
  return elements;
}

// Replays the plan against a model of the slots and checks every invariant.
// Reports (one BOOST_TEST) the first broken invariant and returns false.
bool check_plan(const GemmProblem& p, const PipelineLimits& lim, const PipelinePlan& plan, Facts* facts = nullptr) {
  const i64 e = p.elem_size;
  bool ok = true;
  std::string first_failure;
  auto expect = [&](bool cond, const std::string& msg) {
    if (!cond && ok) first_failure = msg;
    ok = ok && cond;
    return cond;
  };
  auto report = [&] {
    if (!ok) BOOST_TEST(false, describe(p, lim) << describe_plan(plan) << ": " << first_failure);
    return ok;
  };

  expect(plan.problem.m == p.m && plan.problem.n == p.n && plan.problem.k == p.k &&
             plan.problem.elem_size == p.elem_size && plan.problem.reads_c == p.reads_c,
         "plan.problem is not the problem");
  expect(plan.mb >= 1 && plan.mb <= p.m && plan.nb >= 1 && plan.nb <= p.n && plan.kb >= 1 && plan.kb <= p.k,
         "tile sizes outside [1, m/n/k]");
  expect(plan.slots_a >= 1 && plan.slots_b >= 1 && plan.slots_c >= 1, "a slot count is below 1");
  if (!ok) return report();
  const i64 formula = (i64(plan.slots_a) * plan.mb * plan.kb + i64(plan.slots_b) * plan.kb * plan.nb +
                       i64(plan.slots_c) * model_c_slot_elements(p, plan.mb, plan.nb)) *
                      e;
  expect(plan.device_bytes == formula,
         "device_bytes " + std::to_string(plan.device_bytes) + " != slot formula " + std::to_string(formula));
  expect(plan.device_bytes <= lim.device_budget_bytes, "device_bytes over the budget");
  // An explicit panel bounds the tiles, rounded up to the kernels' granule
  // of 128 (the planner balances the tiles and rounds them up to it).
  auto granule = [](i64 x) { return x < 128 ? x : ceil_div(x, 128) * 128; };
  if (lim.panel > 0)
    expect(plan.mb <= granule(lim.panel) && plan.nb <= granule(lim.panel), "C tiles larger than the panel asked for");
  if (lim.k_panel > 0) expect(plan.kb <= granule(lim.k_panel), "k pieces deeper than the k_panel asked for");
  if (!ok) return report();

  std::vector<Piece> a_slot(static_cast<std::size_t>(plan.slots_a)), b_slot(static_cast<std::size_t>(plan.slots_b));
  std::vector<std::int32_t> c_slot(static_cast<std::size_t>(plan.slots_c), -1);  // tile in the slot, -1 free
  std::vector<TileState> tiles;
  // piece_steps: multiplies that finish a k piece of their tile (a piece
  // multiplied in parts counts once).
  i64 h2d = 0, d2h = 0, max_mi = 0, max_nj = 0, max_kp = 0, multiplies = 0, piece_steps = 0;
  i64 uploaded_before_first_multiply = -1;
  // A C tile starts (upload_c, or its first multiply when C is not read):
  // its slot must be free and its region inside C.
  auto new_tile_fault = [&](const Op& o) -> std::string {
    const std::int32_t held = c_slot[static_cast<std::size_t>(o.slot)];
    if (held != -1) return "C slot still holds tile " + std::to_string(held) + ", not yet downloaded";
    if (!(o.mi >= 1 && o.mi <= plan.mb && o.nj >= 1 && o.nj <= plan.nb && o.i0 >= 0 && o.i0 + o.mi <= p.m &&
          o.j0 >= 0 && o.j0 + o.nj <= p.n))
      return "C tile out of range";
    return "";
  };
  i64 leaf_h2d = 0;  // bytes of the leaves' pieces
  auto open_tile = [&](const Op& o) {
    tiles.push_back(TileState{o.i0, o.mi, o.j0, o.nj, o.slot, std::vector<char>(p.tile_leaves.size(), 0)});
    c_slot[static_cast<std::size_t>(o.slot)] = o.tile;
  };
  // The tile an op works on: the next new one (opened here; C must not be
  // read, `without_upload_c` says so otherwise) or an open one, whose region
  // the op's must be. Returns what is wrong, or nothing.
  auto join_tile = [&](const Op& o, const char* without_upload_c) -> std::string {
    if (o.tile < 0 || o.tile > static_cast<std::int32_t>(tiles.size())) return "tile number out of order";
    if (o.tile == static_cast<std::int32_t>(tiles.size())) {
      if (p.reads_c) return without_upload_c;
      const std::string fault = new_tile_fault(o);
      if (!fault.empty()) return fault;
      open_tile(o);
    }
    const TileState& t = tiles[static_cast<std::size_t>(o.tile)];
    if (!(t.i0 == o.i0 && t.mi == o.mi && t.j0 == o.j0 && t.nj == o.nj)) return "region is not its tile's";
    return "";
  };
  const std::size_t count = plan.ops.size();
  for (std::size_t at = 0; at < count && ok; ++at) {
    const Op& op = plan.ops[at];
// Checks one operation; the message is built only on failure.
#define REQUIRE_OP(cond, msg)                          \
  if (!(cond)) {                                       \
    expect(false, op_text(at, op) + ": " + (msg));     \
    break;                                             \
  }
    switch (op.kind) {
      case OpKind::upload_a:
      case OpKind::upload_b: {
        const bool is_a = op.kind == OpKind::upload_a;
        const i64 r0 = is_a ? op.i0 : op.j0, rn = is_a ? op.mi : op.nj, extent = is_a ? p.m : p.n;
        const i64 limit = is_a ? plan.mb : plan.nb;
        REQUIRE_OP(op.slot >= 0 && op.slot < (is_a ? plan.slots_a : plan.slots_b), "slot out of range");
        REQUIRE_OP(rn >= 1 && rn <= limit && r0 >= 0 && r0 + rn <= extent, "piece rows/columns out of range");
        // The piece the slot holds, and the part of it this op writes.
        const i64 pp0 = op.piece_p0, pkp = op.piece_kp;
        REQUIRE_OP(pkp >= 1 && pkp <= plan.kb && pp0 >= 0 && pp0 + pkp <= p.k, "piece k range out of range");
        REQUIRE_OP(op.kp >= 1 && op.p0 >= pp0 && op.p0 + op.kp <= pp0 + pkp, "part outside its piece");
        Piece& held = (is_a ? a_slot : b_slot)[static_cast<std::size_t>(op.slot)];
        const Piece piece{r0, rn, pp0, pkp};
        if (op.p0 == pp0) {
          REQUIRE_OP(held.r0 < 0 || held.read, "overwrites a piece that no multiply read (a wasted upload)");
          REQUIRE_OP(held.r0 < 0 || held.filled == held.kp, "overwrites a piece that went up only in part");
          held = piece;
          held.filled = op.kp;
        } else {
          REQUIRE_OP(held == piece && held.p0 + held.filled == op.p0,
                     "a part of a piece that does not follow the part before it in its slot");
          held.filled += op.kp;
        }
        h2d += rn * op.kp * e;
        break;
      }
      case OpKind::upload_c: {
        REQUIRE_OP(p.reads_c, "upload_c although C is not read (beta == 0)");
        REQUIRE_OP(op.slot >= 0 && op.slot < plan.slots_c, "C slot out of range");
        REQUIRE_OP(op.tile == static_cast<std::int32_t>(tiles.size()),
                  "upload_c of a tile that is not the next new one (tiles are numbered in plan order; C goes up "
                  "once, before the tile's first multiply)");
        REQUIRE_OP(new_tile_fault(op).empty(), new_tile_fault(op));
        open_tile(op);
        tiles.back().c_uploaded = true;
        h2d += op.mi * op.nj * e;
        break;
      }
      case OpKind::multiply: {
        ++multiplies;
        if (uploaded_before_first_multiply < 0) uploaded_before_first_multiply = h2d;
        REQUIRE_OP(op.slot >= 0 && op.slot < plan.slots_c && op.a_slot >= 0 && op.a_slot < plan.slots_a &&
                      op.b_slot >= 0 && op.b_slot < plan.slots_b,
                  "slot out of range");
        const std::string tile_fault = join_tile(op, "first multiply of a tile without its upload_c (C is read)");
        REQUIRE_OP(tile_fault.empty(), tile_fault);
        TileState& t = tiles[static_cast<std::size_t>(op.tile)];
        REQUIRE_OP(op.slot == t.slot, "tile's multiplies in different C slots");
        REQUIRE_OP(!t.downloaded, "multiply into a tile already downloaded");
        REQUIRE_OP(op.p0 == t.next_p, "k pieces of the tile not in order (expected p0 = " + std::to_string(t.next_p) +
                                         ")");
        REQUIRE_OP(op.kp >= 1 && op.kp <= plan.kb && op.p0 + op.kp <= p.k, "k piece out of range");
        REQUIRE_OP(op.first_k == (op.p0 == 0), "first_k wrong");
        REQUIRE_OP(op.last_k == (op.p0 + op.kp == p.k), "last_k wrong");
        Piece& a = a_slot[static_cast<std::size_t>(op.a_slot)];
        Piece& b = b_slot[static_cast<std::size_t>(op.b_slot)];
        a.read = b.read = true;
        // The multiply's k range lies in what has gone up of each piece.
        auto holds = [&](const Piece& x, i64 r0, i64 rn) {
          return x.r0 == r0 && x.rn == rn && op.p0 >= x.p0 && op.p0 + op.kp <= x.p0 + x.filled;
        };
        REQUIRE_OP(holds(a, op.i0, op.mi),
                  "A slot holds piece rows " + std::to_string(a.r0) + "+" + std::to_string(a.rn) + " k " +
                      std::to_string(a.p0) + "+" + std::to_string(a.filled) + " (up), not the multiply's");
        REQUIRE_OP(holds(b, op.j0, op.nj),
                  "B slot holds piece cols " + std::to_string(b.r0) + "+" + std::to_string(b.rn) + " k " +
                      std::to_string(b.p0) + "+" + std::to_string(b.filled) + " (up), not the multiply's");
        t.next_p += op.kp;
        if (op.p0 + op.kp == a.p0 + a.kp) ++piece_steps;
        max_mi = std::max(max_mi, op.mi);
        max_nj = std::max(max_nj, op.nj);
        max_kp = std::max(max_kp, op.kp);
        if (op.last_k) {
          REQUIRE_OP(std::count(t.leaves_up.begin(), t.leaves_up.end(), 1) == static_cast<long>(p.tile_leaves.size()),
                     "the tile's last multiply (and its epilogue) before every leaf's piece went up");
          const bool next_is_download = at + 1 < count && plan.ops[at + 1].kind == OpKind::download_c &&
                                        plan.ops[at + 1].tile == op.tile;
          REQUIRE_OP(next_is_download, "the tile's download_c is not the next operation after its last multiply");
        }
        break;
      }
      case OpKind::upload_leaf: {
        REQUIRE_OP(op.leaf >= 0 && op.leaf < static_cast<std::int32_t>(p.tile_leaves.size()), "no such tile leaf");
        // (A new tile's only k piece comes next.)
        const std::string tile_fault = join_tile(op, "a leaf's piece of a tile before its upload_c (C is read)");
        REQUIRE_OP(tile_fault.empty(), tile_fault);
        TileState& t = tiles[static_cast<std::size_t>(op.tile)];
        REQUIRE_OP(op.slot == t.slot, "a leaf's piece in another C slot than its tile's");
        REQUIRE_OP(t.next_p < p.k && !t.downloaded, "a leaf's piece after the tile's last multiply");
        REQUIRE_OP(!t.leaves_up[static_cast<std::size_t>(op.leaf)], "a leaf's piece of the tile went up twice");
        t.leaves_up[static_cast<std::size_t>(op.leaf)] = 1;
        const i64 bytes = leaf_bytes(p.tile_leaves[static_cast<std::size_t>(op.leaf)], op.mi, op.nj);
        h2d += bytes;
        leaf_h2d += bytes;
        break;
      }
      case OpKind::download_c: {
        REQUIRE_OP(op.tile >= 0 && op.tile < static_cast<std::int32_t>(tiles.size()), "download of an unknown tile");
        TileState& t = tiles[static_cast<std::size_t>(op.tile)];
        REQUIRE_OP(!t.downloaded, "tile downloaded twice");
        REQUIRE_OP(t.next_p == p.k, "tile downloaded before all its k pieces");
        REQUIRE_OP(op.slot == t.slot, "download from another C slot than the tile's");
        REQUIRE_OP(t.i0 == op.i0 && t.mi == op.mi && t.j0 == op.j0 && t.nj == op.nj, "region is not its tile's");
        t.downloaded = true;
        c_slot[static_cast<std::size_t>(op.slot)] = -1;
        d2h += op.mi * op.nj * e;
        break;
      }
      default:
        REQUIRE_OP(false, "unknown operation kind");
    }
  }
#undef REQUIRE_OP
  if (!ok) return report();

  for (const std::vector<Piece>* slots : {&a_slot, &b_slot})
    for (const Piece& piece : *slots) {
      expect(piece.r0 < 0 || piece.read, "a piece went up that no multiply read");
      expect(piece.r0 < 0 || piece.filled == piece.kp, "a piece went up only in part");
    }
  for (std::size_t t = 0; t < tiles.size() && ok; ++t)
    expect(tiles[t].downloaded, "tile " + std::to_string(t) + " never downloaded (k covered up to " +
                                    std::to_string(tiles[t].next_p) + ")");
  expect(h2d == plan.h2d_bytes, "h2d_bytes " + std::to_string(plan.h2d_bytes) + " != sum over uploads " +
                                    std::to_string(h2d));
  expect(d2h == plan.d2h_bytes, "d2h_bytes " + std::to_string(plan.d2h_bytes) + " != sum over downloads " +
                                    std::to_string(d2h));
  expect(d2h == p.m * p.n * e, "C does not come back exactly once");
  if (!ok) return report();

  // The C tiles are a grid of row ranges x column ranges partitioning C.
  std::set<std::pair<i64, i64>> rows, cols;
  std::set<std::pair<std::pair<i64, i64>, std::pair<i64, i64>>> distinct;
  for (const TileState& t : tiles) {
    rows.insert({t.i0, t.mi});
    cols.insert({t.j0, t.nj});
    distinct.insert({{t.i0, t.mi}, {t.j0, t.nj}});
  }
  expect(partitions({rows.begin(), rows.end()}, p.m), "row ranges of the C tiles do not partition [0, m)");
  expect(partitions({cols.begin(), cols.end()}, p.n), "column ranges of the C tiles do not partition [0, n)");
  expect(distinct.size() == tiles.size() && tiles.size() == rows.size() * cols.size(),
         "C tiles are not each (row range, column range) exactly once");
  expect(static_cast<i64>(rows.size()) == plan.tiles_m() && static_cast<i64>(cols.size()) == plan.tiles_n(),
         "tiles_m()/tiles_n() disagree with the operations");
  expect(max_mi == plan.mb && max_nj == plan.nb && max_kp == plan.kb,
         "mb/nb/kb are not the largest sizes used (used " + std::to_string(max_mi) + "/" + std::to_string(max_nj) +
             "/" + std::to_string(max_kp) + ")");
  expect(piece_steps == static_cast<i64>(tiles.size()) * plan.tiles_k(), "k pieces per tile disagree with tiles_k()");

  // In core: every byte of the inputs goes up once.
  const i64 minimum = (p.m * p.k + p.k * p.n + (p.reads_c ? p.m * p.n : 0)) * e + leaf_h2d;
  expect(h2d >= minimum, "fewer bytes up than A, B (and C) hold");
  expect(plan.in_core == (h2d == minimum), "in_core disagrees with the bytes uploaded");
  const i64 tm = plan.tiles_m(), tn = plan.tiles_n(), tk = plan.tiles_k();
  const double all_pieces = (double(tm * tk) * double(plan.mb * plan.kb) + double(tk * tn) * double(plan.kb * plan.nb) +
                             double(tm * tn) * double(model_c_slot_elements(p, plan.mb, plan.nb))) *
                            double(e);
  if (all_pieces <= double(lim.device_budget_bytes))
    expect(plan.in_core, "every piece of the chosen tiles fits the budget (" +
                             std::to_string(static_cast<i64>(all_pieces)) + " bytes) but the plan is not in core");
  if (facts != nullptr) {
    facts->first_multiply_fraction = double(uploaded_before_first_multiply) / double(minimum);
    facts->multiplies = multiplies;
  }
  return report();
}

// The smallest budget the random cases use, in bytes: one slot each of
// t x t x t pieces (clipped to the problem) with at most about
// `max_multiplies` of them, so that every plan stays quick to walk.
i64 feasible_floor(const GemmProblem& p, double max_multiplies) {
  i64 t = 1;
  while (double(ceil_div(p.m, t)) * double(ceil_div(p.n, t)) * double(ceil_div(p.k, t)) > max_multiplies) t *= 2;
  const i64 mt = std::min(p.m, t), nt = std::min(p.n, t), kt = std::min(p.k, t);
  return (mt * kt + kt * nt + model_c_slot_elements(p, mt, nt)) * p.elem_size;
}

GemmProblem problem(i64 m, i64 n, i64 k, i64 elem_size, bool reads_c = false) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.elem_size = elem_size;
  p.reads_c = reads_c;
  return p;
}

// The same with `flops` real flops per multiply-add (8: complex), its
// operands staged from pageable memory or not.
GemmProblem problem(i64 m, i64 n, i64 k, i64 elem_size, i64 flops, bool staged) {
  GemmProblem p = problem(m, n, k, elem_size);
  p.flops_per_element = flops;
  p.staged = staged;
  return p;
}

// Plans `p` through 80 GiB (room for any product of these tests whole) into
// `plan`, checks it and that it is in core; false once a check failed.
bool plan_with_room(const GemmProblem& p, PipelinePlan& plan) {
  PipelineLimits lim;
  lim.device_budget_bytes = i64(80) << 30;
  plan = plan_pipeline(p, lim);
  if (!check_plan(p, lim, plan)) return false;
  BOOST_TEST(plan.in_core, describe(p, lim) << describe_plan(plan) << ": not in core");
  return plan.in_core;
}

GemmProblem random_problem() {
  GemmProblem p;
  p.m = random_dim();
  p.n = random_dim();
  p.k = random_dim();
  p.elem_size = std::vector<i64>{4, 8, 16}[static_cast<std::size_t>(uniform(0, 2))];
  p.reads_c = uniform(0, 1) == 1;
  p.a_runs_along_m = uniform(0, 1) == 1;
  p.b_runs_along_k = uniform(0, 1) == 1;
  // An epilogue with other leaves now and then (broadcast ones too).
  if (uniform(0, 2) == 0)
    for (i64 l = uniform(1, 3); l > 0; --l)
      p.tile_leaves.push_back(
          LeafTraffic{std::vector<i64>{4, 8, 16}[static_cast<std::size_t>(uniform(0, 2))], uniform(0, 3) != 0,
                      uniform(0, 3) != 1});
  return p;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_problems_and_budgets) {
  int planned = 0, in_core = 0, early_checked = 0;
  i64 total_ops = 0;
  for (int t = 0; t < 1500; ++t) {
    const GemmProblem p = random_problem();
    const i64 whole = (p.m * p.k + p.k * p.n + p.m * p.n) * p.elem_size;
    PipelineLimits lim;
    switch (uniform(0, 5)) {
      case 0: lim.device_budget_bytes = whole; break;                                         // fits exactly
      case 1: lim.device_budget_bytes = whole * uniform(1, 3) + uniform(0, 4096); break;     // fits
      case 2: lim.device_budget_bytes = whole / uniform(2, 50) + uniform(0, p.elem_size); break;  // out of core
      case 3: lim.device_budget_bytes = uniform(3, 3000) * p.elem_size + uniform(0, p.elem_size - 1); break;  // tiny
      case 4: lim.device_budget_bytes = i64(1) << uniform(34, 37); break;                    // 16 .. 128 GiB
      default: lim.device_budget_bytes = i64(1) << uniform(12, 28); break;                   // 4 KiB .. 256 MiB
    }
    // Keep each plan's operation count walkable (a few 1e4 multiplies).
    lim.device_budget_bytes = std::max(lim.device_budget_bytes, feasible_floor(p, 1e4));
    if (uniform(0, 3) == 0) {
      const i64 choices[] = {uniform(1, 16), uniform(17, 300), 128 * uniform(1, 8), uniform(300, 3000)};
      lim.panel = choices[uniform(0, 3)];
      lim.k_panel = uniform(0, 2) == 0 ? 0 : choices[uniform(0, 3)];
      if (double(ceil_div(p.m, lim.panel)) * double(ceil_div(p.n, lim.panel)) *
              double(ceil_div(p.k, lim.k_panel > 0 ? lim.k_panel : 1)) >
          2e4)
        lim.panel = lim.k_panel = 0;
    }
    if (uniform(0, 3) == 0) lim.k_rounds = uniform(0, 5);
    PipelinePlan plan;
    try {
      plan = plan_pipeline(p, lim);
    } catch (const egpu::error& e) {
      BOOST_TEST(false, describe(p, lim) << ": refused although a plan of cube tiles fits (" << e.what() << ")");
      continue;
    }
    Facts facts;
    if (!check_plan(p, lim, plan, &facts)) break;
    ++planned;
    in_core += plan.in_core ? 1 : 0;
    total_ops += static_cast<i64>(plan.ops.size());
    // Large products start computing after a small part of the inputs.
    if (p.m >= 4096 && p.n >= 4096 && p.k >= 4096 && lim.panel == 0 && lim.k_panel == 0) {
      ++early_checked;
      BOOST_TEST(facts.first_multiply_fraction < 0.25,
                 describe(p, lim) << describe_plan(plan) << ": first multiply after "
                                  << facts.first_multiply_fraction << " of the input bytes");
    }
  }
  BOOST_TEST_MESSAGE("planned " << planned << " (" << in_core << " in core), " << total_ops << " operations, "
                                << early_checked << " large products checked for an early first multiply");
  BOOST_TEST(planned == 1500);
  BOOST_TEST(in_core > 100);
  BOOST_TEST(planned - in_core > 100);
}

// When A, B and C fit the budget together (whole = (mk + kn + mn) elem)
// with room to spare, each byte of A, B (and C when read) crosses PCIe
// once. At a budget of exactly `whole` (or a little more) the chosen
// tiles, padded at the edges, may not all fit: then only check_plan's rule
// applies (in core whenever all pieces of the chosen tiles fit).
BOOST_AUTO_TEST_CASE(a_problem_that_fits_goes_up_once) {
  int tight = 0, tight_in_core = 0;
  for (int t = 0; t < 300; ++t) {
    const GemmProblem p = random_problem();
    const i64 whole = (p.m * p.k + p.k * p.n + model_c_slot_elements(p, p.m, p.n)) * p.elem_size;
    for (i64 budget : {whole, whole + uniform(1, 1 << 20), 2 * whole, i64(80) << 30}) {
      PipelineLimits lim;
      lim.device_budget_bytes = budget;
      const PipelinePlan plan = plan_pipeline(p, lim);
      if (!check_plan(p, lim, plan)) return;
      if (budget < 2 * whole) {
        ++tight;
        tight_in_core += plan.in_core ? 1 : 0;
        continue;
      }
      BOOST_TEST(plan.in_core, describe(p, lim) << describe_plan(plan) << ": A, B and C fit twice but the plan is not in core");
      // Each tile's piece of each leaf (a broadcast leaf's piece is one
      // line, again for every tile).
      i64 leaves = 0;
      for (const LeafTraffic& leaf : p.tile_leaves)
        leaves += leaf.elem_size * (leaf.varies_down_rows ? p.m : plan.tiles_m()) * (leaf.varies_across_cols ? p.n : plan.tiles_n());
      BOOST_TEST(plan.h2d_bytes == (p.m * p.k + p.k * p.n + (p.reads_c ? p.m * p.n : 0)) * p.elem_size + leaves,
                 describe(p, lim) << describe_plan(plan));
      BOOST_TEST(plan.d2h_bytes == p.m * p.n * p.elem_size, describe(p, lim));
    }
  }
  BOOST_TEST_MESSAGE("budget of exactly A + B + C (or up to 1 MiB more): " << tight_in_core << " of " << tight
                                                                           << " plans in core");
}

// The headline case: 16384^3 fp64 fits an 80 GB device; the pipeline must
// start multiplying after a small part of the inputs arrived, not after
// all of them. Also fp32 / complex<double>, C read or not, and through a
// 4 GiB budget (out of core).
// Calls f(problem, limits, plan) for 16384^3 with 4-, 8- and 16-byte
// elements, C read or not, through each of the budgets.
template <class F>
void for_each_16384_cube(std::initializer_list<i64> budgets, F f) {
  for (i64 elem : {4, 8, 16})
    for (bool reads_c : {false, true})
      for (i64 budget : budgets) {
        const GemmProblem p = problem(16384, 16384, 16384, elem, reads_c);
        PipelineLimits lim;
        lim.device_budget_bytes = budget;
        f(p, lim, plan_pipeline(p, lim));
      }
}

BOOST_AUTO_TEST_CASE(large_products_start_early) {
  for_each_16384_cube({i64(80) << 30, i64(4) << 30}, [](const GemmProblem& p, const PipelineLimits& lim,
                                                         const PipelinePlan& plan) {
    Facts facts;
    if (!check_plan(p, lim, plan, &facts)) return;
    const i64 whole = 3 * p.m * p.m * p.elem_size;
    if (whole <= lim.device_budget_bytes)
      BOOST_TEST(plan.in_core, describe(p, lim) << describe_plan(plan) << ": fits but not in core");
    BOOST_TEST(facts.first_multiply_fraction < 0.25, describe(p, lim) << describe_plan(plan)
                                                                       << ": first multiply after "
                                                                       << facts.first_multiply_fraction
                                                                       << " of the input bytes");
    BOOST_TEST_MESSAGE(describe(p, lim) << describe_plan(plan) << " first multiply after "
                                        << facts.first_multiply_fraction << " of the inputs, h2d "
                                        << plan.h2d_bytes << " bytes");
  });
  // Rectangular and odd large shapes, default panels, in core.
  for (const auto& [m, n, k] : std::vector<std::tuple<i64, i64, i64>>{
           {20001, 8191, 12289}, {4097, 30000, 4097}, {16384, 16384, 100000}, {50000, 50000, 4096}}) {
    const GemmProblem p = problem(m, n, k, 8, true);
    PipelineLimits lim;
    lim.device_budget_bytes = i64(80) << 30;
    const PipelinePlan plan = plan_pipeline(p, lim);
    Facts facts;
    if (!check_plan(p, lim, plan, &facts)) return;
    BOOST_TEST(facts.first_multiply_fraction < 0.25, describe(p, lim) << describe_plan(plan)
                                                                       << ": first multiply after "
                                                                       << facts.first_multiply_fraction
                                                                       << " of the input bytes");
  }
}

// In core, the tiles come in growing squares: max(row, column) of the
// tiles never decreases in the order of their first multiplies, so the
// work that can start grows with the bytes that have gone up. C is cut so
// that the last tile (computed and brought down after the last upload) is
// a quarter of C or less for double (4 bytes or more per flop) from
// page-locked memory from 1024 up, a half or less otherwise from 2048 up.
BOOST_AUTO_TEST_CASE(in_core_tiles_grow_in_squares) {
  for (const auto& [m, n, k] : std::vector<std::tuple<i64, i64, i64>>{
           {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {3001, 1500, 777},
           {4096, 1024, 2048}, {1024, 8192, 512}, {12000, 12000, 12000}}) {
    for (const auto& [elem, flops] : std::vector<std::pair<i64, i64>>{{4, 2}, {8, 2}, {8, 8}, {16, 8}}) {
      for (bool staged : {false, true}) {
        const GemmProblem p = problem(m, n, k, elem, flops, staged);
        PipelinePlan plan;
        if (!plan_with_room(p, plan)) return;
        const i64 tiles = plan.tiles_m() * plan.tiles_n();
        if (!staged && elem >= 4 * flops)
          BOOST_TEST(tiles >= 4, shape_text(p) << describe_plan(plan) << ": a last tile of more than a quarter of C");
        else if (std::max(m, n) >= 2048)
          BOOST_TEST(tiles >= 2, shape_text(p) << describe_plan(plan) << ": one tile");
        i64 shell = 0;
        for (const Op& op : plan.ops) {
          if (op.kind != OpKind::multiply || !op.first_k) continue;
          const i64 s = std::max(op.i0 / plan.mb, op.j0 / plan.nb);
          BOOST_TEST(s >= shell, shape_text(p) << describe_plan(plan) << ": tile at " << op.i0 << ", " << op.j0
                                                << " after a tile of square " << shell);
          shell = std::max(shell, s);
        }
      }
    }
  }
}

// A real product of at most 4096 rows bound by its uploads (fewer than
// 1024 flops per byte of A and B) from page-locked memory, or real float
// of at most 768 flops per byte from any memory, takes column panels in
// core: every tile spans all rows of C, so every A piece is whole columns
// of A; the last panel is at most a quarter of C for double and a half for
// float; float of at most 768 flops per byte takes panels at most 256 wide
// with pieces of all of k (up to 4096), float of more pieces of a part of
// k; there are at most 16 panels, left to right. Products of more rows, staged ones but
// that float, and real ones of more flops per byte (float at 4096 cubed)
// keep tiles of fewer rows.
BOOST_AUTO_TEST_CASE(upload_bound_products_take_column_panels) {
  int panels = 0, others = 0;
  for (const auto& [m, n, k] : std::vector<std::tuple<i64, i64, i64>>{
           {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {3001, 1500, 777}, {4096, 1024, 2048},
           {1024, 8192, 512}, {1, 5000, 300}, {4097, 4097, 1024}, {8192, 8192, 8192}, {3584, 3584, 3584},
           {64, 100000, 64}}) {
    for (const auto& [elem, flops] : std::vector<std::pair<i64, i64>>{{4, 2}, {8, 2}, {8, 8}, {16, 8}}) {
      for (bool staged : {false, true}) {
        const GemmProblem p = problem(m, n, k, elem, flops, staged);
        PipelinePlan plan;
        if (!plan_with_room(p, plan)) return;
        const double per_byte = double(flops) * double(m) * double(n) * double(k) /
                                (double(elem) * (double(m) * double(k) + double(k) * double(n)));
        const bool narrow = elem == 4 && flops == 2 && per_byte <= 768;
        const bool expected = (!staged || narrow) && flops == 2 && m <= 4096 && per_byte < 1024;
        if (!expected) {
          // (Complex or staged products of fewer than 2048 rows may span
          // them all by their square defaults.)
          if (m >= 2048 || (!staged && flops == 2))
            BOOST_TEST(plan.mb < m, shape_text(p) << describe_plan(plan) << ": column panels");
          ++others;
          continue;
        }
        BOOST_TEST(plan.mb == m, shape_text(p) << describe_plan(plan) << ": not column panels");
        ++panels;
        const i64 last_panel_max = narrow ? std::max<i64>(256, (n / 16 + 255) / 128 * 128)
                                   : elem == 8 ? std::max<i64>(256, n / 4)
                                               : std::max<i64>(128, n / 2);
        if (narrow)
          BOOST_TEST(plan.kb == std::min<i64>(k, 4096), shape_text(p) << describe_plan(plan) << ": float pieces "
                                                                      << plan.kb << " deep");
        else if (elem == 4)
          BOOST_TEST(plan.kb < k, shape_text(p) << describe_plan(plan) << ": float pieces of all of k");
        i64 last_j0 = -1;
        int panels_here = 0;
        for (const Op& op : plan.ops) {
          if (op.kind == OpKind::upload_a)
            BOOST_TEST((op.i0 == 0 && op.mi == m), shape_text(p) << describe_plan(plan) << ": an A piece of rows "
                                                                 << op.i0 << "+" << op.mi);
          if (op.kind != OpKind::multiply || !op.first_k) continue;
          BOOST_TEST(op.j0 > last_j0, shape_text(p) << describe_plan(plan) << ": panel at " << op.j0 << " after "
                                                    << last_j0);
          last_j0 = op.j0;
          ++panels_here;
          if (op.j0 + op.nj == n || narrow)
            BOOST_TEST(op.nj <= last_panel_max, shape_text(p) << describe_plan(plan) << ": a panel of " << op.nj
                                                              << " columns");
        }
        BOOST_TEST(panels_here <= 16, shape_text(p) << describe_plan(plan) << ": " << panels_here << " panels");
      }
    }
  }
  BOOST_TEST(panels >= 12);
  BOOST_TEST(others > 20);
}

// Narrow float panels multiply A, all of k, into every panel. From
// page-locked memory, where A is 8 MiB or more, the first panel's B goes up
// first and A after it in two parts of its one slot, each multiplied into
// the first panel once it is up, so that the first kernel waits for half of
// A rather than all of it; the other panels multiply all of A at once.
// Other plans upload whole pieces.
BOOST_AUTO_TEST_CASE(narrow_float_panels_multiply_the_first_parts_of_a_early) {
  for (const auto& [n, pinned_parts] : std::vector<std::pair<i64, i64>>{{1024, 1}, {1536, 2}, {2048, 2}, {3072, 2}})
    for (bool staged : {false, true}) {
      const i64 parts = staged ? 1 : pinned_parts;
      const GemmProblem p = problem(n, n, n, 4, 2, staged);
      PipelinePlan plan;
      if (!plan_with_room(p, plan)) return;
      Facts facts;
      if (!check_plan(p, PipelineLimits{i64(80) << 30}, plan, &facts)) return;
      i64 a_uploads = 0, first_panel_multiplies = 0, whole_multiplies = 0;
      for (const Op& op : plan.ops) {
        if (op.kind == OpKind::upload_a) {
          ++a_uploads;
          BOOST_TEST((op.piece_p0 == 0 && op.piece_kp == n), shape_text(p) << describe_plan(plan) << ": an A piece of k "
                                                                          << op.piece_p0 << "+" << op.piece_kp);
        }
        if (op.kind != OpKind::multiply) continue;
        (op.tile == 0 ? first_panel_multiplies : whole_multiplies) += 1;
        if (op.tile > 0) BOOST_TEST(op.kp == n, shape_text(p) << describe_plan(plan) << ": panel " << op.tile
                                                               << " multiplies k " << op.p0 << "+" << op.kp);
      }
      BOOST_TEST(a_uploads == parts, shape_text(p) << describe_plan(plan) << ": A in " << a_uploads << " parts");
      BOOST_TEST(first_panel_multiplies == parts, shape_text(p) << describe_plan(plan));
      BOOST_TEST(whole_multiplies == plan.tiles_n() - 1, shape_text(p) << describe_plan(plan));
      BOOST_TEST((plan.ops.front().kind == (parts > 1 ? OpKind::upload_b : OpKind::upload_a)),
                 shape_text(p) << describe_plan(plan) << ": first op " << kind_name(plan.ops.front().kind));
      // Before the first multiply: the first panel's B and one part of A.
      const double before = double(n * plan.nb + n * ceil_div(n, parts)) / double(2 * n * n);
      BOOST_TEST(facts.first_multiply_fraction <= before + 0.02,
                 shape_text(p) << describe_plan(plan) << ": first multiply after " << facts.first_multiply_fraction);
    }
  // Whole pieces elsewhere: double's panels, float at 4096, an explicit k_panel.
  for (const auto& [n, elem] : std::vector<std::pair<i64, i64>>{{2048, 8}, {4096, 4}, {2048, 4}}) {
    GemmProblem p = problem(n, n, n, elem, 2, false);
    PipelineLimits lim{i64(80) << 30};
    if (n == 2048 && elem == 4) lim.k_panel = n;
    const PipelinePlan plan = plan_pipeline(p, lim);
    if (!check_plan(p, lim, plan)) return;
    for (const Op& op : plan.ops)
      if (op.kind == OpKind::upload_a || op.kind == OpKind::upload_b)
        BOOST_TEST((op.piece_p0 == op.p0 && op.piece_kp == op.kp), shape_text(p) << describe_plan(plan));
  }
}

// Real float from 8192 up is bound by its kernels, not its uploads: its
// C tiles are a quarter of the larger side (at most 8192), so that the
// multiplies and the download that follow the last upload are a small part
// of C, and its pieces 4096 deep, on which the kernels keep their rate;
// page-locked or staged alike.
BOOST_AUTO_TEST_CASE(float_from_8192_takes_quarter_tiles_4096_deep) {
  for (i64 n : {8192, 12000, 16384, 32768})
    for (bool staged : {false, true}) {
      const GemmProblem p = problem(n, n, n, 4, 2, staged);
      PipelinePlan plan;
      if (!plan_with_room(p, plan)) return;
      BOOST_TEST((plan.mb == plan.nb && plan.mb <= std::min<i64>(8192, ceil_div(n, 4 * 128) * 128)),
                 shape_text(p) << describe_plan(plan) << ": tiles larger than a quarter of C's side");
      BOOST_TEST(plan.tiles_m() * plan.tiles_n() >= 16,
                 shape_text(p) << describe_plan(plan) << ": fewer than 16 tiles");
      BOOST_TEST(plan.kb == 4096, shape_text(p) << describe_plan(plan) << ": pieces not 4096 deep");
    }
}

// Real double from 8192 up, page-locked, takes thin tiles in core: as long
// and as deep as the square tiles it takes otherwise (4096) and at
// most a sixteenth of the other side (at least 512) thin, on the side along
// which the host's runs do not go, so that no piece goes up in shorter runs
// than the square tiles' pieces. With A column-major and B row-major, and
// from pageable memory, the tiles stay square.
BOOST_AUTO_TEST_CASE(large_page_locked_double_takes_thin_tiles) {
  int thin = 0;
  for (const auto& [m, n, k] : std::vector<std::tuple<i64, i64, i64>>{
           {8192, 8192, 8192}, {12288, 12288, 12288}, {16384, 16384, 16384}, {8192, 30000, 9000}, {20001, 8191, 12289},
           {8192, 8192, 4096}})
    for (bool staged : {false, true}) {
      // The square tiles: A column-major, B row-major.
      GemmProblem square_p = problem(m, n, k, 8, 2, staged);
      square_p.b_runs_along_k = false;
      PipelinePlan square;
      if (!plan_with_room(square_p, square)) return;
      BOOST_TEST((std::min(square.mb, square.nb) >= 2048 && std::max(square.mb, square.nb) <= 4096),
                 shape_text(square_p) << describe_plan(square) << ": A column-major, B row-major: tiles not square");
      for (bool a_col : {true, false})
        for (bool b_col : {true, false}) {
          GemmProblem p = problem(m, n, k, 8, 2, staged);
          p.a_runs_along_m = a_col;
          p.b_runs_along_k = b_col;
          PipelinePlan plan;
          if (!plan_with_room(p, plan)) return;
          const std::string what = shape_text(p) + " a_col=" + std::to_string(a_col) +
                                   " b_col=" + std::to_string(b_col) + describe_plan(plan) + describe_plan(square);
          if (staged || std::min(m, n) < 8192 || k < 8192 || (a_col && !b_col)) {
            BOOST_TEST((plan.mb == square.mb && plan.nb == square.nb && plan.kb == square.kb),
                       what << ": not the square tiles");
            continue;
          }
          ++thin;
          // Thin along n where B's runs go down its columns (A's runs then
          // span the tiles' rows), else along m (A's runs go along k).
          const i64 thin_side = b_col ? plan.nb : plan.mb, side = b_col ? n : m;
          BOOST_TEST((thin_side >= 512 && thin_side <= std::max<i64>(512, ceil_div(side, 16 * 128) * 128)),
                     what << ": thin side not a sixteenth of C's side");
          BOOST_TEST((b_col ? plan.mb == square.mb : plan.nb == square.nb),
                     what << ": long side not the square tiles'");
          BOOST_TEST(plan.kb == square.kb, what << ": pieces not as deep as the square tiles'");
        }
    }
  BOOST_TEST(thin == 12);
}

// The multiplies of an in-core plan with k_rounds = r: the first r k
// pieces round by round over every tile (in the order of the tiles' first
// multiplies), then each tile's remaining pieces in turn; r from 0 to past
// the number of pieces, and the default (-1). Out of core the rounds do
// not apply: each tile's pieces come one after another.
BOOST_AUTO_TEST_CASE(k_rounds_then_tiles) {
  int in_core = 0, out_of_core = 0;
  for (int t = 0; t < 300; ++t) {
    const GemmProblem p = random_problem();
    PipelineLimits lim;
    const i64 whole = (p.m * p.k + p.k * p.n + model_c_slot_elements(p, p.m, p.n)) * p.elem_size;
    lim.device_budget_bytes = uniform(0, 1) ? 2 * whole : std::max(whole / uniform(2, 8), feasible_floor(p, 1e4));
    lim.panel = uniform(0, 1) ? 0 : uniform(1, 4) * 128;
    lim.k_panel = uniform(0, 1) ? 0 : uniform(1, 4) * 64;
    lim.k_rounds = uniform(-1, 6);
    const PipelinePlan plan = plan_pipeline(p, lim);
    if (!check_plan(p, lim, plan)) return;
    const i64 tk = plan.tiles_k();
    // (tile, k piece) of each multiply in plan order (a piece multiplied in
    // parts once).
    std::vector<std::pair<i64, i64>> seen;
    for (const Op& op : plan.ops)
      if (op.kind == OpKind::multiply) {
        const std::pair<i64, i64> step{op.tile, plan.piece_of(op.p0)};
        if (seen.empty() || seen.back() != step) seen.push_back(step);
      }
    const i64 tiles = plan.tiles_m() * plan.tiles_n();
    const bool all_resident = plan.slots_a == plan.tiles_m() * tk && plan.slots_b == tk * plan.tiles_n() &&
                              plan.slots_c == tiles;
    i64 rounds = 0;
    if (all_resident) {
      ++in_core;
      if (lim.k_rounds >= 0) {
        rounds = std::min(lim.k_rounds, tk);
      } else {
        // The default: half of the pieces when the product does 1024 flops
        // or more per byte of A and B, else none.
        const double flops = double(p.flops_per_element) * double(p.m) * double(p.n) * double(p.k);
        const double bytes = double(p.elem_size) * (double(p.m) * double(p.k) + double(p.k) * double(p.n));
        rounds = flops >= 1024 * bytes ? tk / 2 : 0;
      }
    } else {
      ++out_of_core;
    }
    std::vector<std::pair<i64, i64>> expected;
    for (i64 r = 0; r < rounds; ++r)
      for (i64 tile = 0; tile < tiles; ++tile) expected.emplace_back(tile, r);
    for (i64 tile = 0; tile < tiles; ++tile)
      for (i64 r = rounds; r < tk; ++r) expected.emplace_back(tile, r);
    BOOST_TEST((seen == expected), describe(p, lim) << " k_rounds=" << lim.k_rounds << describe_plan(plan)
                                                    << ": multiplies not in " << rounds << " rounds then tile by tile");
  }
  BOOST_TEST(in_core > 50);
  BOOST_TEST(out_of_core > 50);
}

// Real double staged from pageable memory and bound by its uploads (fewer
// than 1024 flops per byte of A and B), of 4096 to 8191 rows or columns,
// takes C tiles of at most a quarter of the larger side (rounded up to
// 128) and pieces of all of k up to 4096 (deeper k in pieces of 2048 to
// 4096), tile by tile. The other staged products (double of 8192 and more
// or of less than 4096 or of more flops per byte, float, complex) take
// other tiles or pieces; page-locked products, which take quarter tiles
// of deep pieces by other rules, are not checked for it.
BOOST_AUTO_TEST_CASE(staged_double_from_4096_takes_quarter_tiles_of_all_of_k) {
  for (const auto& [m, n, k] : std::vector<std::tuple<i64, i64, i64>>{
           {4096, 4096, 4096}, {6000, 6000, 6000}, {4096, 1000, 3000}, {5000, 7000, 9000}, {7999, 300, 4097},
           {8192, 8192, 8192}, {2048, 2048, 2048}, {3000, 4000, 2000}, {8000, 8000, 50000}}) {
    for (const auto& [elem, flops] : std::vector<std::pair<i64, i64>>{{8, 2}, {4, 2}, {16, 8}}) {
      for (bool staged : {false, true}) {
        const GemmProblem p = problem(m, n, k, elem, flops, staged);
        PipelinePlan plan;
        if (!plan_with_room(p, plan)) return;
        const i64 larger = std::max(m, n), quarter = ((larger + 3) / 4 + 127) / 128 * 128;
        const double per_byte = 2.0 * double(m) * double(n) * double(k) / (8.0 * double(k) * double(m + n));
        const bool expected = staged && elem == 8 && flops == 2 && per_byte < 1024 && larger >= 4096 && larger < 8192;
        const bool whole_k = plan.k_lead == 0 && (k <= 4096 ? plan.kb == k : plan.kb >= 2048 && plan.kb <= 4096);
        const bool quarters = plan.mb <= quarter && plan.nb <= quarter;
        if (staged)
          BOOST_TEST((whole_k && quarters) == expected, shape_text(p) << describe_plan(plan)
                                                                      << ": quarter tiles of all of k "
                                                                      << (expected ? "expected" : "not expected"));
        if (!expected) continue;
        i64 rounds_multiplies = 0;  // tile by tile: each tile's multiplies follow one another
        std::int32_t last_tile = -1;
        for (const Op& op : plan.ops)
          if (op.kind == OpKind::multiply) {
            if (op.tile < last_tile) ++rounds_multiplies;
            last_tile = op.tile;
          }
        BOOST_TEST(rounds_multiplies == 0, shape_text(p) << describe_plan(plan) << ": a tile comes back in rounds");
      }
    }
  }
}

// In the rounds, every piece that goes up after the first two frees a
// multiply or more: the multiplies whose A and B pieces are all up are at
// least the uploads less one, at each upload of the rounds. (Tile by tile,
// the first tile's multiplies would need two pieces each.) Large products
// in core at their default sizes and rounds.
BOOST_AUTO_TEST_CASE(rounds_free_a_multiply_per_upload) {
  for (const auto& [n, elem, flops] : std::vector<std::tuple<i64, i64, i64>>{
           {16384, 8, 2}, {16384, 4, 2}, {8192, 8, 2}, {8192, 4, 2}, {4096, 4, 2}, {8192, 16, 8}, {20000, 8, 2}}) {
    for (bool staged : {false, true}) {
      const GemmProblem p = problem(n, n, n, elem, flops, staged);
      PipelinePlan plan;
      if (!plan_with_room(p, plan)) return;
      const i64 tiles = plan.tiles_m() * plan.tiles_n(), rounds = plan.tiles_k() / 2;
      BOOST_TEST(rounds >= 1, shape_text(p) << describe_plan(plan) << ": no rounds");
      std::set<std::pair<i64, i64>> a_up, b_up;  // (row or column of tiles, k piece)
      i64 uploads = 0, ready = 0, multiplies = 0;
      for (const Op& op : plan.ops) {
        if (op.kind == OpKind::upload_a) a_up.insert({op.i0 / plan.mb, plan.piece_of(op.p0)});
        if (op.kind == OpKind::upload_b) b_up.insert({op.j0 / plan.nb, plan.piece_of(op.p0)});
        if (op.kind == OpKind::multiply) ++multiplies;
        if (op.kind != OpKind::upload_a && op.kind != OpKind::upload_b) continue;
        if (multiplies >= rounds * tiles) break;  // past the rounds
        ++uploads;
        ready = 0;
        for (const auto& [i, pa] : a_up)
          for (const auto& [j, pb] : b_up) ready += pa == pb ? 1 : 0;
        BOOST_TEST(ready >= uploads - 1, shape_text(p) << describe_plan(plan) << ": after " << uploads
                                                          << " uploads only " << ready << " multiplies can run");
      }
      BOOST_TEST(uploads >= 2 * rounds, shape_text(p) << describe_plan(plan) << ": fewer uploads than the rounds need");
    }
  }
}

// In core, real float from 8192 up (bound by its kernels, in rounds) cuts
// its first k piece in two: a lead piece a quarter as deep goes up and is
// multiplied first, so the first multiply waits for the lead pieces of A
// and B only, a quarter of the bytes of whole first pieces. Other products
// keep uniform pieces.
BOOST_AUTO_TEST_CASE(float_from_8192_starts_with_a_lead_piece) {
  for (const auto& [n, elem, flops] : std::vector<std::tuple<i64, i64, i64>>{
           {4096, 4, 2}, {8192, 4, 2}, {16384, 4, 2}, {8192, 8, 2}, {16384, 8, 2}, {8192, 16, 8}, {2048, 4, 2},
           {4096, 8, 2}}) {
    for (bool staged : {false, true}) {
      const GemmProblem p = problem(n, n, n, elem, flops, staged);
      PipelinePlan plan;
      if (!plan_with_room(p, plan)) return;
      Facts facts;
      PipelineLimits lim;
      lim.device_budget_bytes = i64(80) << 30;
      if (!check_plan(p, lim, plan, &facts)) return;
      if (!(elem == 4 && flops == 2 && n >= 8192)) {
        BOOST_TEST(plan.k_lead == 0, shape_text(p) << describe_plan(plan) << ": a lead piece");
        continue;
      }
      BOOST_TEST((plan.k_lead > 0 && 4 * plan.k_lead <= plan.kb + 4 * 128),
                 shape_text(p) << describe_plan(plan) << ": lead piece " << plan.k_lead);
      const double lead_pieces = double(plan.mb + plan.nb) * double(plan.k_lead) / (2.0 * double(n) * double(n));
      BOOST_TEST(facts.first_multiply_fraction <= lead_pieces * 1.000001,
                 shape_text(p) << describe_plan(plan) << ": first multiply after " << facts.first_multiply_fraction
                               << " of the input bytes, the lead pieces are " << lead_pieces);
    }
  }
}

// Out of core through a budget of GiBs, the pieces stay large: each
// multiply is a kernel launch and a few events (microseconds of overhead),
// so a plan of millions of 128^3 multiplies would be launch-bound however
// few bytes it moves. Full tiles of at least 1024 x 1024 x 256.
BOOST_AUTO_TEST_CASE(out_of_core_tiles_are_not_tiny) {
  for_each_16384_cube({i64(1) << 30, i64(4) << 30}, [](const GemmProblem& p, const PipelineLimits& lim,
                                                        const PipelinePlan& plan) {
    BOOST_TEST((plan.mb >= 1024 && plan.nb >= 1024 && plan.kb >= 256),
               describe(p, lim) << describe_plan(plan) << ": tiles this small make the product launch-bound");
  });
}

// Explicit panel / k_panel, from 1 up to more than the problem, through a
// huge budget (in core: each byte up once) and a small one.
BOOST_AUTO_TEST_CASE(explicit_panels) {
  for (const auto& [m, n, k] : std::vector<std::tuple<i64, i64, i64>>{{1000, 777, 1500}, {61, 33, 97}}) {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    for (i64 elem : {4, 16}) {
      p.elem_size = elem;
      for (bool reads_c : {false, true}) {
        p.reads_c = reads_c;
        for (i64 panel : {1, 7, 64, 128, 200, 256, 999, 5000}) {
          for (i64 k_panel : {0, 1, 33, 128, 512, 1499, 9000}) {
            if (ceil_div(p.m, panel) * ceil_div(p.n, panel) * ceil_div(p.k, std::max<i64>(k_panel, 128)) > 20000)
              continue;
            for (i64 budget : {i64(1) << 40, std::max(feasible_floor(p, 2e4), (m * k + k * n + m * n) * elem / 7)}) {
              PipelineLimits lim;
              lim.device_budget_bytes = budget;
              lim.panel = panel;
              lim.k_panel = k_panel;
              const PipelinePlan plan = plan_pipeline(p, lim);
              if (!check_plan(p, lim, plan)) return;
              if (budget == i64(1) << 40) BOOST_TEST(plan.in_core, describe(p, lim) << describe_plan(plan));
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(sizes_of_one) {
  for (i64 elem : {4, 8, 16})
    for (bool reads_c : {false, true})
      for (const auto& [m, n, k] : std::vector<std::tuple<i64, i64, i64>>{
               {1, 1, 1}, {1, 5000, 1}, {5000, 1, 1}, {1, 1, 5000}, {4999, 4999, 1}, {1, 3001, 4097}}) {
        const GemmProblem p = problem(m, n, k, elem, reads_c);
        for (i64 budget : {3 * elem, 3 * elem * 64, i64(1) << 20, i64(1) << 36}) {
          PipelineLimits lim;
          lim.device_budget_bytes = std::max(budget, feasible_floor(p, 2e4));
          const PipelinePlan plan = plan_pipeline(p, lim);
          BOOST_TEST_REQUIRE(check_plan(p, lim, plan));
        }
      }
}

BOOST_AUTO_TEST_CASE(an_impossible_budget_throws) {
  GemmProblem p;
  p.m = 1000;
  p.n = 1000;
  p.k = 1000;
  for (i64 elem : {4, 8, 16}) {
    p.elem_size = elem;
    for (bool reads_c : {false, true}) {
      p.reads_c = reads_c;
      for (i64 budget : {i64(0), i64(1), elem, 2 * elem, 3 * elem - 1}) {
        PipelineLimits lim;
        lim.device_budget_bytes = budget;
        BOOST_CHECK_THROW(plan_pipeline(p, lim), egpu::error);
      }
    }
  }
  // The smallest budget that is not refused: one element of each of A, B, C.
  GemmProblem small;
  small.m = 7;
  small.n = 5;
  small.k = 6;
  for (i64 elem : {4, 8, 16}) {
    for (bool reads_c : {false, true}) {
      small.elem_size = elem;
      small.reads_c = reads_c;
      PipelineLimits lim;
      lim.device_budget_bytes = 3 * elem;
      PipelinePlan plan;
      BOOST_CHECK_NO_THROW(plan = plan_pipeline(small, lim));
      Facts facts;
      if (!check_plan(small, lim, plan, &facts)) return;
      BOOST_TEST(facts.multiplies == 7 * 5 * 6);
    }
  }
  // Sizes must be positive.
  for (const auto& [m, n, k] : std::vector<std::tuple<i64, i64, i64>>{{0, 5, 5}, {5, 0, 5}, {5, 5, 0}, {-1, 5, 5}}) {
    GemmProblem bad;
    bad.m = m;
    bad.n = n;
    bad.k = k;
    PipelineLimits lim;
    lim.device_budget_bytes = i64(1) << 30;
    BOOST_CHECK_THROW(plan_pipeline(bad, lim), egpu::error);
  }
}

// ---- coefficient-wise plans ---------------------------------------------------

namespace {

using egpu::planner::ElementwiseLimits;
using egpu::planner::ElementwisePlan;
using egpu::planner::ElementwiseProblem;
using egpu::planner::LeafTraffic;
using egpu::planner::plan_elementwise;

std::string describe(const ElementwiseProblem& p, const ElementwiseLimits& l) {
  std::ostringstream s;
  s << "rows=" << p.rows << " cols=" << p.cols << " out_elem=" << p.out_elem_size << " accumulates=" << p.accumulates
     << " budget=" << l.device_budget_bytes << " chunk_bytes=" << l.chunk_bytes << " leaves:";
  for (const auto& leaf : p.leaves) s << " " << leaf.elem_size << (leaf.varies_down_rows ? "r" : "") << (leaf.varies_across_cols ? "c" : "");
  return s.str();
}

// Replays the plan; returns false after reporting the first fault.
bool check_elementwise_plan(const ElementwiseProblem& p, const ElementwiseLimits& l, const ElementwisePlan& plan) {
  const std::string where = describe(p, l);
  auto fail = [&](std::size_t at, const std::string& what) {
    BOOST_ERROR(where << ": op #" << at << ": " << what);
    return false;
  };
  if (plan.mb < 1 || plan.nb < 1 || plan.mb > p.rows || plan.nb > p.cols) return fail(0, "chunk shape out of range");
  if (plan.device_bytes > l.device_budget_bytes) return fail(0, "device_bytes above the budget");
  if (plan.leaf_once.size() != p.leaves.size()) return fail(0, "leaf_once has the wrong size");
  const i64 chunks = plan.chunks();
  struct LeafPiece {
    i64 i0 = -1, mi = 0, j0 = -1, nj = 0;
    bool read = true;
  };
  std::vector<std::vector<LeafPiece>> slots(p.leaves.size());
  for (std::size_t k = 0; k < p.leaves.size(); ++k)
    slots[k].resize(static_cast<std::size_t>(plan.leaf_once[k] ? 1 : plan.leaf_slots));
  std::vector<i64> out_slot(static_cast<std::size_t>(plan.out_slots), -1);  // chunk there, not yet downloaded
  std::vector<char> evaluated(static_cast<std::size_t>(chunks), 0), downloaded(static_cast<std::size_t>(chunks), 0);
  // Coverage on the grid the chunks' edges cut (every chunk a block of its
  // cells): element by element would take seconds on the large problems.
  std::vector<i64> row_cuts{0, p.rows}, col_cuts{0, p.cols};
  for (const Op& op : plan.ops)
    if (op.kind == OpKind::evaluate && op.mi >= 1 && op.nj >= 1) {
      row_cuts.insert(row_cuts.end(), {op.i0, op.i0 + op.mi});
      col_cuts.insert(col_cuts.end(), {op.j0, op.j0 + op.nj});
    }
  for (auto* cuts : {&row_cuts, &col_cuts}) {
    std::sort(cuts->begin(), cuts->end());
    cuts->erase(std::unique(cuts->begin(), cuts->end()), cuts->end());
  }
  auto cut_index = [](const std::vector<i64>& cuts, i64 at) {
    return static_cast<std::size_t>(std::lower_bound(cuts.begin(), cuts.end(), at) - cuts.begin());
  };
  const std::size_t grid_rows = row_cuts.size() - 1;
  std::vector<char> covered(grid_rows * (col_cuts.size() - 1), 0);
  i64 h2d = 0, d2h = 0;
  std::map<i64, i64> last_j0_at_rows, last_i0_at_cols;  // reductions: the last chunk folded there
  auto unset = [](std::map<i64, i64>& m, i64 key) { return m.emplace(key, -1).first->second; };
  for (std::size_t at = 0; at < plan.ops.size(); ++at) {
    const Op& op = plan.ops[at];
    if (op.mi < 1 || op.nj < 1 || op.i0 < 0 || op.j0 < 0 || op.i0 + op.mi > p.rows || op.j0 + op.nj > p.cols ||
        op.mi > plan.mb || op.nj > plan.nb)
      return fail(at, "region out of range");
    if (op.tile < 0 || op.tile >= chunks) return fail(at, "chunk number out of range");
    switch (op.kind) {
      case OpKind::upload_leaf: {
        if (op.leaf < 0 || op.leaf >= static_cast<std::int32_t>(p.leaves.size())) return fail(at, "unknown leaf");
        const auto k = static_cast<std::size_t>(op.leaf);
        if (op.slot < 0 || op.slot >= static_cast<std::int32_t>(slots[k].size())) return fail(at, "leaf slot out of range");
        LeafPiece& held = slots[k][static_cast<std::size_t>(op.slot)];
        if (!held.read) return fail(at, "overwrites a piece no evaluate read");
        const LeafTraffic& leaf = p.leaves[k];
        held = {op.i0, ElementwisePlan::piece_rows(leaf, op.mi), op.j0, ElementwisePlan::piece_cols(leaf, op.nj), false};
        h2d += leaf.elem_size * held.mi * held.nj;
        break;
      }
      case OpKind::evaluate: {
        if (evaluated[static_cast<std::size_t>(op.tile)]) return fail(at, "chunk evaluated twice");
        evaluated[static_cast<std::size_t>(op.tile)] = 1;
        for (std::size_t k = 0; k < p.leaves.size(); ++k) {
          const LeafTraffic& leaf = p.leaves[k];
          const std::int32_t slot = plan.leaf_once[k] ? 0 : op.a_slot;
          if (slot < 0 || slot >= static_cast<std::int32_t>(slots[k].size())) return fail(at, "reads a leaf slot out of range");
          LeafPiece& held = slots[k][static_cast<std::size_t>(slot)];
          const bool rows_ok = leaf.varies_down_rows ? held.i0 == op.i0 && held.mi == op.mi : held.mi == 1;
          const bool cols_ok = leaf.varies_across_cols ? held.j0 == op.j0 && held.nj == op.nj : held.nj == 1;
          if (!rows_ok || !cols_ok) return fail(at, "leaf " + std::to_string(k) + "'s slot holds another piece");
          held.read = true;
        }
        if (p.out_elem_size == 0) {
          // A reduction folds chunks into the results in plan order: the
          // chunk at the first columns of its rows (first rows of its
          // columns) must come before the others there.
          unset(last_j0_at_rows, op.i0);
          unset(last_i0_at_cols, op.j0);
          i64& last_j0 = last_j0_at_rows[op.i0];
          i64& last_i0 = last_i0_at_cols[op.j0];
          if ((last_j0 < 0) != (op.j0 == 0) || (last_i0 < 0) != (op.i0 == 0) || op.j0 < last_j0 || op.i0 < last_i0)
            return fail(at, "a reduction's chunks are not in the order of their rows and columns");
          last_j0 = op.j0;
          last_i0 = op.i0;
        } else {
          if (op.slot < 0 || op.slot >= plan.out_slots) return fail(at, "output slot out of range");
          if (out_slot[static_cast<std::size_t>(op.slot)] >= 0) return fail(at, "output slot still holds a chunk not downloaded");
          out_slot[static_cast<std::size_t>(op.slot)] = op.tile;
        }
        for (std::size_t j = cut_index(col_cuts, op.j0); j < cut_index(col_cuts, op.j0 + op.nj); ++j)
          for (std::size_t i = cut_index(row_cuts, op.i0); i < cut_index(row_cuts, op.i0 + op.mi); ++i) {
            char& c = covered[i + j * grid_rows];
            if (c) return fail(at, "chunks overlap");
            c = 1;
          }
        break;
      }
      case OpKind::download_c: {
        if (p.out_elem_size == 0) return fail(at, "a download in a reduction's plan");
        if (!evaluated[static_cast<std::size_t>(op.tile)]) return fail(at, "download before its evaluate");
        if (downloaded[static_cast<std::size_t>(op.tile)]) return fail(at, "chunk downloaded twice");
        if (op.slot < 0 || op.slot >= plan.out_slots || out_slot[static_cast<std::size_t>(op.slot)] != op.tile)
          return fail(at, "download from a slot that does not hold the chunk");
        downloaded[static_cast<std::size_t>(op.tile)] = 1;
        out_slot[static_cast<std::size_t>(op.slot)] = -1;
        d2h += p.out_elem_size * op.mi * op.nj;
        break;
      }
      default: return fail(at, "a product's operation in a coefficient-wise plan");
    }
  }
  if (std::find(covered.begin(), covered.end(), 0) != covered.end()) return fail(plan.ops.size(), "chunks miss elements");
  if (p.out_elem_size > 0 && std::find(downloaded.begin(), downloaded.end(), 0) != downloaded.end())
    return fail(plan.ops.size(), "a chunk never went down");
  if (std::find(evaluated.begin(), evaluated.end(), 0) != evaluated.end()) return fail(plan.ops.size(), "a chunk never evaluated");
  if (h2d != plan.h2d_bytes || d2h != plan.d2h_bytes) return fail(plan.ops.size(), "byte counts are not the sums");
  return true;
}

ElementwiseProblem random_elementwise_problem() {
  ElementwiseProblem p;
  p.rows = uniform(0, 3) == 0 ? uniform(1, 3) : random_dim() * (uniform(0, 4) == 0 ? 97 : 1);
  p.cols = uniform(0, 3) == 0 ? uniform(1, 3) : random_dim();
  const i64 sizes[] = {4, 8, 16};
  // A quarter are reductions: their results stay on the device.
  p.out_elem_size = uniform(0, 3) == 0 ? 0 : sizes[uniform(0, 2)];
  p.accumulates = p.out_elem_size > 0 && uniform(0, 1) == 1;
  for (i64 k = uniform(0, 5); k > 0; --k) {
    LeafTraffic leaf;
    leaf.elem_size = sizes[uniform(0, 2)];
    const i64 kind = uniform(0, 5);
    leaf.varies_down_rows = kind != 4 && kind != 5;
    leaf.varies_across_cols = kind != 3 && kind != 5;
    p.leaves.push_back(leaf);
  }
  return p;
}

}  // namespace

BOOST_AUTO_TEST_CASE(elementwise_plans_replay_correctly) {
  for (int trial = 0; trial < 400; ++trial) {
    const ElementwiseProblem p = random_elementwise_problem();
    ElementwiseLimits l;
    l.chunk_bytes = uniform(0, 2) == 0 ? uniform(1, 80000) : 0;
    // From a budget close to the smallest chunks' to plenty.
    l.device_budget_bytes = uniform(0, 2) == 0 ? uniform(i64(1) << 12, i64(1) << 22) : i64(1) << uniform(22, 34);
    ElementwisePlan plan;
    try {
      plan = plan_elementwise(p, l);
    } catch (const egpu::error&) {
      continue;  // refused: checked for small budgets below
    }
    if (!check_elementwise_plan(p, l, plan)) return;
    // A plan the budget did not shape is every larger budget's plan (the
    // executor then keeps it without measuring the budget again); a plan
    // it shaped is not.
    ElementwiseLimits plenty = l;
    plenty.device_budget_bytes = i64(1) << 50;
    const ElementwisePlan free_plan = plan_elementwise(p, plenty);
    const bool same = free_plan.mb == plan.mb && free_plan.nb == plan.nb && free_plan.leaf_slots == plan.leaf_slots &&
                      free_plan.out_slots == plan.out_slots && free_plan.device_bytes == plan.device_bytes;
    BOOST_TEST(plan.unconstrained == same, describe(p, l));
    BOOST_TEST(free_plan.unconstrained, describe(p, plenty));
    if (p.accumulates && plan.out_slots != plan.chunks()) {
      // Results wait on the host only when keeping them all would not fit.
      const i64 slot = ElementwisePlan::slot_bytes(p.out_elem_size, plan.mb, plan.nb);
      const i64 all = plan.device_bytes + (plan.chunks() - plan.out_slots) * slot;
      BOOST_TEST(all > l.device_budget_bytes, describe(p, l));
    }
  }
}

BOOST_AUTO_TEST_CASE(elementwise_chunks_follow_the_layout) {
  // 2^27 doubles, two leaves: whole columns per chunk, ~8 MiB of the widest,
  // over a hundred chunks; each input crosses PCIe once.
  ElementwiseProblem p;
  p.rows = 1 << 14;
  p.cols = 1 << 13;
  p.leaves = {LeafTraffic{8, true, true}, LeafTraffic{8, true, true}};
  ElementwiseLimits l;
  l.device_budget_bytes = i64(40) << 30;
  const ElementwisePlan plan = plan_elementwise(p, l);
  BOOST_REQUIRE(check_elementwise_plan(p, l, plan));
  BOOST_TEST(plan.mb == p.rows);
  BOOST_TEST(plan.chunks() >= 100);
  BOOST_TEST(plan.h2d_bytes == 2 * 8 * p.rows * p.cols);
  BOOST_TEST(plan.d2h_bytes == 8 * p.rows * p.cols);
  BOOST_TEST(plan.leaf_slots == 3);

  // A column vector broadcast across whole-column chunks goes up once; a
  // row vector's piece changes with the chunk.
  ElementwiseProblem b = p;
  b.leaves = {LeafTraffic{8, true, true}, LeafTraffic{8, true, false}, LeafTraffic{8, false, true}};
  const ElementwisePlan bp = plan_elementwise(b, l);
  BOOST_REQUIRE(check_elementwise_plan(b, l, bp));
  BOOST_TEST(bool(bp.leaf_once[1]));
  BOOST_TEST(!bp.leaf_once[2]);
  BOOST_TEST(bp.h2d_bytes == 8 * (p.rows * p.cols + p.rows + p.cols));

  // One tall column: chunks of rows.
  ElementwiseProblem tall;
  tall.rows = i64(1) << 26;
  tall.cols = 1;
  tall.leaves = {LeafTraffic{4, true, true}};
  tall.out_elem_size = 4;
  const ElementwisePlan tp = plan_elementwise(tall, l);
  BOOST_REQUIRE(check_elementwise_plan(tall, l, tp));
  BOOST_TEST(tp.nb == 1);
  BOOST_TEST(tp.mb < tall.rows);

  // Accumulating: every result stays on the device when it fits, and the
  // ring is used when it does not.
  ElementwiseProblem acc = p;
  acc.accumulates = true;
  const ElementwisePlan ap = plan_elementwise(acc, l);
  BOOST_REQUIRE(check_elementwise_plan(acc, l, ap));
  BOOST_TEST(ap.out_slots == ap.chunks());
  ElementwiseLimits tight = l;
  tight.device_budget_bytes = i64(256) << 20;
  const ElementwisePlan tp2 = plan_elementwise(acc, tight);
  BOOST_REQUIRE(check_elementwise_plan(acc, tight, tp2));
  BOOST_TEST(tp2.out_slots == 3);

  // Small budgets take small chunks, without overlap at the very least; a
  // budget below the smallest chunks is refused; sizes must be positive.
  ElementwiseLimits small = l;
  small.device_budget_bytes = 64 << 10;
  const ElementwisePlan sp = plan_elementwise(p, small);
  BOOST_REQUIRE(check_elementwise_plan(p, small, sp));
  BOOST_TEST(sp.leaf_slots >= 1);
  ElementwiseLimits tiny = l;
  tiny.device_budget_bytes = 1000;
  BOOST_CHECK_THROW(plan_elementwise(p, tiny), egpu::error);
  ElementwiseProblem empty = p;
  empty.cols = 0;
  BOOST_CHECK_THROW(plan_elementwise(empty, l), egpu::error);
}
