// egpu-bench's subcommands, one source file each. To add one (gemm, ooc):
// write <name>.cpp with `int run_<name>(int argc, char** argv)` (argv[0] is
// the subcommand's name), declare it here, list it in main.cpp's table and
// in CMakeLists.txt.
#pragma once

namespace egpu_bench {

// Host-resident square products, CPU Eigen vs egpu (own kernel, cuBLAS).
int run_product(int argc, char** argv);

}  // namespace egpu_bench
