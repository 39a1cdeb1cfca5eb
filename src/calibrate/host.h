#pragma once
#include <cstddef>
#include <string>

#include "calibrate/microbench.h"

namespace tandem::calibrate {

// The host as the operating system describes it.
std::string cpu_model_name();  // /proc/cpuinfo's "model name", or "unknown CPU"
double physical_memory_bytes();

// Median bytes per second of std::memcpy between two host buffers of `bytes`: what a
// host-memory transfer between two CPU devices costs.
double memcpy_bandwidth(size_t bytes, const Repetition& repetition);

}  // namespace tandem::calibrate
