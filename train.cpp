// train: the flextp trainer. Reads a corpus, builds a GPT, trains it with AdamW (or SGD), logs,
// evaluates, saves checkpoints and samples text. Flags are listed by `train --help` and in
// docs/flags.md. Reading order (README, "Reading the code"): this file (run() and its loop) ->
// train/trainer.cpp (one step) -> nn/ -> parallel/balance/ -> parallel/tp/repartition.h. The
// parts run() sets up live in train/, one file each.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/denormals.h"
#include "core/injected_faults.h"
#include "core/device_choice.h"
#include "core/parse_flags.h"
#include "core/temp_files.h"
#include "data/tokenizer.h"
#include "store/checkpoint.h"
#include "store/hf_gpt2.h"
#include "nn/mfu.h"
#include "nn/units.h"
#include "parallel/comm/byte_mail.h"
#include "parallel/comm/heartbeat.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/nccl_communicator.h"
#include "parallel/comm/placement.h"
#include "parallel/comm/rank_agreement.h"
#include "parallel/comm/rank_threads.h"
#include "train/balancer_setup.h"
#include "train/corpus.h"
#include "train/emulated_slowness.h"
#include "train/evaluation.h"
#include "train/fault_hook.h"
#include "train/flags.h"
#include "train/initial_partition.h"
#include "train/input_fingerprints.h"
#include "train/log.h"
#include "train/model_config.h"
#include "train/model_settings.h"
#include "train/output_paths.h"
#include "train/process_groups.h"
#include "train/resume.h"
#include "train/run_header.h"
#include "train/run_outputs.h"
#include "train/snapshots.h"
#include "train/stop_signals.h"
#include "train/trainer.h"
#include "train/watchdog.h"

using namespace flextp;

namespace {

StepSettings step_settings(const TrainOptions& o, const CosineSchedule& schedule) {
  StepSettings s;
  s.schedule = schedule, s.steps = o.optimization.steps;
  s.batch = o.data.batch, s.seq_len = o.data.seq_len, s.micro_batch = o.parallel.micro_batch;
  s.grad_clip = o.optimization.grad_clip, s.max_bad_steps = o.optimization.max_bad_steps;
  s.speed_shares = o.parallel.dp_shares == "speed", s.monitor_window = o.balancing.window;
  s.save = o.checkpoint.save;
  return s;
}

// The loop: a step, its report to the log and the metrics, evaluation, samples and periodic
// checkpoints; at the end the final save, the export and a sample. Returns the exit status.
int train_loop(const TrainOptions& o, Trainer& trainer, Validation& validation, TrainLog& log, RunOutputs& outputs,
               Snapshots& snapshots, Watchdog& watchdog, int rank, int64_t start) {
  const CheckpointOptions& ck = o.checkpoint;
  const int64_t steps = o.optimization.steps;
  int stopped_by = 0;  // a signal: every rank stops after the same step
  int64_t done = start, ran = 0, skipped = 0;  // steps of this run
  for (int64_t step = start; step < steps && !stopped_by; ++step) {
    injected_fault::signal_at(rank, step + 1);  // steps count from 1 there
    StepReport r = trainer.step(step, stop_signal);
    done = r.step;
    stopped_by = r.stop_signal;
    ++ran, skipped += r.skipped;
    log.step(r);
    if (validation.due(r.step, r.last)) {
      r.val_loss = validation.loss([&] { watchdog.beat(r.step); });
      log.validation(r);
    }
    log.metrics(r);
    if (o.output.sample_every && r.step % o.output.sample_every == 0 && !r.last)
      outputs.sample(o.output.sample ? o.output.sample : 64, "sample at step " + std::to_string(r.step));
    if (ck.save_every && r.step % ck.save_every == 0 && !r.last && !r.skipped) outputs.save_periodic(r.step);
    snapshots.after_step(r.step, r.last);
    std::fflush(stdout);
  }
  snapshots.finish();
  log.finish();
  // The weights are those the run started from: saving them as a later step would pass off a
  // run that learnt nothing (NaN inputs, a NaN --lr) as a good one.
  FLEXTP_CHECK(ran == 0 || skipped < ran, "every one of the ", ran, " steps of this run was skipped (a non-finite loss ",
               "or gradient)", ck.save.empty() ? std::string() : "; nothing was saved over " + ck.save);
  watchdog.beat(steps + 1);
  if (stopped_by && done < steps) {  // the steps done, saved; no export or sample of a run cut short
    if (!ck.save.empty()) outputs.save(ck.save, done);
    log.say("stopped by %s after step %lld%s\n", signal_name(stopped_by), (long long)done,
            ck.save.empty() ? " (nothing saved: --no-save)" : ("; resume with --load " + ck.save).c_str());
    std::fflush(stdout);
    return 128 + stopped_by;
  }
  if (!ck.save.empty()) outputs.save(ck.save, std::max(start, steps));
  if (!ck.export_hf.empty()) outputs.export_hf();
  if (o.output.sample > 0) outputs.sample(o.output.sample, "sample");
  return 0;
}

// Where the run starts: a snapshot found replaces --load or --init-from-hf (--resume-snapshot:
// the newest complete one on the hosts, assembled into a checkpoint on each, train/snapshots.h);
// then the options the files there record are taken by the resume rule (train/resume.h). Returns
// the log's lines for the options given anew.
std::string choose_start(TrainOptions& o, const OptionTable& table, ByteMail* mail,
                         const std::vector<std::string>& hosts, bool lead) {
  const CheckpointOptions& ck = o.checkpoint;
  std::string snapshot_said;
  if (!ck.snapshot_dir.empty())
    if (std::string from = prepare_snapshots(ck, *make_optimizer(o.optimization), mail, hosts, snapshot_said); !from.empty())
      o.checkpoint.load = from, o.checkpoint.init_from_hf.clear();
  if (lead) std::printf("%s", snapshot_said.c_str());
  std::string said = take_recorded_options(table, o);  // the checkpoint's seed, model, optimizer...
  o.balancing.resize.seed = o.seed;
  return said;
}

// The weights (and optimizer state) the run starts from: --load's or --init-from-hf's, or none.
TrainState load_start(const TrainOptions& o, GPT& model, Optimizer* opt) {
  const CheckpointOptions& ck = o.checkpoint;
  TrainState loaded;
  if (!ck.load.empty()) loaded = load_checkpoint(ck.load, model, o.output.eval_only ? nullptr : opt);
  if (!ck.init_from_hf.empty()) with_flag("--init-from-hf", [&] { import_hf(ck.init_from_hf, model); });
  return loaded;
}

// The learning-rate schedule of the steps to come; a resumed run says where it resumed, with what
// it changed of its checkpoint's options and schedule.
CosineSchedule start_schedule(const TrainOptions& o, const TrainState& loaded, const std::string& options_said,
                              bool lead) {
  const CheckpointOptions& ck = o.checkpoint;
  std::string said;
  const CosineSchedule schedule = run_schedule(o.optimization, loaded, !ck.load.empty(), said);
  if (!ck.load.empty() && lead)
    std::printf("resumed %s at step %lld with its seed %llu%s\n%s%s", ck.load.c_str(), (long long)loaded.step,
                (unsigned long long)o.seed,
                o.optimization.steps == loaded.step ? ": nothing to train (--steps is its step)" : "",
                options_said.c_str(), said.c_str());
  return schedule;
}

// Setting up (data, model, optimizer, checkpoint, balancer), then the loop.
int run(TrainOptions& o, const OptionTable& table, Communicator& world, Device device, const SplitWorld& split,
        std::vector<std::string> hosts, ByteMail* mail) {
  const RankThreads threads = set_rank_threads();  // before OpenMP's threads start
  flush_denormals();  // on this thread and OpenMP's (core/denormals.h)
  const bool lead = world.rank() == 0;  // rank 0 alone prints and writes files
  const std::string where_saved = prepare_output_paths(o, lead);  // before anything else, not at the end
  const CheckpointOptions& ck = o.checkpoint;
  const std::string options_said = choose_start(o, table, mail, hosts, lead);
  const CLI::App& app = table.app();
  ProcessGroups groups = make_process_groups(o, world, split);
  groups.hosts = std::move(hosts);
  // Every collective of the tensor-parallel group goes through the step clock: it measures
  // compute and waiting, and emulates a slower rank when asked to.
  StepClock step_clock(groups.tensor_parallel(world), slowdown(o.harness, groups.grid));
  step_clock.set_sync_gpu(device.is_cuda());
  std::unique_ptr<Contention> contended = contention(o.harness, world, device);
  std::unique_ptr<Tokenizer> tok = tokenizer_from_flags(o.data.tokenizer, o.data.tokenizer_dir);
  const Corpus corpus = read_corpus(o.data, *tok);
  const GPTConfig c = model_config(o, *tok, app);
  check_corpus_vocab(corpus, c.vocab_size, o.data);
  if (!ck.export_hf.empty()) with_flag("--export-hf", [&] { check_gpt2_exportable(c); });  // before training
  const Partition partition = initial_partition(o.parallel, c, groups.grid);
  GPT model(c, LocalUnits::of_rank(c, partition, step_clock.rank()), &step_clock);
  apply_model_settings(model, o, device);
  std::unique_ptr<Optimizer> opt = make_optimizer(o.optimization);
  const TrainState loaded = load_start(o, model, opt.get());
  // --steps 0 with --load trains nothing from the checkpoint: for its export or a sample.
  if (o.optimization.steps == 0 && !ck.load.empty()) o.optimization.steps = loaded.step;
  const int64_t start = loaded.step, steps = o.optimization.steps;
  // Before the first collective that depends on them.
  check_ranks_agree(world, input_fingerprints(o, app, *tok, c, corpus, loaded));
  if (o.output.eval_only) return evaluate_checkpoint(o, model, corpus, lead);
  FLEXTP_CHECK(steps >= start, "--steps ", steps, " is behind step ", start, " of ", ck.load,
               ": nothing to train (--steps counts the checkpoint's steps too; give more)");
  const CosineSchedule schedule = start_schedule(o, loaded, options_said, lead);
  FaultHook faults(o.harness.fault_nan_steps, o.harness.fault_kill, o.harness.fault_hang, world.rank(), world.size());
  BatchSampler sampler(&corpus.train, o.data.batch, o.data.seq_len, o.seed);
  Validation validation(model, corpus.val, o, groups.micro_windows);
  TrainLog log(lead, o.output, steps, o.data.batch * o.data.seq_len, device.is_cuda());
  if (!groups.hosts.empty()) log.set_links(groups.hosts, groups.grid.tp);
  log.say("%s", where_saved.c_str());
  print_run_header(log, o, model, corpus, device, threads, groups, step_clock, world.rank(), partition);
  std::unique_ptr<Balancer> balancer = make_balancer(step_clock, groups, o, c, partition, device,
                                                     static_cast<int>(opt->slot_names().size()), log);
  Watchdog watchdog(world.size() > 1 ? o.parallel.rank_timeout : 0, world.rank());
  // A resumed run keeps its checkpoint's identity; a new one (or one resumed from files older than
  // run ids) draws its own. The recorded options and the schedule's length go with it (train/resume.h).
  TrainState state{start, o.seed, recorded_options(table), loaded.run_id.empty() ? random_hex_id() : loaded.run_id};
  state.extra[kScheduleSteps] = std::to_string(schedule.total);
  RunOutputs outputs(o, model, *opt, step_clock, world, watchdog, log, *tok, state, groups.grid.dp_rank == 0);
  Snapshots snapshots(ck, model, *opt, state, mail, groups.hosts, groups.grid, log, start);
  snapshots.say_if_none_before(steps);
  Trainer trainer(step_settings(o, schedule), model, *opt, step_clock, *balancer, watchdog, std::move(sampler),
                  std::move(faults), [&](const StepReport& r) { log.skipped(r); },
                  {groups.grid, groups.dp.get(), static_cast<int64_t>(o.parallel.dp_bucket_mb * (1 << 20)), &world});
  log.start(start, lead ? mfu_basis(model, o.data.seq_len, device,
                                     matmul_precision_of(o.parallel.tf32, o.parallel.bf16), world.size())
                        : MfuBasis{});
  return train_loop(o, trainer, validation, log, outputs, snapshots, watchdog, world.rank(), start);
}

// Under the supervisor (scripts/launch --restarts), beats from the first moment, beside every
// step, save and collective: a host whose beats stop is lost within seconds.
std::unique_ptr<Heartbeat> start_heartbeat() {
  try {
    return Heartbeat::from_environment();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train: error: %s\n", e.what());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::unique_ptr<Heartbeat> heartbeat = start_heartbeat();
  // Under mpirun (or srun) each process is one tensor-parallel rank of one replica (--tp); alone,
  // no launcher is needed.
  std::unique_ptr<MpiRuntime> mpi;
  if (launched_by_mpi()) mpi = std::make_unique<MpiRuntime>(&argc, &argv);
  CLI::App app{"flextp train: a GPT trained by flextp's own tensor and autograd engine"};
  TrainOptions o;
  const OptionTable table = add_train_flags(app, o);
  // --help and --version end here too (status 0); a refused flag reads like every other error, status 1.
  if (std::optional<int> status = parse_flags(app, argc, argv, "train")) {
    if (mpi && *status != 0) MpiRuntime::abort_all(*status);
    return *status;
  }
  error_locations = o.debug;
  if (o.print_config) {  // what the run would use, for scripts (scripts/supervise reads --snapshot-dir)
    std::printf("%s", app.config_to_str(false, false).c_str());
    return 0;
  }
  install_stop_signals();
  std::unique_ptr<Communicator> comm;
  try {
    check_flag_combinations(o);
    Device device = with_flag("--device " + o.parallel.device, [&] { return choose_device(o.parallel.device); });
    check_device_flags(o.parallel, device);
    // Ranks on GPUs talk over NCCL (device memory, no host staging); MPI only brings them up.
    const std::string& backend = o.parallel.comm_backend;
    bool nccl = backend == "nccl" || (backend == "auto" && device.is_cuda());
    // Ranks ordered by host (--placement), so that a tensor-parallel group stays on one host.
    std::vector<std::string> hosts;
    if (mpi) hosts = mpi_place_ranks(o.parallel.placement == "host");
    // Snapshots' copies to other hosts travel beside the collectives, on MPI whatever the backend.
    std::unique_ptr<ByteMail> mail;
    if (mpi && !o.checkpoint.snapshot_dir.empty()) mail = std::make_unique<ByteMail>();
    if (mpi && nccl)
      comm = make_nccl_communicator(device.index);
    else
      comm = mpi ? make_mpi_communicator() : make_single_process_communicator();
    // The groups of a data x tensor parallel grid, on the same backend: NCCL inside groups and
    // across them on GPUs.
    SplitWorld split = [&](int color) -> std::unique_ptr<Communicator> {
      return nccl ? make_nccl_communicator(device.index, color) : make_mpi_communicator(color);
    };
    return run(o, table, *comm, device, split, std::move(hosts), mail.get());
  } catch (const std::exception& e) {
    std::fflush(stdout);  // the log lines before the error come first
    if (comm && comm->size() > 1)
      std::fprintf(stderr, "train: error (rank %d): %s\n", comm->rank(), e.what());
    else
      std::fprintf(stderr, "train: error: %s\n", e.what());
    // An error on one rank must not leave the others waiting in a collective.
    if (mpi) MpiRuntime::abort_all(1);
    return 1;
  }
}
