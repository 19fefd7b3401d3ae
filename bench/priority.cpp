// bench/priority: does the priority of priority resizing matter? Trains the default model (or
// loads a checkpoint), scores every attention head and MLP block with each priority (taylor,
// norm, random), then skips the same number of units in every layer under each priority and
// measures the validation loss. Equal skipped units, so the only difference between rows is which
// units go.
//
//   bench_priority [--steps 300] [--load CHECKPOINT] [--fractions 0.125,0.25,0.5] [--windows 64]
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/autograd.h"
#include "data/batches.h"
#include "data/token_files.h"
#include "data/tokenizer.h"
#include "nn/gpt.h"
#include "nn/units.h"
#include "optim/clip.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "parallel/balance/active_units.h"
#include "parallel/balance/resizer.h"
#include "store/checkpoint.h"

using namespace flextp;

namespace {

const int64_t kBatch = 16;  // training windows a step

double val_loss(GPT& model, const std::vector<int32_t>& val, int64_t seq, int64_t windows) {
  NoGradGuard ng;
  model.set_training(false);
  double total = 0;
  for (int64_t first = 0; first < windows; first += 16) {
    int64_t count = std::min<int64_t>(16, windows - first);
    Batch b = eval_batch(val, seq, first, count);
    total += model.loss(b.ids, b.targets).item() * static_cast<double>(count);
  }
  model.set_training(true);
  return total / static_cast<double>(windows);
}

void train(GPT& model, const BatchSampler& sampler, int64_t steps) {
  std::vector<Parameter*> params = model.parameters();
  for (Parameter* p : params)
    p->weight_decay = p->name.find("bias") == std::string::npos && p->name.find("ln_") == std::string::npos &&
                      p->name.find("wpe") == std::string::npos;
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  CosineSchedule sched{1e-3, 1e-4, std::min<int64_t>(50, steps / 5), steps};
  for (int64_t step = 0; step < steps; ++step) {
    Batch b = sampler.at_step(step, 0, kBatch);
    Tensor loss = model.loss(b.ids, b.targets);
    loss.backward();
    clip_to_norm(params, 1.0, norm_of({grad_squares(params)}));
    opt.step(params, sched.at(step));
    for (Parameter* p : params) p->value.zero_grad();
    if ((step + 1) % 100 == 0) std::printf("  trained %lld steps, loss %.4f\n", (long long)step + 1, loss.item());
  }
}

// Running importance over `batches` training batches, as training would accumulate it.
Resizer score(GPT& model, const BatchSampler& sampler, const std::string& priority, int64_t first, int64_t batches) {
  ResizeOptions o;
  o.priority = priority;
  Resizer r(o);
  std::vector<Parameter*> params = model.parameters();
  for (int64_t k = 0; k < batches; ++k) {
    Batch b = sampler.at_step(first + k, 0, kBatch);
    model.loss(b.ids, b.targets).backward();
    r.observe(params, k);
    for (Parameter* p : params) p->value.zero_grad();
  }
  return r;
}

// Skips round(fraction x n) units of every resizable group (heads, MLP blocks), the least important first.
int64_t skip(GPT& model, const GPTConfig& c, const Resizer& r, double fraction) {
  std::vector<Parameter*> params = model.parameters();
  int64_t skipped = 0;
  for (const UnitGroup& g : unit_groups(c)) {
    if (!g.resizable) continue;
    std::vector<Parameter*> ps = group_parameters(params, g.name);
    int64_t n = static_cast<int64_t>(ps.front()->units.size()), drop = std::llround(fraction * n);
    r.keep_most_important(ps, g.name, n - drop);
    skipped += drop;
  }
  return skipped;
}

void restore(GPT& model, const GPTConfig& c) {
  std::vector<Parameter*> params = model.parameters();
  for (const UnitGroup& g : unit_groups(c))
    if (g.resizable) set_active_units(group_parameters(params, g.name), -1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/priority: validation loss with the same number of units skipped under each priority"};
  int64_t steps = 300, windows = 64, score_batches = 8;
  std::string load, fractions_text = "0.125,0.25,0.5";
  app.add_option("--steps", steps, "training steps before scoring (without --load)");
  app.add_option("--load", load, "a checkpoint of the default model to score instead of training");
  app.add_option("--fractions", fractions_text, "shares of every layer's heads and MLP blocks to skip");
  app.add_option("--windows", windows, "validation windows of 128 tokens");
  app.add_option("--score-batches", score_batches, "training batches the scores run over");
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<double> fractions;
    std::stringstream list(fractions_text);
    for (std::string f; std::getline(list, f, ',');) fractions.push_back(std::stod(f));
    ByteTokenizer tok;
    std::vector<int32_t> all = tok.encode(default_corpus_text()), train_tokens, val;
    split_tokens(all, 0.1, train_tokens, val);
    GPTConfig c;
    if (!load.empty()) c = read_checkpoint_config(load);
    else c.n_layer = 4, c.n_head = 4, c.n_embd = 128, c.vocab_size = tok.vocab_size(), c.n_positions = 128;
    const int64_t seq = std::min<int64_t>(128, c.n_positions);
    GPT model(c);
    BatchSampler sampler(&train_tokens, kBatch, seq, 1337);
    if (!load.empty())
      load_checkpoint(load, model, nullptr);
    else
      train(model, sampler, steps);
    windows = std::min(windows, eval_windows(val, seq));
    double full = val_loss(model, val, seq, windows);
    std::printf("flextp bench/priority: %s, %s; validation loss with every unit: %.4f (%lld windows)\n",
                c.str().c_str(), load.empty() ? ("trained " + std::to_string(steps) + " steps").c_str() : load.c_str(),
                full, (long long)windows);
    std::printf("%-10s %9s %9s %9s %8s\n", "skipped", "taylor", "norm", "random", "taylor-random");
    std::vector<std::string> priorities{"taylor", "norm", "random"};
    std::vector<Resizer> scores;
    for (const std::string& p : priorities) scores.push_back(score(model, sampler, p, 1000000, score_batches));
    for (double f : fractions) {
      double loss[3];
      int64_t skipped = 0;
      for (int i = 0; i < 3; ++i) {
        skipped = skip(model, c, scores[i], f);
        loss[i] = val_loss(model, val, seq, windows);
        restore(model, c);
      }
      char what[32];
      std::snprintf(what, sizeof what, "%lld (%.0f%%)", (long long)skipped, 100 * f);
      std::printf("%-10s %9.4f %9.4f %9.4f %+8.4f\n", what, loss[0], loss[1], loss[2], loss[0] - loss[2]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_priority: %s\n", e.what());
    return 1;
  }
}
