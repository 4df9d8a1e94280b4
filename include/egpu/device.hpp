// What the library found on this machine. Everything runs without a GPU:
// calls then go to CPU Eigen and give Eigen's result.
#pragma once

#include <string>

namespace egpu {

// True when products run on a GPU: a driver and a device are present and
// EGPU_DEVICE does not say "cpu". Decided once per process.
bool has_device();

// The device in use ("NVIDIA H100 80GB HBM3"), or "cpu".
std::string device_name();

}  // namespace egpu
