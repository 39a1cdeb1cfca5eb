#include "devices/figures_yaml.h"

#include <array>
#include <cmath>

namespace tandem {
namespace {

// "[N2][M1] dense" -> "dense; [N2] <title, address>; [M1] <title, address>".
std::string expand_citations(const YamlFile& file, const YAML::Node& node, const std::string& field,
                             const std::string& text, const Citations& citations) {
  std::string prose, cited;
  size_t position = 0;
  while (position < text.size()) {
    const size_t open = text.find('[', position);
    const size_t close = open == std::string::npos ? open : text.find(']', open);
    if (close == std::string::npos) {
      prose += text.substr(position);
      break;
    }
    prose += text.substr(position, open - position);
    const std::string tag = text.substr(open + 1, close - open - 1);
    const auto found = citations.find(tag);
    if (found == citations.end()) {
      file.fail(node, field, "cites [" + tag + "], which is not in the file's sources");
    }
    cited += (cited.empty() ? "[" : "; [") + tag + "] " + found->second;
    position = close + 1;
  }
  if (cited.empty()) file.fail(node, field, "cites no source: give one as [TAG] from sources");
  const size_t first = prose.find_first_not_of(" ;,");
  const size_t last = prose.find_last_not_of(" ;,");
  prose = first == std::string::npos ? "" : prose.substr(first, last - first + 1);
  return prose.empty() ? cited : prose + "; " + cited;
}

}  // namespace

const std::vector<std::string_view>& device_figure_keys() {
  static const std::vector<std::string_view> keys = {
      "matrix",        "vector",       "memory",          "memory_bandwidth", "launch_overhead",
      "step_overhead", "run_overhead", "handoff_latency", "price_per_hour",   "matrix_tile"};
  return keys;
}

Figure read_figure(const YamlFile& file, const YAML::Node& node, const std::string& field,
                   Quantity quantity, const Citations* citations) {
  Figure figure;
  // yaml-cpp nodes are references: assigning one to another would overwrite the tree.
  const YAML::Node value_node = node.IsMap() ? node["value"] : node;
  if (node.IsMap()) {
    file.check_keys(node, field, {"value", "source", "note", "uncertain"});
    if (!value_node) file.fail(node, field, "missing 'value'");
    if (node["source"]) {
      const std::string text = file.scalar(node["source"], field + ".source");
      figure.source =
          citations ? expand_citations(file, node["source"], field + ".source", text, *citations)
                    : text;
    }
    if (node["note"]) figure.note = file.scalar(node["note"], field + ".note");
    if (node["uncertain"]) {
      if (!figure.note.empty()) file.fail(node, field, "give either 'note' or 'uncertain'");
      figure.note = "uncertain: " + file.scalar(node["uncertain"], field + ".uncertain");
    }
  } else if (citations) {
    file.fail(node, field, "a preset figure needs {value: ..., source: \"[TAG]\"}");
  }
  std::string error;
  const auto value = parse_quantity(file.scalar(value_node, field), quantity, error);
  if (!value) file.fail(value_node, field, error);
  if (*value <= 0) file.fail(value_node, field, "must be positive, not " + value_node.Scalar());
  figure.value = *value;
  if (figure.source.empty()) {
    if (citations) file.fail(node, field, "has no source");
    figure.source = "cluster file " + file.path() + " line " + std::to_string(YamlFile::line(node));
  }
  return figure;
}

void read_device_figures(const YamlFile& file, const YAML::Node& map, const std::string& field,
                         const Citations* citations, DeviceFigures& figures) {
  auto read_precisions = [&](const char* key, std::array<Figure, kPrecisionCount>& peaks) {
    const YAML::Node node = map[key];
    if (!node) return;
    const std::string where = field + "." + key;
    file.expect_map(node, where);
    std::vector<std::string_view> names;
    for (size_t p = 0; p < kPrecisionCount; ++p) {
      names.push_back(precision_name(static_cast<Precision>(p)));
    }
    file.check_keys(node, where, names);
    for (size_t p = 0; p < kPrecisionCount; ++p) {
      const std::string name(names[p]);
      if (node[name]) {
        peaks[p] = read_figure(file, node[name], where + "." + name, Quantity::kFlops, citations);
      }
    }
  };
  read_precisions("matrix", figures.matrix_flops);
  read_precisions("vector", figures.vector_flops);
  auto read_one = [&](const char* key, Quantity quantity, Figure& figure) {
    if (map[key]) figure = read_figure(file, map[key], field + "." + key, quantity, citations);
  };
  read_one("memory", Quantity::kBytes, figures.memory_bytes);
  read_one("memory_bandwidth", Quantity::kBandwidth, figures.memory_bandwidth);
  read_one("launch_overhead", Quantity::kSeconds, figures.launch_overhead);
  read_one("step_overhead", Quantity::kSeconds, figures.step_overhead);
  read_one("run_overhead", Quantity::kSeconds, figures.run_overhead);
  read_one("handoff_latency", Quantity::kSeconds, figures.handoff_latency);
  read_one("price_per_hour", Quantity::kPrice, figures.price_per_hour);
  if (map["matrix_tile"]) {
    const Figure tile =
        read_figure(file, map["matrix_tile"], field + ".matrix_tile", Quantity::kCount, citations);
    // Range first: casting a value beyond int's range is undefined behaviour.
    if (!(tile.value >= 1 && tile.value <= 4096) || tile.value != std::floor(tile.value)) {
      file.fail(map["matrix_tile"], field + ".matrix_tile", "must be an integer up to 4096");
    }
    figures.matrix_tile = static_cast<int>(tile.value);
    figures.matrix_tile_source = tile.source;
  }
}

}  // namespace tandem
