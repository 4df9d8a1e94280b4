// EGPU_DEVICE / EGPU_QUIET parsing, without CUDA.
#define BOOST_TEST_MODULE device_select
#include <boost/test/unit_test.hpp>

#include "egpu/error.hpp"
#include "runtime/device_select.hpp"

using egpu::runtime::parse_device_request;
using egpu::runtime::quiet_requested;

BOOST_AUTO_TEST_CASE(unset_or_empty_is_the_first_device) {
  for (const char* v : {static_cast<const char*>(nullptr), ""}) {
    const auto r = parse_device_request(v);
    BOOST_TEST(!r.cpu_only);
    BOOST_TEST(r.index == 0);
  }
}

BOOST_AUTO_TEST_CASE(cpu_in_any_case) {
  for (const char* v : {"cpu", "CPU", "Cpu"}) BOOST_TEST(parse_device_request(v).cpu_only, v);
}

BOOST_AUTO_TEST_CASE(indices) {
  BOOST_TEST(parse_device_request("0").index == 0);
  BOOST_TEST(!parse_device_request("0").cpu_only);
  BOOST_TEST(parse_device_request("1").index == 1);
  BOOST_TEST(parse_device_request("7").index == 7);
  BOOST_TEST(parse_device_request("12").index == 12);
}

BOOST_AUTO_TEST_CASE(anything_else_throws) {
  for (const char* v : {"banana", "-1", "1x", "x1", " 0", "0 ", "cpu0", "gpu", "1.5", "99999999999", "+1"})
    BOOST_CHECK_THROW(parse_device_request(v), egpu::error);
}

BOOST_AUTO_TEST_CASE(quiet) {
  BOOST_TEST(!quiet_requested(nullptr));
  BOOST_TEST(!quiet_requested(""));
  BOOST_TEST(!quiet_requested("0"));
  BOOST_TEST(quiet_requested("1"));
  BOOST_TEST(quiet_requested("yes"));
}

BOOST_AUTO_TEST_CASE(dispatch_request) {
  using egpu::Where;
  using egpu::runtime::parse_dispatch_request;
  BOOST_TEST((parse_dispatch_request(nullptr) == Where::automatic));
  BOOST_TEST((parse_dispatch_request("") == Where::automatic));
  BOOST_TEST((parse_dispatch_request("auto") == Where::automatic));
  BOOST_TEST((parse_dispatch_request("gpu") == Where::gpu));
  BOOST_TEST((parse_dispatch_request("cpu") == Where::cpu));
  for (const char* v : {"GPU2", "banana", " gpu", "gpu ", "1", "automatic"})
    BOOST_CHECK_THROW(parse_dispatch_request(v), egpu::error);
}
