#include "runtime/nvrtc_compile.hpp"

#include <nvrtc.h>

#include "egpu/error.hpp"

namespace egpu::runtime {

void nvrtc_check(int status, const char* what) {
  const auto result = static_cast<nvrtcResult>(status);
  if (result != NVRTC_SUCCESS) throw egpu::error(std::string(what) + " failed: " + nvrtcGetErrorString(result));
}

std::vector<char> nvrtc_compile(const std::string& source, int arch, bool cubin) {
  nvrtcProgram program = nullptr;
  nvrtc_check(nvrtcCreateProgram(&program, source.c_str(), "egpu_runtime_kernel.cu", 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  const std::string arch_option =
      std::string(cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") + std::to_string(arch);
  std::vector<const char*> options{arch_option.c_str()};
  for (const char* option : kNvrtcOptions) options.push_back(option);
  const nvrtcResult built = nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  std::string log;
  std::size_t log_size = 0;
  if (nvrtcGetProgramLogSize(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    (void)nvrtcGetProgramLog(program, log.data());
  }
  std::vector<char> image;
  if (built == NVRTC_SUCCESS) {
    std::size_t size = 0;
    const nvrtcResult got = cubin ? nvrtcGetCUBINSize(program, &size) : nvrtcGetPTXSize(program, &size);
    if (got == NVRTC_SUCCESS) {
      image.resize(size);
      (void)(cubin ? nvrtcGetCUBIN(program, image.data()) : nvrtcGetPTX(program, image.data()));
    }
  }
  (void)nvrtcDestroyProgram(&program);
  if (built != NVRTC_SUCCESS || image.empty())
    throw egpu::error("egpu: NVRTC could not compile a generated kernel (" + std::string(nvrtcGetErrorString(built)) +
                      "); this is a bug in egpu. The compiler said:\n" + log.substr(0, 4000));
  return image;
}

}  // namespace egpu::runtime
