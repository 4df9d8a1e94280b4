/* The parameters of the generated reduction kernels (after ew_params.h),
   passed by value. Plain C, read by the host compiler (the backend fills
   them) and by NVRTC (the kernels read them), so the two agree on the
   layout by construction. Accumulators are of the kernel's own type; the
   pointers below point at arrays of them. */
#ifndef EGPU_RD_PARAMS_H
#define EGPU_RD_PARAMS_H

/* The first pass reduces `values` reduced values of `length` values each,
   every one cut into `segments` stretches of `segment` values (the last
   shorter); it writes one partial per (value k, stretch s) at
   partials[k * value_step + s * segment_step] (the step that puts the
   partials a pass's neighbouring threads or blocks write next to each
   other is 1). The value at (reduced k, position l) is element n of the
   piece: n = k * length + l when the reduced direction is contiguous
   (inner), n = k + l * rows when it is not (outer); element n is (i, j)
   with n = i + j * rows. */
struct egpu_rd_pass {
  long long values, length, rows;
  long long segments, segment;
  long long value_step, segment_step;
  void* partials;
};

/* The finish turns acc[0, count) into results: 0 as they are, 1 the square
   root, 2 divided by `divisor`. */
struct egpu_rd_finish {
  long long count;
  const void* acc;
  void* out;
  int finish;
  struct egpu_ew_constant divisor;
};

/* The fold combines each value's partials (laid out as the pass wrote
   them) in order into acc[first + k], replacing what is there when `fresh`:
   a thread per value when `per_thread`, else a block per value. When
   last.out is not NULL this is the last fold, and it also writes the
   finished results of its values at last.out[first + k]. */
struct egpu_rd_fold {
  long long values, segments;
  long long value_step, segment_step;
  const void* partials;
  void* acc;
  long long first;
  int fresh, per_thread;
  struct egpu_rd_finish last;
};

#endif
