// The block's shared memory: two stages (double buffering) of the A and B
// tiles, both k-major (A stored transposed: As[p][i]), each row padded by
// one 16-byte vector so that transposing stores spread over the banks while
// rows stay 16-byte aligned for the micro-tile's vector reads.
#pragma once

namespace egpu::kernels::block {

template <class T, class Shape>
struct SharedTiles {
  static constexpr int stages = 2;
  static constexpr int lda = Shape::bm + Shape::vec;  // row length of As, in elements
  static constexpr int ldb = Shape::bn + Shape::vec;
  alignas(16) T a[stages][Shape::bk][lda];
  alignas(16) T b[stages][Shape::bk][ldb];
};

}  // namespace egpu::kernels::block
