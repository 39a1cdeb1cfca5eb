#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "cost/graph_costs.h"

namespace tandem {

// "12.3 us", "4.56 ms", "1.20 s"; "cannot run" for +infinity.
std::string human_seconds(double seconds);

// The per-op-type table of `tandem inspect --cluster`: a column per device (group), the fastest
// device per row, the whole graph's total, and the source of each column's figures.
std::string render_device_costs(const GraphDeviceCosts& costs);
// The same as JSON; a time a device cannot achieve (it cannot run the op) is null.
nlohmann::json device_costs_json(const GraphDeviceCosts& costs);

}  // namespace tandem
