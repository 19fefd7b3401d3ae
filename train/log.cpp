#include "train/log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/cuda/cuda_runtime_api.h"
#include "core/temp_files.h"
#include "parallel/comm/placement.h"
#include "train/flags.h"

namespace flextp {

namespace {

// JSON has no NaN: a value that is not finite is null.
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// Several replicas: the windows of the step each computed and its smoothed speed, one line each:
//   replica 1:    6 windows     412.5 windows/s
std::string replica_table(const ReplicaView& replicas) {
  std::string out;
  char line[128];
  for (int d = 0; d < replicas.replicas(); ++d) {
    std::snprintf(line, sizeof line, "  replica %d: %4lld windows  %8.1f windows/s\n", d,
                  (long long)replicas.windows[d], 1000 * replicas.speed[d]);
    out += line;
  }
  return out;
}

}  // namespace

std::string rank_table(const std::vector<RankRow>& rows) {
  std::string out;
  char line[256];
  for (size_t r = 0; r < rows.size(); ++r) {
    const RankRow& row = rows[r];
    std::snprintf(line, sizeof line, "  rank %zu: compute %7.1f ms  wait %7.1f ms  speed %8.3g  units", r,
                  row.compute_ms, row.wait_ms, row.speed);
    out += line;
    for (const auto& [kind, n] : row.units.held)
      out += std::string(" ") + unit_kind_name(kind) + " " + std::to_string(n);
    out += " skipped " + std::to_string(row.units.skipped) + "\n";
  }
  return out;
}

std::string trial_line(int64_t step, const BalanceStep& b) {
  char line[512];
  if (b.trial == "try")
    std::snprintf(line, sizeof line, "step %5lld | try: %s, predicted %+.1f%%%s, judged by the next steps\n",
                  (long long)step, b.choice.c_str(), -100 * b.predicted_gain,
                  b.explored ? " (the model's best move: the steps stay far above its ideal)" : "");
  else if (b.trial == "inconclusive")
    std::snprintf(line, sizeof line, "step %5lld | inconclusive: %s; no new try for a while\n", (long long)step,
                  b.trial_why.c_str());
  else
    std::snprintf(line, sizeof line, "step %5lld | %s: the step went %.1f -> %.1f ms (%+.1f%%; predicted %+.1f%%): %s%s\n",
                  (long long)step, b.trial.c_str(), b.trial_before_ms, b.trial_after_ms,
                  100 * (b.trial_after_ms / b.trial_before_ms - 1), -100 * b.predicted_gain, b.trial_why.c_str(),
                  b.trial == "undone" ? "; undone now, no new try for a while" : "");
  return line;
}

std::string link_line(int64_t step, const BalanceStep::Link& link, const std::string& links, const std::string& host) {
  char line[512];
  const bool slowed = link.event == LinkWatch::Event::Slowed;
  // Ranks on one host meet in its memory: no network carries their collectives, and what slows
  // them is the ranks' turns on the cores (91 "link slowed ... (inside vm)" alarms on a loaded VM).
  if (!host.empty())
    std::snprintf(line, sizeof line, slowed ? "step %5lld | collectives slowed: %.1f ms a step against %.1f usual, "
                  "with every rank on %s: no network link, most likely CPU contention; nothing moves for it\n"
                  : "step %5lld | collectives back to %.1f ms a step (usual %.1f), with every rank on %s\n",
                  (long long)step, link.comm_ms, link.usual_ms, host.c_str());
  else
    std::snprintf(line, sizeof line, slowed ? "step %5lld | link slowed: communication %.1f ms a step against %.1f "
                  "usual, on the %s; the ranks' compute is as before, so nothing moves for it\n"
                  : "step %5lld | link recovered: communication %.1f ms a step (usual %.1f), on the %s\n",
                  (long long)step, link.comm_ms, link.usual_ms, links.c_str());
  return line;
}

TrainLog::TrainLog(bool lead, const OutputOptions& o, int64_t steps, int64_t tokens_per_step, bool cuda)
    : lead_(lead), cuda_(cuda), log_every_(o.log_every), progress_(steps, tokens_per_step) {
  if (!o.metrics.empty() && lead) {
    with_flag("--metrics " + o.metrics, [&] { make_directories(std::filesystem::path(o.metrics).parent_path()); });
    metrics_.open(o.metrics, std::ios::app);
    FLEXTP_CHECK(metrics_, "cannot open --metrics file ", o.metrics, ": ", std::strerror(errno));
    metrics_path_ = o.metrics;
  }
}

void TrainLog::start(int64_t done, const MfuBasis& mfu) {
  progress_.start(done, mfu);
  first_ = done + 1;
  const double peak = mfu.peak.flops_per_s;
  if (peak > 0)
    say("MFU of %.3g model FLOPs per token against a peak of %.1f %s (%s)\n", mfu.flops_per_token,
        peak >= 1e12 ? peak / 1e12 : peak / 1e9, peak >= 1e12 ? "TFLOP/s" : "GFLOP/s", mfu.peak.what.c_str());
  else if (!mfu.peak.what.empty())
    say("no MFU: %s\n", mfu.peak.what.c_str());
}

void TrainLog::finish() {
  if (std::string line = progress_.summary(); !line.empty()) say("%s\n", line.c_str());
}

void TrainLog::skipped(const StepReport& r) {
  say("step %5lld | warning: non-finite %s: step skipped (%lld in a row, %lld in all)\n", (long long)r.step,
      std::isfinite(r.loss) ? "gradient" : "loss", (long long)r.bad_in_row, (long long)r.bad_total);
}

void TrainLog::step(const StepReport& r) {
  progress_.step(r.step, r.ms);
  if ((r.step - 1) % log_every_ == 0 || r.step == first_ || r.last) {
    say("step %5lld | loss %.4f | lr %.2e | %7.1f ms | %8.0f tok/s%s\n", (long long)r.step, r.loss, r.lr, r.ms,
        r.tokens_per_s, progress_.suffix().c_str());
    say("%s", rank_table(r.balance.ranks).c_str());
    say("%s", replica_table(r.replicas).c_str());
    if (r.grid.dp > 1 && r.dp_sync.ring_bytes > 0)  // rank 0's part of the gradient sum
      say("  gradient sum: %.2f MB sent, %.2fx a ring all-reduce's; %lld unit(s) exchanged between replicas; "
          "%.1f ms after the backward\n",
          r.dp_sync.bytes_sent / 1e6, double(r.dp_sync.bytes_sent) / double(r.dp_sync.ring_bytes),
          (long long)r.dp_sync.units_exchanged, r.dp_sync.sum_ms);
    // Where cuDNN was asked for but cannot take the attention, the first step says why.
    if (r.step == 1 && cuda_) say("attention on %s\n", cuda::attention_path().c_str());
  }
  if (!r.balance.trial.empty()) say("%s", trial_line(r.step, r.balance).c_str());
  if (r.balance.link.event != LinkWatch::Event::None) say("%s", link_line(r.step, r.balance.link, links_, host_).c_str());
  if (r.balance.plan.migrate)
    say("step %5lld | %s; moved in %.1f ms; units per rank now %s\n", (long long)r.step,
        r.balance.plan.str().c_str(), r.balance.migrate_ms, r.partition_text.c_str());
}

void TrainLog::set_links(const std::vector<std::string>& hosts, int tp) {
  links_ = links_of_rank0(hosts, tp);
  const bool one = std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h == hosts[0]; });
  host_ = one ? hosts[0] : "";
}

void TrainLog::validation(const StepReport& r) {
  say("step %5lld | val loss %.4f\n", (long long)r.step, *r.val_loss);
}

void TrainLog::metrics(const StepReport& r) {
  if (!metrics_.is_open()) return;
  nlohmann::json line = {{"step", r.step}, {"lr", r.lr}, {"ms", r.ms}, {"tokens_per_s", r.tokens_per_s},
                         {"loss", finite_or_null(r.loss)}, {"grad_norm", finite_or_null(r.grad_norm)}};
  if (r.skipped) line["skipped"] = true;
  for (const MetricValues& m : r.metrics) {  // train/group_metrics.h's, each under its name
    nlohmann::json values = nlohmann::json::array();
    for (double v : m.values) values.push_back(finite_or_null(v));
    line[m.name] = m.list ? values : values.at(0);
  }
  if (!r.balance.ranks.empty()) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankRow& row : r.balance.ranks)
      ranks.push_back({{"compute_ms", row.compute_ms}, {"wait_ms", row.wait_ms}, {"units", row.units.named()},
                       {"speed", row.speed}});
    line["ranks"] = ranks;
    line["plan"] = r.balance.choice;
    line["predicted_ms"] = r.balance.plan.now_ms;
    line["ideal_ms"] = r.balance.plan.ideal_ms;
    line["moved_bytes"] = r.balance.moved_bytes;
    line["correction"] = r.balance.correction;
    if (!r.balance.trial.empty()) {
      line["trial"] = {{"event", r.balance.trial}, {"explored", r.balance.explored},
                       {"predicted_gain", r.balance.predicted_gain}};
      if (r.balance.trial != "try") line["trial"]["why"] = r.balance.trial_why;
      if (r.balance.trial == "kept" || r.balance.trial == "undone") {
        line["trial"]["before_ms"] = r.balance.trial_before_ms;
        line["trial"]["after_ms"] = r.balance.trial_after_ms;
      }
    }
  }
  if (r.grid.dp > 1) {  // a data x tensor parallel grid: its shape, this rank's place, the gradient sum
    line["grid"] = {{"tp", r.grid.tp}, {"dp", r.grid.dp}, {"tp_rank", r.grid.tp_rank}, {"replica", r.grid.dp_rank}};
    line["dp_sync_bytes"] = r.dp_sync.bytes;
    line["dp_sync_buckets"] = r.dp_sync.buckets;
    nlohmann::json replicas = nlohmann::json::array();  // the windows each computed, and how fast
    for (int d = 0; d < r.replicas.replicas(); ++d)
      replicas.push_back({{"windows", r.replicas.windows[d]}, {"windows_per_s", 1000 * r.replicas.speed[d]}});
    line["replicas"] = replicas;
    line["dp_sync_sent_bytes"] = r.dp_sync.bytes_sent;  // this rank's, beside what a ring all-reduce sends
    line["dp_sync_ring_bytes"] = r.dp_sync.ring_bytes;
    line["dp_sync_units_exchanged"] = r.dp_sync.units_exchanged;
    line["dp_sync_extra_units"] = r.dp_sync.extra_units;
    line["dp_sync_ms"] = r.dp_sync.sum_ms;  // the sum's time after the backward: what the step waited for
  }
  if (!r.balance.ranks.empty() || r.grid.dp > 1) {
    line["comm_ms"] = r.balance.link.comm_ms;  // the least wait of any rank: the transfers' own time
    line["link_slow"] = r.balance.link.slow;
    if (r.balance.link.event != LinkWatch::Event::None)
      line["link"] = {{"event", r.balance.link.event == LinkWatch::Event::Slowed ? "slowed" : "recovered"},
                      {"usual_ms", r.balance.link.usual_ms}, {"links", host_.empty() ? links_ : "inside " + host_}};
  }
  if (r.val_loss) line["val_loss"] = *r.val_loss;
  metrics_ << line.dump() << "\n" << std::flush;
  // A record cut short without a word is worse than a stopped run (a full disk, /dev/full).
  FLEXTP_CHECK(metrics_, "cannot write --metrics file ", metrics_path_, " at step ", r.step, ": ", std::strerror(errno),
               " (disk full?); its last line may be cut");
}

}  // namespace flextp
