#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/batch_split.h"
#include "onnx/importer.h"

namespace tandem::cli {

// Exit statuses, the same for every verb.
inline constexpr int kExitOk = 0;
inline constexpr int kExitMismatch = 1;      // outputs differ from --expect
inline constexpr int kExitBadInput = 2;      // a file or option that cannot be used
inline constexpr int kExitInternal = 3;      // a bug in Tandem
inline constexpr int kExitDeviceFailed = 4;  // a device failed during a multi-device run

struct ModelOptions {
  std::string model;
  std::vector<std::string> dims;    // NAME=N
  std::vector<std::string> shapes;  // NAME=AxBxC
  std::vector<std::string> inputs;  // NAME=FILE.npy: the input's data, and its shape
  bool json = false;
  // Whether every --dim must name one of this model's symbolic dimensions; a verb taking several
  // models checks that each names one of some model's instead.
  bool every_dim_named = true;
};

struct InspectOptions : ModelOptions {
  std::string cluster;  // adds each op type's predicted time on every device of this cluster
};

struct RunOptions : ModelOptions {
  std::vector<std::string> expects;  // NAME=FILE.npy
  double rtol = 1e-3;                // --expect tolerances (util/compare.h)
  std::optional<double> atol;        // absolute; default 1e-4 of the reference's largest |value|
  std::string output_dir;
  int threads = 0;
  uint64_t seed = 0;
  int warmup = 1;
  double warmup_seconds = 0;  // > 0: warm up for this long instead of --warmup runs
  int iterations = 10;
  double duration = 0;             // > 0: time runs for this many seconds instead of --iterations
  bool fuse = true;                // fold BatchNorm and fuse activations before running
  std::string precision = "fp32";  // matrix products' precision on the CPU (MatrixPrecision)
  bool profile = false;            // time every op: per op type and per node
  std::string profile_out;         // write the profile as JSON here (implies --profile)
  bool verbose = false;            // say on stderr what was decided: fusion, memory, plan, segments
  std::string cluster;    // run across this cluster's devices (planned with `auto` unless --plan)
  std::string strategy;   // with --cluster: plan with this strategy (default auto)
  int microbatches = 1;   // with --cluster: split the batch into this many micro-batches
  std::string plan;       // a plan file from `tandem plan -o`
  std::string trace;      // write the measured timeline here (Chrome trace events)
  std::string report;     // write an HTML report: the predicted timeline above the measured one
  bool failover = false;  // when a device fails, re-plan onto the others and finish
  // With --cluster and auto: a split of the machine's cores is tried against the machine as one
  // device before the timed runs, and the faster runs (false: the predicted plan runs).
  bool trial = true;
  // With --cluster: fold the run's measured op times into the profiles its devices name.
  bool calibrate_from_run = false;
  std::vector<std::string> rank_hosts;  // under mpirun: the cluster host of each rank, in order
};

struct CalibrateOptions {
  std::string output = "tandem-profile.json";
  std::string backend = "cpu";  // a backend of the registry with a calibration, or cpu
  std::string plugin;           // pjrt: the plugin; empty = $TANDEM_PJRT_PLUGIN
  int threads = 0;
  bool quick = false;  // small sizes, short repetitions: a few seconds
  bool json = false;
  std::vector<std::string> models;  // time every op of these models too
  std::vector<std::string> dims;    // NAME=N, for every model
  std::vector<std::string> shapes;  // NAME=AxBxC
  // --mpi: the links between the ranks of an MPI job instead, written as a link profile.
  bool mpi = false;
  std::string cluster;                  // name the ranks by this cluster file's hosts
  std::vector<std::string> rank_hosts;  // the host of each rank, in rank order
};

struct DevicesOptions {
  std::string cluster;  // a cluster file; empty = this machine alone
  bool json = false;
  bool probe = false;  // load the PJRT plugins and show what they report
};

struct PlanCommandOptions : ModelOptions {
  std::string cluster;
  std::string strategy = "auto";
  std::string objective = "latency";
  int microbatches = 1;
  double max_latency = 0;         // seconds; 0 = none
  std::vector<std::string> pins;  // PATTERN=DEVICE
  std::vector<std::string> excluded;
  std::string output;  // plan file to write
  std::string report;  // HTML report of the simulated plan and the strategies side by side
  bool fuse = true;    // plan the graph `tandem run` runs (fused for inference)
};

struct CompareOptions : ModelOptions {
  std::vector<std::string> clusters;  // two or more; the others are measured against the first
  std::string strategy = "auto";
  std::string objective = "latency";
  int microbatches = 1;
  bool fuse = true;  // plan the graph `tandem run` runs (fused for inference)
};

struct SimulateOptions {
  std::string plan;     // plan file (docs/PLAN_FORMAT.md)
  std::string cluster;  // cluster file the plan was made for
  std::string model;    // the plan's model, when the plan file does not name it
  std::vector<std::string> dims, shapes;
  bool json = false;
  bool fuse = true;    // the plan was made for the fused graph (as `tandem plan` does)
  int replicas = 1;    // data-parallel copies of the plan, sharing the network
  std::string trace;   // Chrome trace-event file to write
  std::string report;  // HTML report to write
};

struct TrainOptions {
  std::string model;
  std::string data;     // DIR with train/ (and test/) split folders (train/dataset.h)
  std::string cluster;  // default: this machine's CPU as one device
  std::string strategy = "auto";
  std::string loss = "cross-entropy";  // or mse
  std::string optimizer = "sgd";       // sgd, adam, adamw
  std::string output;                  // the model output the loss reads; default the first
  double learning_rate = 0;            // 0: the optimiser's default (0.01 SGD, 0.001 Adam)
  double momentum = 0, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  std::optional<double> weight_decay;  // default: 0.01 for adamw (as torch.optim.AdamW), else 0
  int64_t batch = 32;
  int microbatches = 1;           // pieces of each batch the gradient graph runs (a pipeline's)
  std::string schedule = "1f1b";  // a pipeline's order of micro-batches: gpipe or 1f1b
  int epochs = 1;
  int64_t steps = 0;  // > 0: stop after this many steps in all
  uint64_t seed = 0;
  bool shuffle = true;
  std::vector<std::string> frozen;  // initializer name globs
  bool recompute = false;           // gradient checkpointing
  std::string save;                 // the trained model, as ONNX
  std::string checkpoint;           // DIR: the model and the optimiser state every N steps
  int64_t checkpoint_every = 0;
  std::string resume;  // DIR of a checkpoint to continue from
  int threads = 0;
  bool json = false;
  std::vector<std::string> rank_hosts;  // under mpirun: the cluster host of each rank, in order
};

int inspect_command(const InspectOptions& options);
int train_command(const TrainOptions& options);
int plan_command(const PlanCommandOptions& options);
int run_command(const RunOptions& options);
int devices_command(const DevicesOptions& options);
int calibrate_command(const CalibrateOptions& options);
// calibrate --mpi (calibrate_links.cpp): every rank of the job runs it.
int calibrate_links_command(const CalibrateOptions& options);
int simulate_command(const SimulateOptions& options);
int compare_command(const CompareOptions& options);

// Reads the --input files (NAME=FILE.npy), by input name.
std::map<std::string, Tensor> read_input_files(const ModelOptions& options);
// --dim, --shape and the input files' shapes as importer options (a file and a --shape that
// disagree on an input are an error naming both). Files missing from `input_files` are read.
ImportOptions import_options(const ModelOptions& options,
                             const std::map<std::string, Tensor>& input_files = {});
// Loads the model bound by import_options, with progress on stderr.
ImportedModel load_model(const ModelOptions& options,
                         const std::map<std::string, Tensor>& input_files = {});
// How the loaded model's batch splits into micro-batches and shares (re-imported as `options`
// and the files bind it, and fused for inference when `fuse`, as the model was).
BatchSplit batch_split_of(const ModelOptions& options,
                          const std::map<std::string, Tensor>& input_files,
                          const ImportedModel& model, bool fuse);
// Splits "NAME=VALUE"; throws InputError naming the option otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option);

}  // namespace tandem::cli
