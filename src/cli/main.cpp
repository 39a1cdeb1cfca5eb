// The `tandem` command: parses arguments and hands each verb to its command.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "ir/error.h"
#include "ir/spelling.h"
#include "report/table.h"

namespace {

using namespace tandem::cli;

void add_model_options(CLI::App& verb, ModelOptions& options, bool model_required = true) {
  verb.add_option("model", options.model,
                  model_required ? "ONNX model file" : "ONNX model file (default: --plan's)")
      ->required(model_required);
  verb.add_option("--dim", options.dims,
                  "bind a symbolic dimension, e.g. --dim batch=8 (unbound ones are 1)");
  verb.add_option("--shape", options.shapes,
                  "set an input's whole shape, e.g. --shape input=8x3x224x224");
  verb.add_option("--input", options.inputs,
                  "an input from a .npy file, NAME=FILE.npy: binds its shape (run: and its data; "
                  "random when absent)");
  verb.add_flag("--json", options.json, "print JSON instead of tables");
}

// The choices `plan` and `compare` share: strategy, objective, micro-batches, fusion.
template <typename Options>
void add_planning_options(CLI::App& verb, Options& options) {
  verb.add_option("--strategy", options.strategy,
                  "auto, heft, pipeline, data-parallel, greedy or single:<device>")
      ->capture_default_str();
  verb.add_option("--objective", options.objective, "what to minimise or maximise")
      ->check(CLI::IsMember({"latency", "throughput", "cost"}))
      ->capture_default_str();
  verb.add_option("--microbatches", options.microbatches,
                  "split the batch into M micro-batches (pipeline plans)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  verb.add_flag("!--no-fusion", options.fuse,
                "plan the graph as imported; by default it is prepared for inference first "
                "(constants folded, BatchNorm folded, activations and embedding bags fused), as "
                "`tandem run` runs it");
}

// A real number from `low` to `high`: CLI11's Range lets NaN through (every comparison with it is
// false) and prints its bounds with six decimals.
CLI::Validator number_in(double low, double high) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(value))
          return "'" + text + "' is not a number";
        if (value < low || value > high)
          return text + " is outside " + tandem::format("%g", low) + " to " +
                 tandem::format("%g", high);
        return "";
      },
      "[" + tandem::format("%g", low) + " - " + tandem::format("%g", high) + "]", "number");
}

// " (did you mean X?)" for the candidate within a third of the word's length (two edits at
// least), or "".
std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  const std::vector<std::string_view> names(candidates.begin(), candidates.end());
  const std::string_view nearest =
      tandem::nearest_spelling(word, names, std::max<size_t>(2, word.size() / 3));
  return nearest.empty() ? "" : " (did you mean " + std::string(nearest) + "?)";
}

// The parser's errors in the tool's own format: one line `tandem: error: <verb>: <what>`, with
// a suggestion for an unknown verb or option; exit status 2. Help and version print as usual.
int parse_failure(const CLI::App& app, const CLI::ParseError& error) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(error) == 0 ? kExitOk : kExitBadInput;
  }
  const CLI::App* verb = &app;
  for (const CLI::App* sub : app.get_subcommands()) verb = sub;
  std::string what = error.what();
  what = what.substr(0, what.find('\n'));
  const std::vector<std::string> extras = verb->remaining();
  if (verb == &app && (extras.empty() || dynamic_cast<const CLI::RequiredError*>(&error))) {
    std::vector<std::string> verbs;
    for (const CLI::App* sub : app.get_subcommands({})) verbs.push_back(sub->get_name());
    what = extras.empty()
               ? "no verb given (tandem --help lists them)"
               : "unknown verb '" + extras.front() + "'" + suggestion(extras.front(), verbs);
  } else if (!extras.empty() && dynamic_cast<const CLI::ExtrasError*>(&error)) {
    const std::string& word = extras.front();
    if (word.starts_with("-")) {
      std::vector<std::string> flags;
      for (const CLI::Option* option : verb->get_options()) {
        for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
      }
      what = "unknown option " + word + suggestion(word.substr(0, word.find('=')), flags);
    } else {
      what = "unexpected argument '" + word + "'";
    }
  }
  std::fprintf(stderr, "tandem: error: %s: %s\n",
               verb == &app ? "tandem" : verb->get_name().c_str(), what.c_str());
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tandem: runs deep-learning models across CPUs, GPUs and TPUs, and says how fast beforehand"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tandem 0.1.0");

  InspectOptions inspect;
  CLI::App* inspect_verb = app.add_subcommand(
      "inspect", "show a model's ops, work (FLOPs, bytes), parameters, inputs and outputs");
  add_model_options(*inspect_verb, inspect);
  inspect_verb->add_option("--cluster", inspect.cluster,
                           "also predict each op type's time on every device of this cluster file");

  RunOptions run;
  CLI::App* run_verb = app.add_subcommand("run",
                                          "run a model on this machine's CPU or across a cluster's "
                                          "devices, check its outputs and time it");
  add_model_options(*run_verb, run, false);
  run_verb->add_option("--expect", run.expects,
                       "compare an output with a .npy file, NAME=FILE.npy (exit 1 on mismatch)");
  run_verb->add_option("--output-dir", run.output_dir, "write every output as DIR/NAME.npy");
  run_verb->add_option("--threads", run.threads, "CPU threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  run_verb->add_option("--seed", run.seed, "seed of the random inputs")
      ->check(CLI::Validator(
          [](std::string& text) {
            return text.starts_with("-") ? "a seed is a non-negative integer" : std::string();
          },
          "", "non-negative"))
      ->capture_default_str();
  run_verb->add_option("--rtol", run.rtol, "--expect: relative tolerance")
      ->capture_default_str()
      ->check(number_in(0, 1));
  run_verb
      ->add_option("--atol", run.atol,
                   "--expect: absolute tolerance (default: 1e-4 of the reference's largest value)")
      ->check(number_in(0, 1e30));
  CLI::Option* warmup = run_verb->add_option("--warmup", run.warmup, "untimed runs first")
                            ->capture_default_str()
                            ->check(CLI::Range(0, 1000000));
  run_verb
      ->add_option("--warmup-duration", run.warmup_seconds,
                   "warm up for this many seconds instead of --warmup runs")
      ->check(number_in(0, 86400))
      ->excludes(warmup);
  CLI::Option* iterations = run_verb->add_option("--iterations", run.iterations, "timed runs")
                                ->capture_default_str()
                                ->check(CLI::Range(1, 1000000));
  run_verb
      ->add_option("--duration", run.duration,
                   "time runs for this many seconds instead of --iterations (at least one run)")
      ->check(number_in(0, 86400))
      ->excludes(iterations);
  run_verb
      ->add_option("--precision", run.precision,
                   "compute MatMul, Gemm and Conv in bf16, or MatMul and Gemm in dynamic int8, "
                   "and report the speed-up and the outputs' error against fp32, run too")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  run_verb->add_flag("!--no-fusion", run.fuse,
                     "run the graph as imported, without folding constants and BatchNorm or "
                     "fusing activations and embedding bags");
  run_verb->add_flag("--profile", run.profile,
                     "time every op and show where the time goes, per op type and per node");
  run_verb->add_option("--profile-out", run.profile_out,
                       "write the profile (op types and every node) as JSON; implies --profile");
  run_verb->add_flag("-v,--verbose", run.verbose,
                     "say on stderr what was decided: bound dims, fusion, memory, the plan");
  run_verb->add_option("--cluster", run.cluster,
                       "run across the devices of this cluster file (planned with auto)");
  run_verb->add_option("--strategy", run.strategy,
                       "with --cluster: plan with this strategy (as tandem plan; default auto)");
  run_verb
      ->add_option("--microbatches", run.microbatches,
                   "with --cluster: split the batch into this many micro-batches")
      ->check(CLI::Range(1, 1 << 20));
  run_verb->add_option("--plan", run.plan,
                       "run this plan file (from tandem plan -o); its model, cluster and dims "
                       "unless given");
  run_verb->add_option("--trace", run.trace,
                       "with --cluster: write every timed run's measured timeline, ops inside "
                       "segments, as Chrome trace events");
  run_verb->add_option("--report", run.report,
                       "with --cluster: write an HTML report, the predicted timeline above the "
                       "measured one");
  run_verb->add_flag("--calibrate-from-run", run.calibrate_from_run,
                     "with --cluster: fold the run's measured op times into the calibration "
                     "profile each device names (profile: in the cluster file), so that the next "
                     "plan prices those ops as they ran");
  run_verb->add_flag("--failover", run.failover,
                     "with --cluster: when a device fails, re-plan onto the others and finish");
  run_verb->add_flag("!--no-trial", run.trial,
                     "with --cluster and auto: run the predicted plan, without first trying a "
                     "split of the machine's cores against the machine as one device");
  run_verb
      ->add_option("--rank-hosts", run.rank_hosts,
                   "under mpirun: the cluster host each rank runs, in rank order (default: by "
                   "host name, else rank i runs the i-th host)")
      ->delimiter(',');

  CalibrateOptions calibrate;
  CLI::App* calibrate_verb = app.add_subcommand(
      "calibrate",
      "measure the local CPU (or a PJRT device) with micro-benchmarks and write a calibration "
      "profile; with --mpi, under mpirun, the network between the ranks' hosts");
  CLI::Option* calibrate_output =
      calibrate_verb
          ->add_option("-o,--output", calibrate.output,
                       "profile to write (with --mpi: default tandem-links.yaml)")
          ->capture_default_str();
  calibrate_verb->add_option("--threads", calibrate.threads, "CPU threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  calibrate_verb
      ->add_option("--backend", calibrate.backend,
                   "cpu, pjrt (a PJRT plugin's first device) or cuda (the first CUDA GPU)")
      ->check(CLI::IsMember({"cpu", "pjrt", "cuda"}))
      ->capture_default_str();
  calibrate_verb->add_option("--plugin", calibrate.plugin,
                             "--backend pjrt: the plugin (default: $TANDEM_PJRT_PLUGIN)");
  calibrate_verb->add_flag("--quick", calibrate.quick, "small sizes, short runs (a few seconds)");
  calibrate_verb->add_flag("--json", calibrate.json, "print JSON instead of a table");
  CLI::Option* calibrate_model = calibrate_verb->add_option(
      "--model", calibrate.models, "also time every op of this ONNX model (repeatable)");
  calibrate_verb->add_option("--dim", calibrate.dims, "bind a symbolic dimension of the models")
      ->needs(calibrate_model);
  calibrate_verb->add_option("--shape", calibrate.shapes, "set a model input's whole shape")
      ->needs(calibrate_model);
  CLI::Option* calibrate_mpi = calibrate_verb->add_flag(
      "--mpi", calibrate.mpi,
      "measure the links between the ranks of an MPI job instead (latency, bandwidth against "
      "message size): mpirun -np N tandem calibrate --mpi, one rank per host; writes a link "
      "profile a cluster file's link names with profile:");
  for (const char* device_only : {"--model", "--backend", "--plugin", "--threads"}) {
    calibrate_mpi->excludes(device_only);
  }
  calibrate_verb
      ->add_option("--cluster", calibrate.cluster,
                   "--mpi: name the ranks by this cluster file's hosts (as tandem run does)")
      ->needs(calibrate_mpi);
  calibrate_verb
      ->add_option("--rank-hosts", calibrate.rank_hosts,
                   "--mpi: the host of each rank, in rank order, comma-separated")
      ->delimiter(',')
      ->needs(calibrate_mpi);

  DevicesOptions devices;
  CLI::App* devices_verb = app.add_subcommand(
      "devices",
      "show a cluster's devices, their figures (with sources) and the links between them");
  devices_verb->add_option(
      "--cluster", devices.cluster,
      "cluster file (YAML, see docs/CLUSTERS.md); default: this machine's CPU");
  devices_verb->add_flag("--json", devices.json, "print JSON, with the source of every figure");
  devices_verb->add_flag("--probe", devices.probe,
                         "also load each PJRT plugin the cluster names and show its API version, "
                         "platform and devices");

  PlanCommandOptions plan;
  CLI::App* plan_verb = app.add_subcommand(
      "plan",
      "decide which device of a cluster runs each op of a model, predict how fast, and compare "
      "every strategy with the lower bound");
  add_model_options(*plan_verb, plan);
  plan_verb->add_option("--report", plan.report,
                        "write a self-contained HTML report: the plan simulated, every strategy "
                        "against the bound");
  plan_verb->add_option("--cluster", plan.cluster, "cluster file (YAML, see docs/CLUSTERS.md)")
      ->required();
  add_planning_options(*plan_verb, plan);
  plan_verb
      ->add_option("--max-latency", plan.max_latency,
                   "for --objective cost: refuse plans slower than this (seconds)")
      ->check(number_in(0, 1e9));
  plan_verb->add_option("--pin", plan.pins,
                        "run matching ops on a device: PATTERN=DEVICE, PATTERN a node name or op "
                        "type with * and ? (e.g. 'Gather*=gpu0'); the last match wins");
  plan_verb->add_option("--exclude", plan.excluded, "a device no op may use (repeatable)");
  plan_verb->add_option("-o,--output", plan.output,
                        "write the plan file (JSON, docs/PLAN_FORMAT.md)");

  CompareOptions compare;
  CLI::App* compare_verb = app.add_subcommand(
      "compare",
      "plan a model on two or more clusters and show them side by side: predicted latency, "
      "throughput, cost, memory headroom, how the work splits, each against the first");
  compare_verb
      ->add_option("--cluster", compare.clusters,
                   "a cluster file (YAML, see docs/CLUSTERS.md); give two or more, the first is "
                   "the baseline")
      ->required();
  add_model_options(*compare_verb, compare);
  add_planning_options(*compare_verb, compare);

  SimulateOptions simulate;
  CLI::App* simulate_verb = app.add_subcommand(
      "simulate",
      "simulate a plan on its cluster, event by event: latency, throughput, every device's and "
      "link's busy time and memory over time");
  simulate_verb->add_option("plan", simulate.plan, "plan file (from `tandem plan -o`)")->required();
  simulate_verb->add_option("--cluster", simulate.cluster,
                            "the cluster file (default: the one the plan was made for)");
  simulate_verb->add_option("--model", simulate.model,
                            "the ONNX model (default: the one the plan was made for)");
  simulate_verb->add_option("--dim", simulate.dims, "bind a symbolic dimension, as for the plan");
  simulate_verb->add_option("--shape", simulate.shapes,
                            "set an input's whole shape, as for the plan");
  simulate_verb->add_flag("--json", simulate.json, "print JSON instead of tables");
  simulate_verb->add_flag("!--no-fusion", simulate.fuse,
                          "the plan was made with `tandem plan --no-fusion`");
  simulate_verb
      ->add_option("--replicas", simulate.replicas,
                   "N data-parallel copies of the plan, each on its own copy of the "
                   "cluster's devices, sharing the network between hosts")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  simulate_verb->add_option("--trace", simulate.trace,
                            "write a Chrome trace-event file (opens in Perfetto)");
  simulate_verb->add_option("--report", simulate.report, "write a self-contained HTML report");

  TrainOptions train;
  CLI::App* train_verb = app.add_subcommand(
      "train",
      "train a model on .npy data: gradients, loss and optimiser as one graph, planned on a "
      "cluster's devices like any graph; saves the trained model as ONNX");
  train_verb->add_option("model", train.model, "ONNX model (exported in eval mode)")->required();
  train_verb
      ->add_option("--data", train.data,
                   "folder with train/ (and optionally test/): x.npy and y.npy each, or shards "
                   "x-0.npy, x-1.npy, ...; <input>.npy per input for models of several inputs")
      ->required();
  train_verb->add_option("--cluster", train.cluster,
                         "cluster file (default: this machine's CPU as one device)");
  train_verb
      ->add_option("--strategy", train.strategy,
                   "single:DEVICE, greedy, heft, pipeline, data-parallel or auto (as tandem plan)")
      ->capture_default_str();
  train_verb->add_option("--loss", train.loss, "cross-entropy (logits [N, C], int64 labels) or mse")
      ->check(CLI::IsMember({"cross-entropy", "mse"}))
      ->capture_default_str();
  train_verb->add_option("--output", train.output,
                         "the model output the loss reads (default: the first)");
  train_verb->add_option("--optimizer", train.optimizer, "sgd, adam or adamw (as torch.optim)")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}))
      ->capture_default_str();
  train_verb
      ->add_option("--lr", train.learning_rate, "learning rate (default 0.01 sgd, 0.001 adam)")
      ->check(number_in(1e-12, 1e6));
  train_verb->add_option("--momentum", train.momentum, "sgd momentum")->check(number_in(0, 1));
  train_verb
      ->add_option(
          "--weight-decay", train.weight_decay,
          "L2 (sgd, adam; default 0) or decoupled (adamw; default 0.01, as torch) weight decay")
      ->check(number_in(0, 1e3));
  train_verb->add_option("--beta1", train.beta1, "adam")
      ->capture_default_str()
      ->check(number_in(0, 1));
  train_verb->add_option("--beta2", train.beta2, "adam")
      ->capture_default_str()
      ->check(number_in(0, 1));
  train_verb->add_option("--eps", train.epsilon, "adam")
      ->capture_default_str()
      ->check(number_in(0, 1));
  train_verb
      ->add_option("--batch", train.batch,
                   "samples per step (the last incomplete batch of an epoch is dropped)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  train_verb
      ->add_option("--microbatches", train.microbatches,
                   "split each batch into this many pieces whose gradients add up (a pipeline's "
                   "micro-batches)")
      ->check(CLI::Range(1, 1 << 20));
  train_verb
      ->add_option("--schedule", train.schedule,
                   "with --strategy pipeline and micro-batches: gpipe (every micro-batch forward, "
                   "then backward) or 1f1b (one backward per forward after a warm-up: fewer "
                   "activations held)")
      ->check(CLI::IsMember({"gpipe", "1f1b"}))
      ->capture_default_str();
  CLI::Option* train_epochs =
      train_verb
          ->add_option("--epochs", train.epochs,
                       "passes over the training split (default 1; with --steps, as many "
                       "as those take)")
          ->capture_default_str()
          ->check(CLI::Range(1, 1000000));
  train_verb->add_option("--steps", train.steps, "stop after this many steps in all")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  train_verb->add_option("--seed", train.seed, "seed of the shuffle order")->capture_default_str();
  train_verb->add_flag("!--no-shuffle", train.shuffle, "take the samples in file order");
  train_verb->add_option("--freeze", train.frozen,
                         "an initializer not to train, by name with * and ? (repeatable)");
  train_verb->add_flag("--recompute", train.recompute,
                       "gradient checkpointing: keep about every sqrt(N)-th activation and "
                       "recompute the others in the backward pass (less memory, more compute)");
  train_verb->add_option("--save", train.save, "write the trained model here (ONNX)");
  CLI::Option* checkpoint =
      train_verb->add_option("--checkpoint", train.checkpoint,
                             "write the model and the optimiser state to this folder at the end "
                             "(and every --checkpoint-every steps)");
  train_verb->add_option("--checkpoint-every", train.checkpoint_every, "steps between checkpoints")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->needs(checkpoint);
  train_verb->add_option(
      "--resume", train.resume,
      "continue from a --checkpoint folder (weights, optimiser state, step count)");
  train_verb->add_option("--threads", train.threads, "CPU threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  train_verb
      ->add_option("--rank-hosts", train.rank_hosts,
                   "under mpirun: the cluster host each rank runs, in rank order (as tandem run)")
      ->delimiter(',');
  train_verb->add_flag("--json", train.json,
                       "print JSON lines: start, every step, every epoch, done");

  app.footer(
      "Exit status: 0 success, 1 outputs differ from --expect, 2 bad input, 3 internal error,\n"
      "4 a device failed during a multi-device run.\n"
      "Run `tandem VERB --help` for a verb's options.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_failure(app, e);
  }
  try {
    if (*inspect_verb) return inspect_command(inspect);
    if (*devices_verb) return devices_command(devices);
    if (*calibrate_verb) {
      // An option the chosen backend does not read is a mistake to name, not to ignore.
      if (!calibrate.plugin.empty() && calibrate.backend != "pjrt")
        throw tandem::InputError(
            "--plugin",
            "only --backend pjrt loads a plugin (this is --backend " + calibrate.backend + ")");
      if (calibrate.mpi && calibrate_output->count() == 0) calibrate.output = "tandem-links.yaml";
      return calibrate_command(calibrate);
    }
    if (*plan_verb) return plan_command(plan);
    if (*simulate_verb) return simulate_command(simulate);
    if (*compare_verb) return compare_command(compare);
    if (*train_verb) {
      if (train.steps > 0 && train_epochs->count() == 0) train.epochs = 1 << 30;
      return train_command(train);
    }
    return run_command(run);
  } catch (const tandem::InputError& e) {
    std::fprintf(stderr, "tandem: error: %s%s%s\n", e.subject().c_str(),
                 e.subject().empty() ? "" : ": ", e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tandem: error: out of memory\n");
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
