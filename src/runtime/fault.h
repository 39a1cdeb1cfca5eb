#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem {

// A fault injected into a multi-device run, to test that failures stop the run cleanly:
// "fail:cpu1:after=3" fails device cpu1 when it starts its 4th segment; "crash:cpu1:after=3"
// ends the whole process there instead, at once, as a lost host would (SIGKILL: nothing is
// cleaned up or told); "delay:cpu1:ms=50" delays each of its segments by 50 ms.
struct Fault {
  enum class Kind { kFail, kCrash, kDelay };
  Kind kind = Kind::kFail;
  std::string device;
  int after_segments = 0;  // kFail, kCrash
  int delay_ms = 0;        // kDelay
  std::string text;        // as written, for error messages
};

// Parses a comma-separated list of faults; throws InputError naming the bad one.
std::vector<Fault> parse_faults(const std::string& text);
// The faults in the environment variable TANDEM_FAULT (none when unset).
std::vector<Fault> faults_from_environment();

// A device failed during a run: names the device, the segment and the op.
class DeviceFailure : public std::runtime_error {
 public:
  DeviceFailure(int device, std::string device_name, const std::string& message)
      : std::runtime_error(message), device_(device), device_name_(std::move(device_name)) {}
  int device() const { return device_; }
  const std::string& device_name() const { return device_name_; }

 private:
  int device_;
  std::string device_name_;
};

}  // namespace tandem
