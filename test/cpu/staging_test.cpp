// The staging threads (src/executor/thread_pool) and their copies
// (src/executor/host_copy), on the CPU:
//  - parallel_for runs every index exactly once, for counts from 0 up,
//    any thread count and grain, whole ranges of at least `grain` items;
//  - many threads at once (more than the pool's job slots, so some run
//    their jobs alone), and parallel_for nested in a body;
//  - between calls the workers fall asleep, and a later call wakes them;
//  - a throwing body: the first error is rethrown, after every range ended;
//  - stream_copy equals memcpy at any alignment of source and destination
//    and any length, and writes nothing outside its destination.
#define BOOST_TEST_MODULE staging
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "executor/host_copy.hpp"
#include "executor/thread_pool.hpp"

using egpu::executor::parallel_for;

namespace {

// Runs one parallel_for and checks that it covered [0, count) once.
void check_cover(std::int64_t count, int threads, std::int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(count));
  std::atomic<std::int64_t> short_ranges{0}, ranges{0};
  parallel_for(count, threads, grain, [&](std::int64_t b, std::int64_t e) {
    ++ranges;
    if (e - b < grain) ++short_ranges;
    for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
  });
  for (std::int64_t i = 0; i < count; ++i)
    if (hits[static_cast<std::size_t>(i)].load() != 1)
      BOOST_FAIL("index " << i << " of " << count << " ran " << hits[static_cast<std::size_t>(i)].load()
                          << " times (threads " << threads << ", grain " << grain << ")");
  // Ranges shorter than the grain only when the whole count is.
  if (count >= grain) BOOST_TEST(short_ranges.load() == 0);
  BOOST_TEST(ranges.load() <= std::max(1, threads));
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_index_once) {
  std::mt19937 rng(7);
  for (int t = 0; t < 400; ++t) {
    const std::int64_t count = std::uniform_int_distribution<std::int64_t>(0, t % 10 == 0 ? 2000000 : 5000)(rng);
    const int threads = std::uniform_int_distribution<int>(1, 40)(rng);
    const std::int64_t grain = std::uniform_int_distribution<std::int64_t>(1, 3000)(rng);
    check_cover(count, threads, grain);
  }
}

BOOST_AUTO_TEST_CASE(many_callers_and_nested_calls) {
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < 24; ++c)
    callers.emplace_back([c, &failures] {
      std::mt19937 rng(100 + c);
      for (int t = 0; t < 150; ++t) {
        const std::int64_t count = std::uniform_int_distribution<std::int64_t>(1, 20000)(rng);
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(count));
        parallel_for(count, 16, 64, [&](std::int64_t b, std::int64_t e) {
          // Every other call splits its range again.
          if (t % 2 == 0)
            parallel_for(e - b, 4, 16, [&](std::int64_t b2, std::int64_t e2) {
              for (std::int64_t i = b + b2; i < b + e2; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
            });
          else
            for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
        });
        for (auto& h : hits)
          if (h.load() != 1) ++failures;
      }
    });
  for (auto& t : callers) t.join();
  BOOST_TEST(failures.load() == 0);
}

BOOST_AUTO_TEST_CASE(calls_after_the_workers_fell_asleep) {
  // Idle workers sleep after half a millisecond; waits longer than that
  // and shorter, in turn, meet them asleep, falling asleep and awake.
  for (int t = 0; t < 60; ++t) {
    std::this_thread::sleep_for(std::chrono::microseconds(t % 3 == 0 ? 3000 : 50 * t));
    check_cover(100000, 16, 1000);
  }
}

BOOST_AUTO_TEST_CASE(an_error_is_rethrown_after_every_range_ended) {
  for (int t = 0; t < 50; ++t) {
    std::atomic<int> running{0}, started{0}, thrown{0}, ended{0};
    bool caught = false;
    try {
      // Ranges that start at 0 or at 8000 throw, the others sleep first.
      parallel_for(16000, 16, 1000, [&](std::int64_t b, std::int64_t) {
        ++running;
        ++started;
        std::this_thread::sleep_for(std::chrono::microseconds(b == 0 ? 0 : 200));
        --running;
        if (b == 0 || b == 8000) {
          ++thrown;
          throw std::runtime_error(b == 0 ? "first" : "second");
        }
        ++ended;
      });
    } catch (const std::runtime_error& e) {
      caught = true;
      BOOST_TEST(running.load() == 0);  // no range still running
      BOOST_TEST((std::string(e.what()) == "first" || std::string(e.what()) == "second"));
    }
    BOOST_TEST(caught);
    BOOST_TEST(thrown.load() >= 1);
    BOOST_TEST(ended.load() == started.load() - thrown.load());  // every other range ran to its end
  }
}

BOOST_AUTO_TEST_CASE(stream_copy_equals_memcpy) {
  std::mt19937 rng(3);
  std::vector<unsigned char> src(1 << 16), dst(1 << 16), want;
  for (auto& c : src) c = static_cast<unsigned char>(rng());
  for (int t = 0; t < 3000; ++t) {
    const std::size_t s0 = rng() % 64, d0 = rng() % 64;
    const std::size_t n = t % 50 == 0 ? (1 << 16) - 64 : rng() % (t % 2 ? 200 : 5000);
    for (auto& c : dst) c = 0xA5;  // poison
    want = dst;
    std::memcpy(want.data() + d0, src.data() + s0, n);
    egpu::executor::stream_copy(dst.data() + d0, src.data() + s0, n);
    egpu::executor::fence_stream_copies();
    BOOST_TEST((dst == want), "stream_copy differs from memcpy: source offset " << s0 << ", destination offset "
                                                                               << d0 << ", " << n << " bytes");
  }
}
