/* The parameters of every generated coefficient-wise kernel, passed by value.
   Plain C, read by the host compiler (the executor fills them) and prepended
   by NVRTC to each generated kernel (the kernel reads them), so the two
   agree on the layout by construction. */
#ifndef EGPU_EW_PARAMS_H
#define EGPU_EW_PARAMS_H

#define EGPU_EW_MAX_LEAVES 64
#define EGPU_EW_MAX_CONSTANTS 64

/* Element (i, j) of a leaf is data[i * row_stride + j * col_stride]. */
struct egpu_ew_leaf {
  const void* data;
  long long row_stride, col_stride;
};

struct egpu_ew_constant {
  double re, im;
};

/* rows x cols coefficients, counted column by column (n = i + j * rows). */
struct egpu_ew_params {
  long long rows, cols;
  void* out;
  long long out_row_stride, out_col_stride;
  struct egpu_ew_leaf leaf[EGPU_EW_MAX_LEAVES];
  struct egpu_ew_constant constant[EGPU_EW_MAX_CONSTANTS];
};

#endif
