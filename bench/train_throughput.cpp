// bench/train_throughput: tokens/s of forward + backward + AdamW, and peak memory, for the configs
// of ../shared/BENCHMARKS.md and the default `make train` model. Each config runs in its own
// process so that its peak memory is its own. When a PyTorch is found (Debian's /usr/bin/python3,
// or FLEXTP_TORCH_PYTHON), it trains the same model with the same threads (or on the same GPU) and
// the ratio is printed. Beside tok/s it prints the model FLOPs utilisation (MFU): on the CPU
// against the machine's f32 FMA peak measured first at the same threads (core/fma_peak.h), for
// flextp and PyTorch alike; on a GPU against its datasheet peak for the precision used (core/peak_flops.h).
//
//   bench_train_throughput [--configs tiny,small,...] [--steps 20] [--warmup 3] [--no-torch]
//   bench_train_throughput --device cuda [--tf32 | --bf16] [--attention cudnn] [--configs gpt2-124m] [--batch 16]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>
#include <sys/wait.h>

#include "bench/memory_bandwidth.h"
#include "bench/step_bound.h"
#include "bench/timer.h"
#include "core/allocator.h"
#include "core/cuda/cuda_runtime_api.h"
#include "core/denormals.h"
#include "core/fma_peak.h"
#include "core/parse_flags.h"
#include "core/peak_flops.h"
#include "core/device_choice.h"
#include "core/parallel_for.h"
#include "core/random.h"
#include "nn/gpt.h"
#include "nn/mfu.h"
#include "optim/optimizer.h"

using namespace flextp;

namespace {

struct BenchConfig {
  std::string name;
  int64_t vocab, seq, layers, heads, embd, batch;
};

const std::vector<BenchConfig> kConfigs = {
    {"default", 256, 128, 4, 4, 128, 16},  {"tiny", 256, 64, 2, 4, 64, 8},
    {"small", 256, 128, 4, 4, 128, 8},     {"medium", 50257, 64, 4, 4, 256, 4},
    {"gpt2-small", 50257, 64, 12, 12, 768, 4},
    // GPT-2 small at its full context, as llm.c trains it: the GPU benchmark.
    {"gpt2-124m", 50257, 1024, 12, 12, 768, 16}};

// Training FLOPs per token of a config (nn/mfu.h).
double flops_per_token(const BenchConfig& b, int64_t params) {
  return training_flops_per_token(static_cast<double>(params), b.layers, b.seq, b.embd);
}

double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// The GPU's dense datasheet peak for the matmul precision (core/peak_flops.h); 0 when the table
// does not know the GPU.
double peak_tflops(Device device, MatmulPrecision precision) {
  return gpu_peak_tflops(cuda::device_name(device.index), precision).value_or(0);
}

// Trains one config in this process; prints a JSON line.
int run_one(const BenchConfig& b, int steps, int warmup, Device device, MatmulPrecision precision,
            const std::string& attention) {
  flush_denormals();  // as train does
  GPTConfig c;
  c.vocab_size = b.vocab, c.n_positions = b.seq, c.n_layer = b.layers, c.n_head = b.heads;
  c.n_embd = b.embd;
  GPT model(c);
  model.to(device);
  model.set_numerics(numerics_of(precision, attention));
  AdamW opt({0.9, 0.999, 1e-8, 0.0});
  std::vector<Parameter*> params = model.parameters();
  std::vector<int32_t> ids(b.batch * b.seq), targets(b.batch * b.seq);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int32_t>(rng::uniform(i, 1, 7) * b.vocab);
    targets[i] = static_cast<int32_t>(rng::uniform(i, 2, 7) * b.vocab);
  }
  Tensor x = Tensor::from_vector(ids, {b.batch, b.seq}, device);
  Tensor y = Tensor::from_vector(targets, {b.batch, b.seq}, device);
  double ms = bench::median_ms(
      [&] {
        model.loss(x, y).backward();
        opt.step(params, 1e-4);
        for (Parameter* p : params) p->value.zero_grad();
        if (device.is_cuda()) cuda::synchronize();  // the step ends when its kernels have run
      },
      warmup, steps);
  int64_t n_params = 0;
  for (Parameter* p : params) n_params += p->value.numel();
  double tok_s = b.batch * b.seq / (ms / 1000);
  nlohmann::json out = {{"tokens_per_s", tok_s}, {"ms_per_step", ms}, {"params", n_params}};
  if (device.is_cuda()) {
    double tflops = tok_s * flops_per_token(b, n_params) / 1e12;
    out["tflops"] = tflops;
    if (double peak = peak_tflops(device, precision); peak > 0) out["mfu"] = tflops / peak;
    out["peak_mb"] = allocator_stats(device).peak_in_use / 1048576.0;
    out["attention"] = cuda::attention_path();
  } else {
    out["peak_mb"] = peak_rss_mb();
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

// A command's last JSON line, or why there is none: its status and the end of what it printed
// (a failed run must say why, not show as a row of zeros).
struct Ran {
  nlohmann::json json;
  std::string failure;
};

Ran run_json(const std::string& cmd) {
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return {nullptr, "could not start: " + cmd};
  char buf[4096];
  std::string last;
  std::vector<std::string> lines;
  while (std::fgets(buf, sizeof buf, pipe)) {
    lines.push_back(buf);
    if (buf[0] == '{') last = buf;
  }
  int status = ::pclose(pipe);
  nlohmann::json j = last.empty() ? nlohmann::json() : nlohmann::json::parse(last, nullptr, false);
  if (status == 0 && j.is_object()) return {j, ""};
  std::string tail;
  for (size_t i = lines.size() > 12 ? lines.size() - 12 : 0; i < lines.size(); ++i) tail += "    | " + lines[i];
  std::string why = status != 0 ? "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1)
                                : std::string("no JSON result line");
  return {nullptr, why + " from: " + cmd + "\n" + (tail.empty() ? "    | (no output)\n" : tail)};
}

// The checkout holding bench/torch_gpt.py: this build's, unless the environment names another
// (a build carried to another machine, scripts/gpu_bundle.sh).
std::string source_dir() {
  const char* env = std::getenv("FLEXTP_SOURCE_DIR");
  return env && *env ? env : FLEXTP_SOURCE_DIR;
}

std::string torch_python() {
  if (const char* env = std::getenv("FLEXTP_TORCH_PYTHON")) return env;
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0) return "/usr/bin/python3";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flextp training throughput on the CPU or a GPU, beside PyTorch when present"};
  std::string configs, one, device_spec = "cpu";
  int steps = 20, warmup = 3;
  int64_t batch = 0;
  bool no_torch = false, tf32 = false, bf16 = false;
  std::string attention = "auto";
  app.add_option("--device", device_spec, "cpu or cuda[:N]");
  app.add_flag("--tf32", tf32, "GPU: f32 matmuls on TF32 tensor cores");
  app.add_flag("--bf16", bf16, "GPU: matmuls on bf16 tensor cores (inputs rounded, f32 sums)")->excludes("--tf32");
  app.add_option("--attention", attention,
                 "GPU attention: own (f32 kernels), cudnn (fused, bf16 inputs) or auto (cudnn with --bf16)")
      ->check(CLI::IsMember({"auto", "own", "cudnn"}));
  app.add_option("--batch", batch, "override the configs' batch size")->check(above_zero());
  app.add_option("--configs", configs, "comma-separated config names");
  app.add_option("--steps", steps, "timed steps (median)")->check(above_zero());
  app.add_option("--warmup", warmup, "untimed steps first")->check(at_least_zero());
  app.add_flag("--no-torch", no_torch, "skip the PyTorch comparison");
  app.add_option("--one", one, "internal: run one config in this process");
  CLI11_PARSE(app, argc, argv);
  Device device;
  try {
    device = choose_device(device_spec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train_throughput: %s\n", e.what());
    return 2;
  }
  const bool gpu = device.is_cuda();
  const MatmulPrecision matmuls = gpu ? matmul_precision_of(tf32, bf16) : MatmulPrecision::f32;
  const std::string precision = precision_name(matmuls);
  if (configs.empty()) configs = gpu ? "gpt2-124m" : "default,tiny,small,medium,gpt2-small";

  std::vector<BenchConfig> table = kConfigs;
  if (batch > 0)
    for (BenchConfig& c : table) c.batch = batch;
  auto find = [&](const std::string& name) -> const BenchConfig* {
    for (const BenchConfig& c : table)
      if (c.name == name) return &c;
    return nullptr;
  };
  if (!one.empty()) {
    const BenchConfig* c = find(one);
    if (!c) {
      std::fprintf(stderr, "bench_train_throughput: unknown config '%s'\n", one.c_str());
      return 2;
    }
    try {
      return run_one(*c, steps, warmup, device, matmuls, attention);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_train_throughput: %s failed: %s\n", one.c_str(), e.what());
      return 1;
    }
  }

  std::string python = no_torch ? "" : torch_python();
  int threads = num_threads();
  // The CPU's roofline for MFU: measured before the runs, at the threads they use.
  FmaPeak cpu_peak = gpu ? FmaPeak{} : fma_peak(threads);
  // And the memory's: the bound column is the MFU with every FLOP at the peak and only AdamW's
  // and the gradients' bytes per parameter on top (bench/step_bound.h).
  bench::MemoryBandwidth memory = gpu ? bench::MemoryBandwidth{} : bench::measure_memory_bandwidth(threads);
  if (gpu)
    std::printf("flextp train throughput on %s (%s): %s matmuls, median of %d steps after %d warm-up; MFU "
                "against its %.1f TFLOP/s (%s, dense; 0: a GPU core/peak_flops.cpp does not know)\n",
                device.str().c_str(), cuda::device_name(device.index).c_str(), precision.c_str(), steps, warmup,
                peak_tflops(device, matmuls), precision.c_str());
  else
    std::printf("flextp train throughput: float32, %d threads (denormals flushed to zero), median of %d steps after %d warm-up; MFU "
                "against the measured f32 FMA peak, %.1f GFLOP/s (%s, %d threads)\n",
                threads, steps, warmup, cpu_peak.gflops, cpu_peak.isa.c_str(), cpu_peak.threads);
  if (!gpu)
    std::printf("MFU bound: every FLOP at that peak plus %.0f bytes per parameter (AdamW's and the gradient's) at the "
                "measured triad bandwidth, %.1f GB/s (%d threads)\n",
                bench::kAdamWBytesPerParam + bench::kGradientBytesPerParam, memory.triad_gbs, threads);
  std::printf("%-11s %-30s %11s %9s %11s %9s %7s%s\n", "config", "(V, T, L, H, C, B)", "flextp tok/s",
              "peak MiB", "torch tok/s", "peak MiB", "ratio",
              gpu ? "  TFLOP/s   MFU" : "  flextp MFU  torch MFU  MFU bound");
  std::stringstream names(configs);
  std::string name;
  int failures = 0;
  bool torch_flushed = false;  // whether PyTorch's runs flushed denormals (bench/torch_gpt.py does)
  while (std::getline(names, name, ',')) {
    const BenchConfig* c = find(name);
    if (!c) {
      std::fprintf(stderr, "unknown config '%s'\n", name.c_str());
      return 2;
    }
    char shape[64];
    std::snprintf(shape, sizeof shape, "(%lld, %lld, %lld, %lld, %lld, %lld)", (long long)c->vocab,
                  (long long)c->seq, (long long)c->layers, (long long)c->heads, (long long)c->embd,
                  (long long)c->batch);
    std::string flags = " --device " + device_spec + " --attention " + attention +
                        (matmuls != MatmulPrecision::f32 ? " --" + precision : std::string()) +
                        (batch > 0 ? " --batch " + std::to_string(batch) : "");
    Ran our_run = run_json(std::string(argv[0]) + " --one " + name + " --steps " + std::to_string(steps) +
                           " --warmup " + std::to_string(warmup) + flags);
    nlohmann::json ours = our_run.json, theirs;
    Ran their_run;
    if (!python.empty()) {
      std::ostringstream cmd;
      cmd << python << " " << source_dir() << "/bench/torch_gpt.py " << c->vocab << " " << c->seq
          << " " << c->layers << " " << c->heads << " " << c->embd << " " << c->batch << " "
          << threads << " " << steps << " " << warmup << " " << (gpu ? "cuda" : "cpu") << " " << precision;
      their_run = run_json(cmd.str());
      theirs = their_run.json;
      if (theirs.is_object()) torch_flushed = theirs.value("flush_denormal", false);
    }
    double a = ours.is_object() ? ours["tokens_per_s"].get<double>() : 0;
    double b = theirs.is_object() ? theirs["tokens_per_s"].get<double>() : 0;
    std::printf("%-11s %-30s %11.0f %9.0f", name.c_str(), shape, a,
                ours.is_object() ? ours["peak_mb"].get<double>() : 0.0);
    if (b > 0)
      std::printf(" %11.0f %9.0f %6.2fx", b, theirs["peak_mb"].get<double>(), a / b);
    else
      std::printf(" %11s %9s %7s", "-", "-", "-");
    if (gpu && ours.is_object())
      std::printf("  %7.1f %5.1f%%", ours["tflops"].get<double>(), 100 * ours.value("mfu", 0.0));
    if (!gpu && ours.is_object()) {  // both train the same model: the same FLOPs per token
      double per_token = flops_per_token(*c, ours["params"].get<int64_t>()), peak = cpu_peak.gflops * 1e9;
      std::printf("  %9.1f%%", 100 * a * per_token / peak);
      if (b > 0)
        std::printf("  %8.1f%%", 100 * b * per_token / peak);
      else
        std::printf("  %9s", "-");
      const double params = static_cast<double>(ours["params"].get<int64_t>());
      bench::StepBound bound = bench::step_bound(per_token * c->batch * c->seq, cpu_peak.gflops, 1.0, params,
                                                 memory.triad_gbs);
      std::printf("  %8.1f%%", 100 * bound.mfu);
    }
    std::printf("\n");
    if (gpu && ours.is_object()) std::printf("  attention on %s\n", ours["attention"].get<std::string>().c_str());
    if (!our_run.failure.empty()) std::printf("  flextp FAILED, %s", our_run.failure.c_str());
    if (!their_run.failure.empty()) std::printf("  PyTorch failed, %s", their_run.failure.c_str());
    failures += !our_run.failure.empty();
    std::fflush(stdout);
  }
  if (!python.empty()) {
    nlohmann::json v = run_json(python + " -c 'import torch, json; print(json.dumps({\"v\": torch.__version__}))'").json;
    std::printf("PyTorch: %s (%s), denormals %s\n", v.is_object() ? v["v"].get<std::string>().c_str() : "?",
                python.c_str(), torch_flushed ? "flushed to zero" : "NOT flushed (torch.set_flush_denormal failed)");
  } else {
    std::printf("PyTorch: %s\n", no_torch ? "skipped (--no-torch)" : "not found: install python3-torch and libopenblas0-openmp for the comparison");
  }
  return failures ? 1 : 0;
}
