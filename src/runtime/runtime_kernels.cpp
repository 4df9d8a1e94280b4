#include "runtime/runtime_kernels.hpp"

#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "egpu/error.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/nvrtc_compile.hpp"

namespace egpu::runtime {
namespace {

// What to compile for: the device's own architecture when NVRTC knows it
// (a cubin), else PTX of the newest architecture it knows, which the driver
// compiles on loading.
struct Target {
  int arch = 0;
  bool cubin = true;
  std::string tag() const { return (cubin ? "sm" : "compute") + std::to_string(arch); }
};

Target target_for(int device) {
  int major = 0, minor = 0;
  cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  const int arch = 10 * major + minor;
  int count = 0;
  nvrtc_check(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<std::size_t>(count));
  nvrtc_check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  Target t;
  if (std::find(archs.begin(), archs.end(), arch) != archs.end()) {
    t.arch = arch;
    return t;
  }
  t.cubin = false;
  for (int a : archs)
    if (a <= arch) t.arch = std::max(t.arch, a);
  if (t.arch == 0) throw egpu::error("NVRTC cannot compile for compute capability " + std::to_string(arch));
  return t;
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// On disk: the source, then the image; a file whose source differs (a hash
// collision) or that cannot be read is ignored.
std::string disk_path(const std::string& source, const Target& target) {
  const char* dir = std::getenv("EGPU_CACHE_DIR");
  if (dir == nullptr || *dir == '\0') return {};
  char name[64];
  std::snprintf(name, sizeof name, "/egpu-%016llx-%s.bin", static_cast<unsigned long long>(fnv1a(source)),
                target.tag().c_str());
  return std::string(dir) + name;
}

bool read_from_disk(const std::string& path, const std::string& source, std::vector<char>& image) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (all.size() <= source.size() + 1 || all.compare(0, source.size(), source) != 0 || all[source.size()] != '\0')
    return false;
  image.assign(all.begin() + static_cast<std::ptrdiff_t>(source.size()) + 1, all.end());
  return true;
}

void write_to_disk(const std::string& path, const std::string& source, const std::vector<char>& image) {
  // Written under a name of this process and call, then renamed: readers
  // (other processes, or threads of this one) never see half a file.
  static std::atomic<long> serial{0};
  const std::string tmp = path + "." + std::to_string(static_cast<long>(getpid())) + "." +
                          std::to_string(serial.fetch_add(1)) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;  // the cache is an optimisation: an unwritable folder only costs a compile
    out.write(source.data(), static_cast<std::streamsize>(source.size()));
    out.put('\0');
    out.write(image.data(), static_cast<std::streamsize>(image.size()));
    if (!out) return;
  }
  (void)std::rename(tmp.c_str(), path.c_str());
}

// At most this many NVRTC compiles at once: each holds a compiler instance
// (a few hundred MB of host memory at its peak), and past the core count
// more only share the cores. A Slot holds one for its life.
class CompileSlots {
 public:
  class Slot {
   public:
    explicit Slot(CompileSlots& slots) : m_slots(slots) {
      std::unique_lock<std::mutex> lock(slots.m_mutex);
      slots.m_freed.wait(lock, [&] { return slots.m_free > 0; });
      --slots.m_free;
    }
    ~Slot() {
      {
        std::lock_guard<std::mutex> lock(m_slots.m_mutex);
        ++m_slots.m_free;
      }
      m_slots.m_freed.notify_one();
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    CompileSlots& m_slots;
  };
  CompileSlots() : m_free(std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8)) {}

 private:
  std::mutex m_mutex;
  std::condition_variable m_freed;
  int m_free;
};

// g_mutex guards the maps and the counts below; it is never held while a
// source compiles, so that different sources compile at the same time on
// different threads. A source asked for while it compiles is waited for
// (its future), not compiled twice.
std::mutex g_mutex;
// A compiled source loaded into the process, and the kernels taken from it.
struct Loaded {
  std::shared_future<cudaLibrary_t> library;  // ready once compiled (or read) and loaded
  std::map<std::string, cudaKernel_t> kernels;  // by name
};
std::map<std::string, Loaded> g_loaded;  // key: prelude address, target tag, text
std::map<int, Target> g_targets;             // by device
RuntimeKernelStats g_stats;

// Compiles prelude + text (or reads the image from EGPU_CACHE_DIR) and loads
// it; called without g_mutex.
cudaLibrary_t load(const char* prelude, const std::string& text, const Target& target) {
  // The options head the source as a comment, so that an image cached on
  // disk under other options is not taken for this one.
  std::string source = "//";
  for (const char* option : kNvrtcOptions) source += std::string(" ") + option;
  source += std::string("\n") + prelude + "\n" + text;
  std::vector<char> image;
  const std::string path = disk_path(source, target);
  if (!path.empty() && read_from_disk(path, source, image)) {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_stats.from_disk;
  } else {
    static CompileSlots slots;
    const auto start = std::chrono::steady_clock::now();
    {
      const CompileSlots::Slot slot(slots);
      image = nvrtc_compile(source, target.arch, target.cubin);
    }
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_stats.compile_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++g_stats.compiled;
    }
    if (!path.empty()) write_to_disk(path, source, image);
  }
  // A library is loaded into every device's context as it is used; it stays
  // loaded for the life of the process, as the kernels compiled in do.
  cudaLibrary_t library = nullptr;
  cuda_check(cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
             "cudaLibraryLoadData (a generated kernel)");
  return library;
}

}  // namespace

cudaKernel_t runtime_kernel(const char* prelude, const std::string& text, const char* name, int device) {
  std::map<std::string, Loaded>::iterator loaded;
  std::promise<cudaLibrary_t> compiled;  // set by this call when it is the one that compiles
  std::shared_future<cudaLibrary_t> ready;
  bool compiles = false;
  Target target;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto known = g_targets.find(device);
    if (known == g_targets.end()) known = g_targets.emplace(device, target_for(device)).first;
    target = known->second;
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "%p\n", static_cast<const void*>(prelude));
    const std::string key = prefix + target.tag() + "\n" + text;
    loaded = g_loaded.find(key);
    if (loaded != g_loaded.end()) {
      ++g_stats.from_memory;
    } else {
      loaded = g_loaded.emplace(key, Loaded{compiled.get_future().share(), {}}).first;
      compiles = true;
    }
    ready = loaded->second.library;
  }
  if (compiles) {
    try {
      compiled.set_value(load(prelude, text, target));
    } catch (...) {
      // Those waiting get the same error; the entry goes, so that a later
      // call tries again (a failure may be passing, e.g. out of memory).
      compiled.set_exception(std::current_exception());
      std::lock_guard<std::mutex> lock(g_mutex);
      g_loaded.erase(loaded);
      throw;
    }
  }
  // Waits while another thread compiles this source; rethrows its error.
  // (An entry is erased only after its future holds an error, so
  // `loaded` is valid past this line.)
  const cudaLibrary_t library = ready.get();
  std::lock_guard<std::mutex> lock(g_mutex);
  Loaded& l = loaded->second;
  if (auto it = l.kernels.find(name); it != l.kernels.end()) return it->second;
  cudaKernel_t kernel = nullptr;
  cuda_check(cudaLibraryGetKernel(&kernel, library, name), "cudaLibraryGetKernel (a generated kernel)");
  l.kernels.emplace(name, kernel);
  return kernel;
}

namespace {
// Kernels by signature, per family and device: the families are few, so
// the outer map is small and the lookup is one hash of the signature.
// References into unordered_map stay valid as it grows.
using Signatures = std::unordered_map<std::string, std::vector<cudaKernel_t>>;
std::mutex g_known_mutex;
std::map<std::pair<const char*, int>, Signatures> g_known;
std::atomic<long> g_found{0};  // signatures found (RuntimeKernelStats::from_memory)
}  // namespace

const std::vector<cudaKernel_t>* known_kernels(const char* prelude, const std::string& signature, int device) {
  std::lock_guard<std::mutex> lock(g_known_mutex);
  const auto family = g_known.find({prelude, device});
  if (family == g_known.end()) return nullptr;
  const auto it = family->second.find(signature);
  if (it == family->second.end()) return nullptr;
  g_found.fetch_add(1, std::memory_order_relaxed);
  return &it->second;
}

const std::vector<cudaKernel_t>& add_kernels(const char* prelude, const std::string& signature, const std::string& text,
                                             std::initializer_list<const char*> names, int device) {
  std::vector<cudaKernel_t> kernels;
  for (const char* name : names) kernels.push_back(runtime_kernel(prelude, text, name, device));
  std::lock_guard<std::mutex> lock(g_known_mutex);
  // Another thread may have added the same signature meanwhile: the same kernels.
  return g_known[{prelude, device}].emplace(signature, std::move(kernels)).first->second;
}

RuntimeKernelStats runtime_kernel_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  RuntimeKernelStats stats = g_stats;
  stats.from_memory += g_found.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace egpu::runtime
