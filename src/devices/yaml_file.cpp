#include "devices/yaml_file.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <vector>

#include "ir/error.h"
#include "ir/spelling.h"

namespace tandem {
YamlFile::YamlFile(std::string path) : path_(std::move(path)) {
  if (std::filesystem::is_directory(path_)) throw InputError(path_, "is a directory, not a file");
  if (!std::filesystem::is_regular_file(path_)) throw InputError(path_, "no such file");
  try {
    root_ = YAML::LoadFile(path_);
  } catch (const YAML::Exception& e) {
    const std::string where =
        e.mark.is_null() ? "" : "line " + std::to_string(e.mark.line + 1) + ": ";
    throw InputError(path_, where + "not valid YAML: " + e.msg);
  }
}

int YamlFile::line(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

void YamlFile::fail(const YAML::Node& node, const std::string& field,
                    const std::string& what) const {
  fail_at(line(node), field, what);
}

void YamlFile::fail_at(int line, const std::string& field, const std::string& what) const {
  std::string message = line > 0 ? "line " + std::to_string(line) + ": " : "";
  message += field.empty() ? what : field + ": " + what;
  throw InputError(path_, message);
}

void YamlFile::check_keys(const YAML::Node& map, const std::string& field,
                          const std::vector<std::string_view>& allowed) const {
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    const std::string_view closest = nearest_spelling(key, allowed, 2);  // near misses only
    std::string what = "unknown key '" + key + "'";
    what += closest.empty() ? "" : " (did you mean '" + std::string(closest) + "'?)";
    fail(entry.first, field.empty() ? key : field + "." + key, what);
  }
}

void YamlFile::expect_map(const YAML::Node& node, const std::string& field) const {
  if (!node.IsMap()) fail(node, field, "expected a mapping of keys to values");
}

void YamlFile::expect_sequence(const YAML::Node& node, const std::string& field) const {
  if (!node.IsSequence()) fail(node, field, "expected a list");
}

std::string YamlFile::scalar(const YAML::Node& node, const std::string& field) const {
  if (!node.IsScalar()) fail(node, field, "expected a single value");
  return node.Scalar();
}

int YamlFile::integer(const YAML::Node& node, const std::string& field, int min, int max) const {
  const std::string text = scalar(node, field);
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    fail(node, field, "'" + text + "' is not an integer");
  }
  if (value < min || value > max) {
    fail(node, field,
         std::to_string(value) + " is out of range [" + std::to_string(min) + ", " +
             std::to_string(max) + "]");
  }
  return value;
}

}  // namespace tandem
