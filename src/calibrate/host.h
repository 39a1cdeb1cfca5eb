#pragma once
#include <cstddef>
#include <string>

#include "calibrate/microbench.h"

namespace tandem::calibrate {

// The host as the operating system describes it.
std::string cpu_model_name();  // /proc/cpuinfo's "model name", or "unknown CPU"
double physical_memory_bytes();

// CPU time the whole machine and this process have used so far (/proc/stat, /proc/self/stat),
// in seconds; their difference over an interval is what other processes took from the cores.
struct CpuTimes {
  double machine_busy_seconds = 0;  // every core's user, nice, system, irq and softirq time
  double own_seconds = 0;           // this process's user and system time
  bool known = false;               // false where /proc cannot be read
};
CpuTimes cpu_times();
// Cores' worth of CPU that other processes used between two readings `wall_seconds` apart.
double others_cores(const CpuTimes& before, const CpuTimes& after, double wall_seconds);

// Typical bytes per second (typical_seconds) of std::memcpy between two host buffers of `bytes`:
// what a host-memory transfer between two CPU devices costs.
double memcpy_bandwidth(size_t bytes, const Repetition& repetition);

}  // namespace tandem::calibrate
