#pragma once
#include <nlohmann/json.hpp>

#include "devices/cluster.h"

namespace tandem {

// A figure as {"value", "source"} (and "note" when it has one); null when unknown.
nlohmann::json figure_json(const Figure& figure);
// The whole cluster with the source of every figure, for `tandem devices --json` (docs/JSON.md):
// each figure's key names its unit.
nlohmann::json cluster_json(const Cluster& cluster);

}  // namespace tandem
