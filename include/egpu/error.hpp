// The one exception type egpu throws: a size mismatch, bad input, or a CUDA
// or cuBLAS failure, with a message naming what was being done.
#pragma once

#include <stdexcept>
#include <string>

namespace egpu {

class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error("egpu: " + what) {}
};

}  // namespace egpu
