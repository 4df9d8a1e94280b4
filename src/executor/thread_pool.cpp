#include "executor/thread_pool.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace egpu::executor {
namespace {

class Pool {
 public:
  explicit Pool(int threads) {
    for (int t = 0; t < threads; ++t) m_workers.emplace_back([this] { work(); });
  }
  // Process-lifetime object (never destroyed: threads are detached at exit).
  // Queues the tasks of one parallel_for at once, with one wake-up call.
  void submit(std::vector<std::function<void()>>& tasks) {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      for (auto& task : tasks) m_tasks.push_back(std::move(task));
    }
    if (tasks.size() == 1)
      m_ready.notify_one();
    else
      m_ready.notify_all();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_ready.wait(lock, [this] { return !m_tasks.empty(); });
        task = std::move(m_tasks.front());
        m_tasks.pop_front();
      }
      task();
    }
  }
  std::mutex m_mutex;
  std::condition_variable m_ready;
  std::deque<std::function<void()>> m_tasks;
  std::vector<std::thread> m_workers;
};

Pool& pool() {
  static Pool* p = [] {
    auto* created = new Pool(std::max(0, hardware_threads() - 1));
    return created;
  }();
  return *p;
}

struct Latch {
  std::mutex mutex;
  std::condition_variable done;
  int pending = 0;
  std::exception_ptr error;
};

}  // namespace

int hardware_threads() {
  static const int n = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(n);
}

void parallel_for(std::int64_t count, int threads, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (count <= 0) return;
  const std::int64_t by_grain = std::max<std::int64_t>(1, count / std::max<std::int64_t>(1, grain));
  const std::int64_t parts = std::clamp<std::int64_t>(std::min<std::int64_t>(threads, by_grain), 1,
                                                      std::min<std::int64_t>(count, hardware_threads()));
  if (parts == 1) {
    body(0, count);
    return;
  }
  Latch latch;
  latch.pending = static_cast<int>(parts - 1);
  auto range = [&](std::int64_t part) {
    return std::pair<std::int64_t, std::int64_t>{count * part / parts, count * (part + 1) / parts};
  };
  std::vector<std::function<void()>> tasks;
  for (std::int64_t part = 1; part < parts; ++part) {
    tasks.emplace_back([&latch, &body, r = range(part)] {
      std::exception_ptr error;
      try {
        body(r.first, r.second);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(latch.mutex);
      if (error && !latch.error) latch.error = error;
      if (--latch.pending == 0) latch.done.notify_one();
    });
  }
  pool().submit(tasks);
  std::exception_ptr mine;
  try {
    const auto r = range(0);
    body(r.first, r.second);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(latch.mutex);
  latch.done.wait(lock, [&] { return latch.pending == 0; });
  if (mine) std::rethrow_exception(mine);
  if (latch.error) std::rethrow_exception(latch.error);
}

struct TaskThread::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::function<void()> task;
  bool running = false, stop = false, held = false;
  std::thread thread;

  void work() {
    for (;;) {
      std::function<void()> next;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stop || task; });
        if (!task) return;
        next = std::move(task);
        task = nullptr;
      }
      next();  // a writer's loop: it catches its own exceptions
      {
        std::lock_guard<std::mutex> lock(mutex);
        running = false;
      }
      changed.notify_all();
    }
  }
};

TaskThread::TaskThread() : m_state(new State) {
  m_state->thread = std::thread([s = m_state] { s->work(); });
}

TaskThread::~TaskThread() {
  {
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->stop = true;
  }
  m_state->changed.notify_all();
  m_state->thread.join();
  delete m_state;
}

TaskThread* TaskThread::acquire() {
  thread_local std::unique_ptr<TaskThread> mine;
  if (!mine) mine = std::make_unique<TaskThread>();
  if (mine->m_state->held) return nullptr;
  mine->m_state->held = true;
  return mine.get();
}

void TaskThread::start(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->task = std::move(task);
    m_state->running = true;
  }
  m_state->changed.notify_all();
}

void TaskThread::join() {
  std::unique_lock<std::mutex> lock(m_state->mutex);
  m_state->changed.wait(lock, [&] { return !m_state->running; });
  m_state->held = false;
}

}  // namespace egpu::executor
