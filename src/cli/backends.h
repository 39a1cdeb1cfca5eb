#pragma once
// The backends this build of Tandem can run, as devices for a cluster.
#include <memory>
#include <vector>

#include "backends/device.h"
#include "devices/cluster.h"

namespace tandem::cli {

// One device per cluster device: CPU devices on their own consecutive cores of this machine
// (`cores` of the spec; 0 = all), PJRT devices on their plugin's addressable devices in the
// order they are declared; null for a backend this build or machine has none of.
std::vector<std::unique_ptr<Device>> make_devices(const Cluster& cluster);

// Lets the planner ask the PJRT backend which nodes it lowers (where the backend is built).
void install_backend_checks();

}  // namespace tandem::cli
