// A thread's recording of calls on DeviceMatrix data into a CUDA graph
// (egpu::record): while it lasts, the thread's stream is captured, so the
// calls are recorded instead of run. What a replay could not repeat (host
// memory read or written, waits, DeviceMatrix memory allocated) is refused
// with egpu::error.
#pragma once

#include <cstddef>
#include <vector>

namespace egpu::runtime {

struct Recording {
  std::size_t operations = 0;  // queued operations recorded: one per call, two through a temporary
  // DeviceMatrix memory released while recording: the recorded calls may
  // still use it, so the graph keeps it.
  std::vector<void*> released;
};

// The calling thread's recording, or null when it is not recording.
Recording* recording();
// Starts (true) or ends (false) the calling thread's recording.
void set_recording(bool on);

// Throws egpu::error saying that `what` cannot be recorded, when the
// calling thread is recording.
void refuse_while_recording(const char* what);

}  // namespace egpu::runtime
