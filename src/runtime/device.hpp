// The device this process uses, chosen once: EGPU_DEVICE, a driver, a
// device of compute capability 8.0 or newer.
#pragma once

#include <cstddef>
#include <string>

namespace egpu::runtime {

struct DeviceInfo {
  bool usable = false;
  int index = -1;
  std::string name = "cpu";
  std::string why_not;  // when not usable
  int copy_engines = 0;
};

// Decided on first call; throws egpu::error when EGPU_DEVICE names a device
// that is not there or is malformed.
const DeviceInfo& selected_device();

}  // namespace egpu::runtime
