// egpu-bench's subcommands, one source file each. To add one:
// write <name>.cpp with `int run_<name>(int argc, char** argv)` (argv[0] is
// the subcommand's name), declare it here, list it in main.cpp's table and
// in CMakeLists.txt.
#pragma once

namespace egpu_bench {

// Host-resident square products: CPU Eigen, cuBLASXt and egpu (own kernel,
// cuBLAS), pageable and pinned, against each backend's floor.
int run_product(int argc, char** argv);

// egpu's out-of-core path (Options::device_memory_limit) against in-core.
int run_ooc(int argc, char** argv);

// The own kernel family against cuBLAS on device-resident data: rates and
// errors against an fp64 reference, per scalar, shape, ops and math mode.
int run_gemm(int argc, char** argv);

// Fused coefficient-wise expressions on device-resident data: egpu's
// generated kernels against hand-written ones and the copy rate.
int run_elementwise(int argc, char** argv);

// Fused coefficient-wise expressions on host-resident arrays, pageable and
// pinned: egpu against the PCIe / host-copy floor and CPU Eigen (one core,
// OpenMP over column blocks).
int run_elementwise_host(int argc, char** argv);

// Reductions: device-resident sum, squaredNorm, maxCoeff, (a*b).sum and
// column / row sums against CUB, Eigen Tensor on GpuDevice and the copy
// rate (bit-identical repeats checked); host-resident egpu::gpu(a).sum()
// and the like against the PCIe floor and CPU Eigen.
int run_reduce(int argc, char** argv);

// egpu::DeviceMatrix: products on device data against the backend's
// kernel, uploads and downloads against cudaMemcpy, a chain of small calls
// (host time per call, device time), an iterative kernel against the same
// code on host matrices and CPU Eigen.
int run_resident(int argc, char** argv);

// The rates of egpu's CPU/GPU dispatch, measured and written where the
// library reads them.
int run_calibrate(int argc, char** argv);

// The automatic CPU/GPU choice against CPU Eigen and the GPU forced, per size.
int run_dispatch(int argc, char** argv);

// What egpu::gpu adds to the smallest calls, those kept on the CPU.
int run_small_calls(int argc, char** argv);

// One Eigen program built as plain CPU Eigen, Eigen + NVBLAS and Eigen in
// egpu's transparent mode, timed in one run.
int run_transparent(int argc, char** argv);

}  // namespace egpu_bench
