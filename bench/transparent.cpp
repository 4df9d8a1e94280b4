// egpu-bench transparent: one ordinary Eigen program
// (bench/transparent_program.cpp: C = A * B at N = --sizes, PartialPivLU
// and LLT at --decompositions) built three ways and timed in one run:
// plain CPU Eigen on every core (OpenMP), Eigen with EIGEN_USE_BLAS on
// NVBLAS (OpenBLAS as its CPU BLAS, pinning on), and Eigen with egpu's
// transparent mode. The programs sit beside egpu-bench
// (egpu-bench-transparent-cpu, -nvblas, -egpu); a variant that was not
// built (no NVBLAS or no CPU BLAS found) is left out, and said so.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

const char* const kUsage =
    "usage: egpu-bench transparent [options]\n"
    "  --sizes N,N,...          product sizes (default 2,8,32,64,128,256,512,1024,2048,4096,8192,16384)\n"
    "  --decompositions N,N     PartialPivLU and LLT sizes (default 8192,16384)\n"
    "  --variants V,V,V         cpu, nvblas, egpu (default all three)\n"
    "  --repeats R              timed runs, median reported (default 5; 3 from N=8192; 1 for decompositions)\n"
    "  --cpu-blas PATH          NVBLAS's CPU BLAS (default: the OpenBLAS found at build time)\n"
    "  --csv FILE | --csv-dir DIR | --no-csv\n";

std::string join(const std::vector<long>& v) {
  std::string s;
  for (long x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::filesystem::path own_directory() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path();
}

}  // namespace

int run_transparent(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  const std::vector<long> sizes =
      args.integers("sizes", {2, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384});
  const std::vector<long> decompositions = args.integers("decompositions", {8192, 16384});
  const std::vector<std::string> variants = args.words("variants", {"cpu", "nvblas", "egpu"});
  const long repeats = args.integer("repeats", 5);
  const std::string cpu_blas = args.text("cpu-blas", EGPU_BENCH_CPU_BLAS_LIB);
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();
  check_choices(variants, {"cpu", "nvblas", "egpu"}, "--variants");
  const RunInfo info = gather_run_info(0);

  // NVBLAS reads its configuration from a file.
  const std::filesystem::path dir = own_directory();
  const std::filesystem::path config = std::filesystem::temp_directory_path() / "egpu-bench-nvblas.conf";
  {
    std::ofstream c(config);
    c << "NVBLAS_LOGFILE " << (std::filesystem::temp_directory_path() / "egpu-bench-nvblas.log").string() << "\n"
      << "NVBLAS_CPU_BLAS_LIB " << cpu_blas << "\nNVBLAS_GPU_LIST ALL\nNVBLAS_TILE_DIM 2048\n"
      << "NVBLAS_AUTOPIN_MEM_ENABLED\n";
  }
  setenv("NVBLAS_CONFIG_FILE", config.c_str(), 1);

  // case,n -> variant -> (seconds, check)
  std::map<std::pair<std::string, long>, std::map<std::string, std::pair<double, double>>> results;
  std::vector<std::pair<std::string, long>> order;
  for (const std::string& v : variants) {
    const std::filesystem::path exe = dir / ("egpu-bench-transparent-" + v);
    if (!std::filesystem::exists(exe)) {
      std::printf("variant %s: %s was not built; left out\n", v.c_str(), exe.c_str());
      continue;
    }
    const std::string command =
        exe.string() + " " + join(sizes) + " " + join(decompositions) + " " + std::to_string(repeats);
    std::fprintf(stderr, "running %s\n", command.c_str());
    std::FILE* p = popen(command.c_str(), "r");
    if (p == nullptr) throw std::runtime_error("cannot run " + command);
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, p) != nullptr) {
      std::fputs(buffer, stderr);
      const std::vector<std::string> f = split(std::string(buffer).substr(0, std::string(buffer).find('\n')), ',');
      if (f.size() != 5) continue;
      const auto key = std::make_pair(f[1], std::stol(f[2]));
      if (results.find(key) == results.end()) order.push_back(key);
      results[key][f[0]] = {std::stod(f[3]), std::stod(f[4])};
    }
    const int status = pclose(p);
    if (status != 0) std::printf("variant %s exited with status %d\n", v.c_str(), status);
  }

  std::printf("egpu-bench transparent: %s, commit %s, %s, %d CPU threads; NVBLAS CPU BLAS %s\n",
              info.device.c_str(), info.commit.c_str(), info.date.c_str(), info.cpu_threads, cpu_blas.c_str());
  Table table({"case", "N", "CPU Eigen s", "Eigen+NVBLAS s", "Eigen+egpu s", "CPU / egpu", "NVBLAS / egpu",
               "worst check"});
  auto csv = open_csv(csv_choice, "transparent", info,
                      {"date", "device", "commit", "cpu_threads", "case", "n", "cpu_s", "nvblas_s", "egpu_s",
                       "worst_check"});
  auto get = [](const std::map<std::string, std::pair<double, double>>& m, const char* v) {
    const auto it = m.find(v);
    return it == m.end() ? std::pair<double, double>{0, 0} : it->second;
  };
  for (const auto& key : order) {
    const auto& m = results[key];
    const auto cpu = get(m, "cpu"), nv = get(m, "nvblas"), eg = get(m, "egpu");
    const double check = std::max({cpu.second, nv.second, eg.second});
    auto secs = [](double s) { return s > 0 ? format("%.4g", s) : std::string("-"); };
    auto ratio = [](double a, double b) { return a > 0 && b > 0 ? format("%.2f", a / b) : std::string("-"); };
    table.add({key.first, std::to_string(key.second), secs(cpu.first), secs(nv.first), secs(eg.first),
               ratio(cpu.first, eg.first), ratio(nv.first, eg.first), format("%.1e", check)});
    if (csv)
      csv->add({info.date, info.device, info.commit, std::to_string(info.cpu_threads), key.first,
                std::to_string(key.second), format("%.6g", cpu.first), format("%.6g", nv.first),
                format("%.6g", eg.first), format("%.3g", check)});
  }
  table.print(stdout, Table::Style::markdown);
  if (csv) std::printf("CSV: %s\n", csv->path().c_str());
  return 0;
}

}  // namespace egpu_bench
