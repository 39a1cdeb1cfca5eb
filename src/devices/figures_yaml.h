#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "devices/cluster.h"
#include "devices/units.h"
#include "devices/yaml_file.h"

namespace tandem {

// A preset file's `sources:` table: citation tag -> title and address.
using Citations = std::map<std::string, std::string, std::less<>>;

// The keys of a device's figures, as presets and a cluster file's `figures:` spell them.
const std::vector<std::string_view>& device_figure_keys();

// Reads one figure. In a preset (citations given) it is `{value: 989 TFLOP/s, source: "[N2]"}`
// with optional `note:` or `uncertain:`, and every tag cited must be in the table. In a cluster
// file (citations null) a plain value is allowed too; its source is the file and line.
Figure read_figure(const YamlFile& file, const YAML::Node& node, const std::string& field,
                   Quantity quantity, const Citations* citations);

// Reads the figure keys present in `map` over `figures`, leaving the others as they are.
void read_device_figures(const YamlFile& file, const YAML::Node& map, const std::string& field,
                         const Citations* citations, DeviceFigures& figures);

}  // namespace tandem
