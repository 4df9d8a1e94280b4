// Shared pieces of egpu-bench's subcommands: command-line parsing, wall-clock
// timing (warm-up, median of repeats), the run's metadata (date, device,
// commit), an aligned stdout table and CSV output.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <egpu/options.hpp>
#include <egpu/pin.hpp>

namespace egpu_bench {

// ---- command line -------------------------------------------------------

// The options of one subcommand: "--name value" or "--name=value" and bare
// "--flag"s. Unknown options are an error (a typo must not silently run the
// defaults).
class Args {
 public:
  Args(int argc, char** argv);  // argv[0] is the subcommand

  bool flag(const std::string& name);  // "--name" present
  std::string text(const std::string& name, const std::string& fallback);
  long integer(const std::string& name, long fallback);
  std::vector<long> integers(const std::string& name, const std::vector<long>& fallback);  // "1,2,3"
  std::vector<std::string> words(const std::string& name, const std::vector<std::string>& fallback);

  // Throws std::invalid_argument naming any option that no call above asked for.
  void finish() const;

 private:
  struct Option {
    std::string name, value;
    bool has_value = false, used = false;
  };
  Option* find(const std::string& name);
  std::vector<Option> m_options;
};

std::vector<std::string> split(const std::string& text, char sep);

// ---- timing -------------------------------------------------------------

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Wall-clock seconds of `warmups` untimed and `repeats` timed calls of f.
std::vector<double> time_calls(const std::function<void()>& f, int warmups, int repeats);
double median(std::vector<double> values);

// ---- host work ----------------------------------------------------------

// Runs body(begin, end) over [0, count) split into contiguous pieces, one per
// hardware thread (filling and comparing 16384 x 16384 matrices on one core
// would take longer than the products being measured).
void parallel_for(std::size_t count, const std::function<void(std::size_t, std::size_t)>& body);

// count values uniform in [-1, 1) (never all zeros), the same for the same
// seed on any machine and thread count.
void fill_random(float* p, std::size_t count, unsigned long long seed);
void fill_random(double* p, std::size_t count, unsigned long long seed);

// ---- egpu options ---------------------------------------------------------

// The pipeline's tuning knobs, passed through to egpu::Options:
// --streams, --panel, --k-panel, --staging-threads (0 or absent: egpu chooses).
egpu::Options parse_pipeline_options(Args& args);
// "streams=auto panel=2048 ..." (no commas: it goes into CSV cells as is).
std::string describe_pipeline_options(const egpu::Options& options);

// The guards that page-lock `matrices` for the pinned memory mode; on a
// failure, no guards and `error` says why (the case is then reported as
// failed rather than timed on pageable memory).
template <class... Matrices>
std::vector<egpu::PinGuard> pin_all(std::string& error, Matrices&... matrices) {
  std::vector<egpu::PinGuard> guards;
  try {
    (guards.push_back(egpu::pin(matrices)), ...);
  } catch (const std::exception& e) {
    guards.clear();
    error = std::string("egpu::pin failed: ") + e.what();
  }
  return guards;
}

// --help: prints the subcommand's usage (and the egpu::Options flags of
// the subcommands that pass them on); true when it was asked for.
bool print_help(Args& args, const char* usage, bool pipeline_options = true);

// Option checks shared by the subcommands: throw std::invalid_argument
// naming the option and what it accepts.
void check_sizes(const std::vector<long>& sizes);
void check_choices(const std::vector<std::string>& values, const std::vector<std::string>& allowed,
                   const char* option);
extern const char* const kPipelineOptionsUsage;

// ---- the run ------------------------------------------------------------

struct RunInfo {
  std::string date;          // YYYY-MM-DD, local time
  std::string device;        // egpu::device_name()
  std::string device_short;  // "h100", "h200", "cpu": for file names
  std::string commit;        // EGPU_COMMIT, else the configure-time git commit
  int cpu_threads = 1;       // Eigen's thread count for the CPU baseline
};

// The threads a hand-written OpenMP loop of a CPU baseline runs on: `wanted`,
// all cores when wanted <= 0, and 1 when the bench is built without OpenMP
// (its pragmas are then ignored).
int openmp_threads(long wanted);

// Sets Eigen's thread count (threads <= 0: all cores) and gathers the rest.
RunInfo gather_run_info(int threads);

// "NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA A100-SXM4-80GB" -> "a100", "cpu" -> "cpu".
std::string short_device_name(const std::string& device);

// Where a subcommand's CSV goes when --csv is not given: --csv-dir if given,
// else bench/results/ in the source tree when that tree exists, else the
// working directory; named <subcommand>-<date>-<device-short>.csv.
std::string default_csv_path(const std::string& subcommand, const RunInfo& info, const std::string& csv_dir);

// ---- output -------------------------------------------------------------

// A table printed with aligned columns; numbers right-aligned. The markdown
// style puts the cells between pipes under a |---| rule.
class Table {
 public:
  enum class Style { aligned, markdown };
  explicit Table(std::vector<std::string> headers) : m_headers(std::move(headers)) {}
  void add(std::vector<std::string> row) { m_rows.push_back(std::move(row)); }
  void print(std::FILE* out, Style style = Style::aligned) const;

 private:
  std::vector<std::string> m_headers;
  std::vector<std::vector<std::string>> m_rows;
};

// A CSV file: rows are appended, the header is written when the file is new
// or empty, so several runs of a day collect in one file. A file that exists
// with a different header (an older bench's columns) is left alone: the rows
// go to <name>-2.csv (-3, ...) instead.
class Csv {
 public:
  Csv(const std::string& path, const std::vector<std::string>& headers);
  ~Csv();
  Csv(const Csv&) = delete;
  Csv& operator=(const Csv&) = delete;
  void add(const std::vector<std::string>& row);
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  std::FILE* m_file = nullptr;
};

// A subcommand's CSV options: --csv FILE, --csv-dir DIR, --no-csv.
struct CsvChoice {
  std::string file, dir;
  bool off = false;
};
CsvChoice parse_csv_options(Args& args);

// The CSV chosen (nullptr under --no-csv): --csv FILE, else
// default_csv_path(subcommand, info, --csv-dir).
std::unique_ptr<Csv> open_csv(const CsvChoice& choice, const std::string& subcommand, const RunInfo& info,
                              const std::vector<std::string>& headers);

// printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace egpu_bench
