#include "bench_common.hpp"

#include <Eigen/Core>
#include <egpu/device.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#ifndef EGPU_BENCH_COMMIT
#define EGPU_BENCH_COMMIT "unknown"
#endif
#ifndef EGPU_BENCH_RESULTS_DIR
#define EGPU_BENCH_RESULTS_DIR ""
#endif

namespace egpu_bench {

// ---- command line -------------------------------------------------------

Args::Args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word.rfind("--", 0) != 0 || word.size() < 3)
      throw std::invalid_argument("unexpected argument \"" + word + "\" (options start with --)");
    Option option;
    const auto eq = word.find('=');
    if (eq != std::string::npos) {
      option.name = word.substr(2, eq - 2);
      option.value = word.substr(eq + 1);
      option.has_value = true;
    } else {
      option.name = word.substr(2);
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
        option.value = argv[++i];
        option.has_value = true;
      }
    }
    m_options.push_back(std::move(option));
  }
}

Args::Option* Args::find(const std::string& name) {
  Option* found = nullptr;
  for (Option& option : m_options)
    if (option.name == name) {
      option.used = true;
      found = &option;  // the last one wins
    }
  return found;
}

bool Args::flag(const std::string& name) {
  const Option* option = find(name);
  if (option && option->has_value) throw std::invalid_argument("--" + name + " takes no value");
  return option != nullptr;
}

std::string Args::text(const std::string& name, const std::string& fallback) {
  const Option* option = find(name);
  if (!option) return fallback;
  if (!option->has_value) throw std::invalid_argument("--" + name + " needs a value");
  return option->value;
}

static long parse_integer(const std::string& name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0)
    throw std::invalid_argument("--" + name + ": \"" + text + "\" is not an integer");
  return value;
}

long Args::integer(const std::string& name, long fallback) {
  const Option* option = find(name);
  if (!option) return fallback;
  if (!option->has_value) throw std::invalid_argument("--" + name + " needs a value");
  return parse_integer(name, option->value);
}

std::vector<long> Args::integers(const std::string& name, const std::vector<long>& fallback) {
  const Option* option = find(name);
  if (!option) return fallback;
  if (!option->has_value) throw std::invalid_argument("--" + name + " needs a value");
  std::vector<long> values;
  for (const std::string& item : split(option->value, ',')) values.push_back(parse_integer(name, item));
  return values;
}

std::vector<std::string> Args::words(const std::string& name, const std::vector<std::string>& fallback) {
  const Option* option = find(name);
  if (!option) return fallback;
  if (!option->has_value) throw std::invalid_argument("--" + name + " needs a value");
  return split(option->value, ',');
}

void Args::finish() const {
  for (const Option& option : m_options)
    if (!option.used) throw std::invalid_argument("unknown option --" + option.name);
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string::size_type start = 0;
  while (true) {
    const auto end = text.find(sep, start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) parts.push_back(std::move(part));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

// ---- timing -------------------------------------------------------------

std::vector<double> time_calls(const std::function<void()>& f, int warmups, int repeats) {
  for (int i = 0; i < warmups; ++i) f();
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const double start = now_seconds();
    f();
    seconds.push_back(now_seconds() - start);
  }
  return seconds;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// ---- host work ----------------------------------------------------------

void parallel_for(std::size_t count, const std::function<void(std::size_t, std::size_t)>& body) {
  const std::size_t threads = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  const std::size_t pieces = std::min(threads, std::max<std::size_t>(1, count / 65536));
  if (pieces <= 1) {
    body(0, count);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(pieces);
  for (std::size_t t = 0; t < pieces; ++t)
    workers.emplace_back([&, t] { body(count * t / pieces, count * (t + 1) / pieces); });
  for (std::thread& w : workers) w.join();
}

namespace {

// splitmix64 of (seed, index) -> [-1, 1): a counter-based generator, so the
// pieces of a parallel fill need no shared state.
inline double uniform(unsigned long long seed, std::size_t index) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + index + 0x632be59bd9b4e019ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

template <class Real>
void fill_random_real(Real* p, std::size_t count, unsigned long long seed) {
  parallel_for(count, [=](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) p[i] = static_cast<Real>(uniform(seed, i));
  });
}

}  // namespace

void fill_random(float* p, std::size_t count, unsigned long long seed) { fill_random_real(p, count, seed); }
void fill_random(double* p, std::size_t count, unsigned long long seed) { fill_random_real(p, count, seed); }

// ---- egpu options ---------------------------------------------------------

const char* const kPipelineOptionsUsage =
    "  --streams S           egpu::Options::streams (0: egpu chooses; default 0)\n"
    "  --panel P             egpu::Options::panel, edge of the C tiles (0: chooses)\n"
    "  --k-panel K           egpu::Options::k_panel, depth of the k pieces (0: chooses)\n"
    "  --k-rounds R          egpu::Options::k_rounds, k pieces taken over all tiles first (-1: chooses)\n"
    "  --staging-threads T   egpu::Options::staging_threads (0: every hardware thread)\n";

egpu::Options parse_pipeline_options(Args& args) {
  egpu::Options options;
  const long streams = args.integer("streams", 0);
  const long panel = args.integer("panel", 0);
  const long k_panel = args.integer("k-panel", 0);
  const long k_rounds = args.integer("k-rounds", -1);
  const long staging = args.integer("staging-threads", 0);
  if (streams < 0 || streams > 64) throw std::invalid_argument("--streams must be 0..64");
  if (panel < 0) throw std::invalid_argument("--panel must not be negative");
  if (k_panel < 0) throw std::invalid_argument("--k-panel must not be negative");
  if (k_rounds < -1) throw std::invalid_argument("--k-rounds must be -1 or more");
  if (staging < 0 || staging > 1024) throw std::invalid_argument("--staging-threads must be 0..1024");
  options.streams = static_cast<int>(streams);
  options.panel = panel;
  options.k_panel = k_panel;
  options.k_rounds = k_rounds;
  options.staging_threads = static_cast<int>(staging);
  return options;
}

std::string describe_pipeline_options(const egpu::Options& options) {
  auto value = [](long long v) { return v == 0 ? std::string("auto") : std::to_string(v); };
  return "streams=" + value(options.streams) + " panel=" + value(options.panel) + " k_panel=" +
         value(options.k_panel) + " k_rounds=" + (options.k_rounds < 0 ? std::string("auto") : std::to_string(options.k_rounds)) +
         " staging_threads=" + value(options.staging_threads);
}

// ---- the run ------------------------------------------------------------

std::string short_device_name(const std::string& device) {
  std::vector<std::string> tokens;
  for (std::string token : split(device, ' ')) {
    for (char& ch : token) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (token != "nvidia") tokens.push_back(token);
  }
  // The model is the first word with a digit in it, up to a dash.
  std::string model = tokens.empty() ? "unknown" : tokens.front();
  for (const std::string& token : tokens)
    if (std::any_of(token.begin(), token.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
      model = token;
      break;
    }
  model = model.substr(0, model.find('-'));
  std::string safe;
  for (char ch : model)
    if (std::isalnum(static_cast<unsigned char>(ch))) safe += ch;
  return safe.empty() ? "unknown" : safe;
}

int openmp_threads(long wanted) {
#ifdef _OPENMP
  return wanted > 0 ? static_cast<int>(wanted) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#else
  (void)wanted;
  return 1;
#endif
}

RunInfo gather_run_info(int threads) {
  RunInfo info;
  const std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", &local);
  info.date = date;

  info.device = egpu::device_name();
  info.device_short = short_device_name(info.device);

  const char* env_commit = std::getenv("EGPU_COMMIT");
  info.commit = env_commit && *env_commit ? env_commit : EGPU_BENCH_COMMIT;

  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Eigen::setNbThreads(threads);
  info.cpu_threads = Eigen::nbThreads();
  return info;
}

std::string default_csv_path(const std::string& subcommand, const RunInfo& info, const std::string& csv_dir) {
  namespace fs = std::filesystem;
  fs::path dir = csv_dir;
  if (dir.empty()) {
    const fs::path results = EGPU_BENCH_RESULTS_DIR;
    std::error_code ec;
    dir = !results.empty() && fs::is_directory(results.parent_path(), ec) ? results : fs::path(".");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);  // a failure shows when the file is opened
  return (dir / (subcommand + "-" + info.date + "-" + info.device_short + ".csv")).string();
}

// ---- output -------------------------------------------------------------

static bool looks_numeric(const std::string& cell) {
  return !cell.empty() && (std::isdigit(static_cast<unsigned char>(cell[0])) ||
                           ((cell[0] == '-' || cell[0] == '.') && cell.size() > 1));
}

void Table::print(std::FILE* out, Style style) const {
  const bool markdown = style == Style::markdown;
  std::vector<std::size_t> width(m_headers.size());
  for (std::size_t c = 0; c < m_headers.size(); ++c)
    width[c] = std::max<std::size_t>(m_headers[c].size(), markdown ? 3 : 0);
  for (const auto& row : m_rows)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    if (markdown) std::fputs("| ", out);
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const int w = static_cast<int>(width[c]);
      const bool right = !header && looks_numeric(cell);
      std::fprintf(out, right ? "%*s" : "%-*s", w, cell.c_str());
      std::fputs(c + 1 < width.size() ? (markdown ? " | " : "  ") : (markdown ? " |\n" : "\n"), out);
    }
  };
  line(m_headers, true);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule, true);
  for (const auto& row : m_rows) line(row, false);
  std::fflush(out);
}

static std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string quoted = "\"";
  for (char ch : cell) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

// The first line of the file at path ("" when it is missing or empty).
static std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

Csv::Csv(const std::string& path, const std::vector<std::string>& headers) : m_path(path) {
  std::string header;
  for (std::size_t c = 0; c < headers.size(); ++c) header += (c ? "," : "") + csv_cell(headers[c]);
  // Rows never go under another bench version's header.
  for (int suffix = 2; suffix < 100; ++suffix) {
    const std::string existing = first_line(m_path);
    if (existing.empty() || existing == header) break;
    const std::filesystem::path p = path;
    m_path = (p.parent_path() / (p.stem().string() + "-" + std::to_string(suffix) + p.extension().string())).string();
  }
  std::error_code ec;
  const bool fresh = !std::filesystem::exists(m_path, ec) || std::filesystem::file_size(m_path, ec) == 0;
  m_file = std::fopen(m_path.c_str(), "a");
  if (!m_file) throw std::runtime_error("cannot write " + m_path);
  if (fresh) add(headers);
}

Csv::~Csv() {
  if (m_file) std::fclose(m_file);
}

void Csv::add(const std::vector<std::string>& row) {
  for (std::size_t c = 0; c < row.size(); ++c) {
    std::fputs(csv_cell(row[c]).c_str(), m_file);
    std::fputc(c + 1 < row.size() ? ',' : '\n', m_file);
  }
  std::fflush(m_file);  // rows survive a crash later in the run
}

CsvChoice parse_csv_options(Args& args) {
  CsvChoice choice;
  choice.file = args.text("csv", "");
  choice.dir = args.text("csv-dir", "");
  choice.off = args.flag("no-csv");
  return choice;
}

std::unique_ptr<Csv> open_csv(const CsvChoice& choice, const std::string& subcommand, const RunInfo& info,
                              const std::vector<std::string>& headers) {
  if (choice.off) return nullptr;
  return std::make_unique<Csv>(choice.file.empty() ? default_csv_path(subcommand, info, choice.dir) : choice.file,
                               headers);
}

std::string format(const char* fmt, ...) {
  char buffer[256];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return n < 0 ? std::string() : std::string(buffer, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buffer - 1));
}

void check_sizes(const std::vector<long>& sizes) {
  for (long n : sizes)
    if (n < 1 || n > 65536) throw std::invalid_argument("--sizes: " + std::to_string(n) + " is out of range");
}

void check_choices(const std::vector<std::string>& values, const std::vector<std::string>& allowed,
                   const char* option) {
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  for (const std::string& v : values)
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      throw std::invalid_argument(std::string("--") + option + ": unknown value \"" + v + "\" (" + list + ")");
}

bool print_help(Args& args, const char* usage, bool pipeline_options) {
  if (!args.flag("help")) return false;
  std::fputs(usage, stdout);
  if (pipeline_options) std::fputs(kPipelineOptionsUsage, stdout);
  return true;
}

}  // namespace egpu_bench
