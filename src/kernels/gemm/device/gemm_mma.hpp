// Host entry of the tensor-core configurations (device/gemm_mma.cu), called
// by gemm_tiled for GemmConfig::tensor_large / tensor_small / split_k of a
// scalar and math mode that runs on tensor cores.
#pragma once

#include <cuda_runtime.h>

#include "kernels/gemm/gemm_args.hpp"

namespace egpu::kernels::device {

// Runs the tensor-core configuration `config`: tensor_large, tensor_small, or
// split_k (the with_split_tag tile of gemm_mma.cu, tensor_small's but
// for complex<double>, or tf32x3's large tile where split_on_large_tile
// says so, cut along k by device/gemm_split_k.cuh; a plain
// tensor_small where the shape gives fewer than two slices). double and
// cdouble use DMMA whatever args.math says (sm_90 and later: gemm_tiled
// only calls this there); float uses TF32 with math == tf32 and the split
// tf32x3 products otherwise (gemm_tiled never sends exact float here).
// Float operands off the 16-byte grid are first copied onto it, in
// stream-ordered memory, where m and n reach operand_copy_min_side
// (device/gemm_operand_copy.cuh).
// `sms`: multiprocessors of the device.
// Requires m, n > 0.
template <class T>
void gemm_mma(const GemmArgs<T>& args, cudaStream_t stream, GemmConfig config, int sms);

// The automatic choice among those: tensor_large when its tiles give every
// multiprocessor a block; otherwise split_k when k is deep enough to give
// the split tile at least two slices; otherwise tensor_small.
template <class T>
GemmConfig choose_mma_config(const GemmArgs<T>& args, int sms);

}  // namespace egpu::kernels::device
