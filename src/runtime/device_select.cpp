#include "runtime/device_select.hpp"

#include <cctype>
#include <string>

#include "egpu/error.hpp"

namespace egpu::runtime {

DeviceRequest parse_device_request(const char* env_value) {
  DeviceRequest request;
  if (env_value == nullptr || *env_value == '\0') return request;
  std::string value(env_value);
  for (char& ch : value) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (value == "cpu") {
    request.cpu_only = true;
    return request;
  }
  bool digits = value.size() <= 4;
  for (char ch : value) digits = digits && std::isdigit(static_cast<unsigned char>(ch));
  if (!digits)
    throw egpu::error("EGPU_DEVICE=\"" + std::string(env_value) + "\": expected a device index or \"cpu\"");
  request.index = std::stoi(value);
  return request;
}

bool quiet_requested(const char* env_value) {
  return env_value != nullptr && *env_value != '\0' && std::string(env_value) != "0";
}

Where parse_dispatch_request(const char* env_value) {
  if (env_value == nullptr || *env_value == '\0') return Where::automatic;
  const std::string v(env_value);
  if (v == "auto") return Where::automatic;
  if (v == "gpu") return Where::gpu;
  if (v == "cpu") return Where::cpu;
  throw egpu::error("EGPU_DISPATCH=" + v + ": expected auto, gpu or cpu");
}

}  // namespace egpu::runtime
