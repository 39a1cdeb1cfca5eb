#include "runtime/fault.h"

#include <cstdlib>
#include <sstream>

#include "ir/error.h"

namespace tandem {
namespace {

int parse_count(const std::string& text, const std::string& key, const std::string& fault) {
  const std::string prefix = key + "=";
  size_t used = 0;
  int value = -1;
  if (text.rfind(prefix, 0) == 0) {
    try {
      value = std::stoi(text.substr(prefix.size()), &used);
    } catch (const std::exception&) {
    }
  }
  if (value < 0 || used == 0 || prefix.size() + used != text.size())
    throw InputError("TANDEM_FAULT " + fault, "expected " + key + "=N with N >= 0");
  return value;
}

Fault parse_fault(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ':');) parts.push_back(part);
  if (parts.size() != 3 || parts[1].empty())
    throw InputError("TANDEM_FAULT " + text,
                     "expected fail:DEVICE:after=N, crash:DEVICE:after=N or delay:DEVICE:ms=N");
  Fault fault;
  fault.device = parts[1];
  fault.text = text;
  if (parts[0] == "fail") {
    fault.kind = Fault::Kind::kFail;
    fault.after_segments = parse_count(parts[2], "after", text);
  } else if (parts[0] == "crash") {
    fault.kind = Fault::Kind::kCrash;
    fault.after_segments = parse_count(parts[2], "after", text);
  } else if (parts[0] == "delay") {
    fault.kind = Fault::Kind::kDelay;
    fault.delay_ms = parse_count(parts[2], "ms", text);
  } else {
    throw InputError("TANDEM_FAULT " + text,
                     "unknown fault '" + parts[0] + "' (fail, crash, delay)");
  }
  return fault;
}

}  // namespace

std::vector<Fault> parse_faults(const std::string& text) {
  std::vector<Fault> faults;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) {
    if (!item.empty()) faults.push_back(parse_fault(item));
  }
  return faults;
}

std::vector<Fault> faults_from_environment() {
  const char* text = std::getenv("TANDEM_FAULT");
  return text ? parse_faults(text) : std::vector<Fault>{};
}

}  // namespace tandem
