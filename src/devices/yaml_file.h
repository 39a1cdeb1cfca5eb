#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

// A YAML file read for validation: every error names the file (as the InputError's subject),
// the line and the field, e.g. "line 12: devices[1].preset: unknown preset 'h1000'".
class YamlFile {
 public:
  // Syntax errors and unreadable files are InputErrors too, with the line where one is known.
  explicit YamlFile(std::string path);

  const std::string& path() const { return path_; }
  const YAML::Node& root() const { return root_; }

  // 1-based line of a node, or 0 when the node is not in the file.
  static int line(const YAML::Node& node);
  [[noreturn]] void fail(const YAML::Node& node, const std::string& field,
                         const std::string& what) const;
  [[noreturn]] void fail_at(int line, const std::string& field, const std::string& what) const;

  // Rejects keys outside `allowed` (typos), suggesting the closest allowed key.
  void check_keys(const YAML::Node& map, const std::string& field,
                  const std::vector<std::string_view>& allowed) const;
  void expect_map(const YAML::Node& node, const std::string& field) const;
  void expect_sequence(const YAML::Node& node, const std::string& field) const;
  std::string scalar(const YAML::Node& node, const std::string& field) const;
  int integer(const YAML::Node& node, const std::string& field, int min, int max) const;

 private:
  std::string path_;
  YAML::Node root_;
};

}  // namespace tandem
