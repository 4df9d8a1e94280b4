// What EGPU_DEVICE asks for, parsed without touching CUDA (so it is tested
// on any machine): unset or empty -> the first device, "cpu" -> none, an
// index -> that device. Anything else is an error.
#pragma once

#include <optional>
#include <string>

#include "egpu/options.hpp"

namespace egpu::runtime {

struct DeviceRequest {
  bool cpu_only = false;
  int index = 0;
};

// Throws egpu::error for a value that is neither "cpu" nor a device index.
DeviceRequest parse_device_request(const char* env_value);

// Whether the notice about running on the CPU is silenced (EGPU_QUIET=1).
bool quiet_requested(const char* env_value);

// EGPU_DISPATCH: "auto" (or unset, or empty), "gpu" or "cpu"; anything else
// throws egpu::error naming the value.
Where parse_dispatch_request(const char* env_value);

}  // namespace egpu::runtime
