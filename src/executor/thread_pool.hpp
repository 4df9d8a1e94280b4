// The host threads that copy between the user's pageable memory and pinned
// staging buffers: one copy engine of DMA needs several CPU cores of
// memcpy to keep up with it.
#pragma once

#include <cstdint>
#include <functional>

namespace egpu::executor {

// Runs body(begin, end) over [0, count) split into at most `threads`
// contiguous ranges, on the process-wide pool's workers and the calling
// thread (which takes ranges too, so the call finishes even while every
// worker is busy); returns when all are done. Ranges of fewer than `grain`
// items are not split further. The first exception from body is rethrown
// here, after every range has ended. Any number of threads may call it at
// once, nested calls included.
void parallel_for(std::int64_t count, int threads, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& body);

// Every hardware thread: the default number of staging threads. The pool
// itself has two fewer workers, and at least two (see thread_pool.cpp).
int hardware_threads();

// One thread kept for the life of the calling thread that runs one task at
// a time: a call's writer runs here rather than on a thread of its own
// (starting and joining a thread cost each call tens of microseconds).
class TaskThread {
 public:
  // The calling thread's task thread, or nullptr while a task of an
  // earlier caller on this thread still holds it (the caller then starts a
  // thread of its own).
  static TaskThread* acquire();
  // Runs `task` on the thread; join() waits for it and gives the thread back.
  void start(std::function<void()> task);
  void join();

  TaskThread();
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

 private:
  struct State;
  State* m_state;
};

}  // namespace egpu::executor
