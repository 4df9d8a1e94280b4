// How split-k cuts a product along k (device/gemm_split_k.cuh runs the
// cut). Plain C++ so that the slice counts are tested on the CPU
// (test/cpu/gemm_choice_test.cpp).
#pragma once

#include <cstdint>

namespace egpu::kernels::device {

// k-slices of one launch; count 1 is a plain product.
struct KSlices {
  int count = 1;
  std::int64_t k_slice = 0;  // k per slice (a multiple of the configuration's bk)
  std::int64_t c_slice = 0;  // elements between consecutive partial products
};

// How many slices a product takes (plan_split_k).
//   one_wave: enough slices that the tiles times the slices fill one wave
//   of resident blocks, each slice at least 256 deep.
//   filled_waves: of the counts from 1 (no slices) up, each slice at least
//   128 deep, the one whose blocks keep the block slots busiest over their
//   waves, each weighed by its k loop's share of its time (kSliceStartK);
//   ties keep the fewer slices. Where one wave leaves slots idle, more waves
//   of shallower blocks can fill them: 3072 x 256 x 3072 float on the medium
//   tile (48 tiles on 132 SMs) ran at 29.5 Tflop/s in 2 slices (96 blocks),
//   35.1 in 8 (384 blocks, 2.9 waves); the weight keeps 2048 x 256 x 2048 at
//   4 slices (128 blocks, 33.6) against 8 (256 blocks, 30.4). The split
//   tile of double's tensor-core family ran 2048 x 512 x 2048 and 4096 x
//   256 x 4096 10-16 % slower that way, so it keeps one_wave.
enum class SliceRule { one_wave, filled_waves };

// The k-steps a block's k loop is worth at its start and end (loading the
// first stage, writing its m x n partial product): a slice k deep does
// k / (k + kSliceStartK) of its time's worth of FMAs.
inline constexpr std::int64_t kSliceStartK = 64;

// Slices of an m x n x k product on a bm x bn x bk configuration with
// blocks_per_sm resident blocks on `sms` multiprocessors, at most 64, by
// `rule`.
inline KSlices plan_split_k(std::int64_t m, std::int64_t n, std::int64_t k, int bm, int bn, int bk,
                            int sms, int blocks_per_sm, SliceRule rule = SliceRule::one_wave) {
  const std::int64_t tiles = ((m + bm - 1) / bm) * ((n + bn - 1) / bn);
  const std::int64_t slots = std::int64_t(sms) * blocks_per_sm;
  if (tiles <= 0 || k <= 0 || slots <= 0) return {};
  const std::int64_t min_k = rule == SliceRule::one_wave ? 256 : 128;
  const std::int64_t most = k / min_k < 64 ? k / min_k : 64;
  // The slices `want` slices of whole stages make (the rounding may merge one).
  auto cut = [&](std::int64_t want) {
    KSlices s;
    s.k_slice = ((k + want - 1) / want + bk - 1) / bk * bk;
    s.count = int((k + s.k_slice - 1) / s.k_slice);
    s.c_slice = m * n;
    return s;
  };
  if (rule == SliceRule::one_wave) {
    const std::int64_t want = slots / tiles < most ? slots / tiles : most;
    return want >= 2 ? cut(want) : KSlices{};
  }
  auto score = [&](std::int64_t count, std::int64_t k_slice) {
    const std::int64_t blocks = tiles * count;
    const std::int64_t waves = (blocks + slots - 1) / slots;
    return double(blocks) / double(waves * slots) * double(k_slice) / double(k_slice + kSliceStartK);
  };
  KSlices best;
  double best_score = score(1, k);
  for (std::int64_t want = 2; want <= most; ++want) {
    const KSlices s = cut(want);
    if (s.count >= 2 && score(s.count, s.k_slice) > best_score * (1 + 1e-9)) {
      best = s;
      best_score = score(s.count, s.k_slice);
    }
  }
  return best;
}

}  // namespace egpu::kernels::device
