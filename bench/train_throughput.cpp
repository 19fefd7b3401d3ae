// bench/train_throughput: tokens/s of forward + backward + AdamW, and peak memory, for the configs
// of ../shared/BENCHMARKS.md and the default `make train` model. Each config runs in its own
// process so that its peak RSS is its own. When a PyTorch is found (Debian's /usr/bin/python3, or
// FLEXTP_TORCH_PYTHON), it trains the same model with the same threads and the ratio is printed.
//
//   bench_train_throughput [--configs tiny,small,...] [--steps 20] [--warmup 3] [--no-torch]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/timer.h"
#include "core/parallel_for.h"
#include "core/random.h"
#include "nn/gpt.h"
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
    {"gpt2-small", 50257, 64, 12, 12, 768, 4}};

double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// Trains one config in this process; prints a JSON line.
int run_one(const BenchConfig& b, int steps, int warmup) {
  GPTConfig c;
  c.vocab_size = b.vocab, c.n_positions = b.seq, c.n_layer = b.layers, c.n_head = b.heads;
  c.n_embd = b.embd;
  GPT model(c);
  AdamW opt({0.9, 0.999, 1e-8, 0.0});
  std::vector<Parameter*> params = model.parameters();
  std::vector<int32_t> ids(b.batch * b.seq), targets(b.batch * b.seq);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int32_t>(rng::uniform(i, 1, 7) * b.vocab);
    targets[i] = static_cast<int32_t>(rng::uniform(i, 2, 7) * b.vocab);
  }
  Tensor x = Tensor::from_vector(ids, {b.batch, b.seq}), y = Tensor::from_vector(targets, {b.batch, b.seq});
  double ms = bench::median_ms(
      [&] {
        model.loss(x, y).backward();
        opt.step(params, 1e-4);
        for (Parameter* p : params) p->value.zero_grad();
      },
      warmup, steps);
  std::printf("%s\n", nlohmann::json({{"tokens_per_s", b.batch * b.seq / (ms / 1000)},
                                      {"ms_per_step", ms},
                                      {"peak_rss_mb", peak_rss_mb()}})
                          .dump()
                          .c_str());
  return 0;
}

// Runs a command and parses the last JSON line it printed; null if it failed.
nlohmann::json run_json(const std::string& cmd) {
  FILE* pipe = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!pipe) return nullptr;
  char buf[4096];
  std::string last;
  while (std::fgets(buf, sizeof buf, pipe)) last = buf;
  if (::pclose(pipe) != 0 || last.empty() || last[0] != '{') return nullptr;
  return nlohmann::json::parse(last, nullptr, false);
}

std::string torch_python() {
  if (const char* env = std::getenv("FLEXTP_TORCH_PYTHON")) return env;
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0) return "/usr/bin/python3";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flextp training throughput on the CPU, beside PyTorch when present"};
  std::string configs = "default,tiny,small,medium,gpt2-small", one;
  int steps = 20, warmup = 3;
  bool no_torch = false;
  app.add_option("--configs", configs, "comma-separated config names");
  app.add_option("--steps", steps, "timed steps (median)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_flag("--no-torch", no_torch, "skip the PyTorch comparison");
  app.add_option("--one", one, "internal: run one config in this process");
  CLI11_PARSE(app, argc, argv);

  auto find = [](const std::string& name) -> const BenchConfig* {
    for (const BenchConfig& c : kConfigs)
      if (c.name == name) return &c;
    return nullptr;
  };
  if (!one.empty()) {
    const BenchConfig* c = find(one);
    if (!c) return 2;
    return run_one(*c, steps, warmup);
  }

  std::string python = no_torch ? "" : torch_python();
  int threads = num_threads();
  std::printf("flextp train throughput: float32, %d threads, median of %d steps after %d warm-up\n",
              threads, steps, warmup);
  std::printf("%-11s %-30s %11s %9s %11s %9s %7s\n", "config", "(V, T, L, H, C, B)", "flextp tok/s",
              "peak MiB", "torch tok/s", "peak MiB", "ratio");
  std::stringstream names(configs);
  std::string name;
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
    nlohmann::json ours = run_json(std::string(argv[0]) + " --one " + name + " --steps " +
                                   std::to_string(steps) + " --warmup " + std::to_string(warmup));
    nlohmann::json theirs;
    if (!python.empty()) {
      std::ostringstream cmd;
      cmd << python << " " << FLEXTP_SOURCE_DIR << "/bench/torch_gpt.py " << c->vocab << " " << c->seq
          << " " << c->layers << " " << c->heads << " " << c->embd << " " << c->batch << " "
          << threads << " " << steps << " " << warmup;
      theirs = run_json(cmd.str());
    }
    double a = ours.is_object() ? ours["tokens_per_s"].get<double>() : 0;
    double b = theirs.is_object() ? theirs["tokens_per_s"].get<double>() : 0;
    std::printf("%-11s %-30s %11.0f %9.0f", name.c_str(), shape, a,
                ours.is_object() ? ours["peak_rss_mb"].get<double>() : 0.0);
    if (b > 0)
      std::printf(" %11.0f %9.0f %6.2fx\n", b, theirs["peak_rss_mb"].get<double>(), a / b);
    else
      std::printf(" %11s %9s %7s\n", "-", "-", "-");
    std::fflush(stdout);
  }
  if (!python.empty()) {
    nlohmann::json v = run_json(python + " -c 'import torch, json; print(json.dumps({\"v\": torch.__version__}))'");
    std::printf("PyTorch: %s (%s)\n", v.is_object() ? v["v"].get<std::string>().c_str() : "?", python.c_str());
  } else {
    std::printf("PyTorch: %s\n", no_torch ? "skipped (--no-torch)" : "not found: install python3-torch and libopenblas0-openmp for the comparison");
  }
  return 0;
}
