#include "runtime/recording.hpp"

#include <memory>
#include <string>

#include "egpu/error.hpp"

namespace egpu::runtime {
namespace {
thread_local std::unique_ptr<Recording> t_recording;
}  // namespace

Recording* recording() { return t_recording.get(); }

void set_recording(bool on) {
  if (on)
    t_recording = std::make_unique<Recording>();
  else
    t_recording.reset();
}

void refuse_while_recording(const char* what) {
  if (t_recording)
    throw egpu::error(std::string("egpu::record: ") + what +
                      " cannot be recorded (a recording holds calls whose operands and destinations are all "
                      "DeviceMatrix data, queued without waiting)");
}

}  // namespace egpu::runtime
