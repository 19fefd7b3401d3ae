#include "train/run_header.h"

#include "core/denormals.h"
#include "parallel/comm/placement.h"
#include "parallel/tp/unit_rows.h"
#include "train/initial_partition.h"
#include "nn/mfu.h"

namespace flextp {
namespace {

// On several hosts: which ranks each holds, and any tensor-parallel group that crosses hosts (its
// all-reduces, several per layer, then travel over the network).
void print_hosts(TrainLog& log, const ProcessGroups& groups) {
  const std::vector<std::string>& hosts = groups.hosts;
  std::string where;
  for (size_t first = 0, r = 0; r < hosts.size(); ++r) {
    if (r + 1 < hosts.size() && hosts[r + 1] == hosts[first]) continue;
    where += (where.empty() ? "" : ", ") + hosts[first] + " (rank" + (r > first ? "s " : " ") +
             std::to_string(first) + (r > first ? "-" + std::to_string(r) : "") + ")";
    first = r + 1;
  }
  if (where.find(',') == std::string::npos) return;  // one process, or one host
  std::vector<std::string> across = groups_across_hosts(hosts, groups.grid.tp);
  log.say("hosts: %s; %s\n", where.c_str(),
          across.empty() ? "each tensor-parallel group on one host" : "tensor parallel across hosts:");
  for (const std::string& line : across)
    log.say("  tensor-parallel group of %s: its all-reduces cross the network\n", line.c_str());
}

}  // namespace

void print_run_header(TrainLog& log, const TrainOptions& o, GPT& model, const Corpus& corpus, Device device,
                      const RankThreads& threads,
                      const ProcessGroups& groups, const Communicator& group, int world_rank, const Partition& partition) {
  const int64_t parameters = model_parameters(model);
  log.say("flextp: %s, %lld parameters, %lld train / %lld val tokens, batch %lld x %lld, on %s%s, %d OpenMP thread%s "
          "per rank (%s)\n",
          model.config().str().c_str(), (long long)parameters, (long long)corpus.train.size(),
          (long long)corpus.val.size(), (long long)o.data.batch, (long long)o.data.seq_len, device.str().c_str(),
          !device.is_cuda()  ? (denormals_flushed() ? " (denormals flushed to zero)" : "")
          : o.parallel.bf16 ? " (bf16 matmuls)"
          : o.parallel.tf32 ? " (TF32 matmuls)"
                            : "",
          threads.threads, threads.threads == 1 ? "" : "s", threads.why.c_str());
  log.say("unigram entropy of the training tokens: %.4f nats (a context-free model's loss)\n",
          unigram_entropy(corpus.train));
  const Grid& grid = groups.grid;
  if (grid.dp > 1)
    log.say("data x tensor parallel: %d replicas of %d rank(s) over %s (rank %d: %s); %lld windows per replica per "
            "step in micro-steps of %lld; units per rank of each replica: %s\n",
            grid.dp, grid.tp, group.backend(), world_rank, grid.str().c_str(), (long long)groups.share,
            (long long)groups.micro_windows, partition.str().c_str());
  else if (group.size() > 1)
    log.say("tensor parallel: %d ranks over %s; units per rank: %s\n", group.size(), group.backend(),
            partition.str().c_str());
  print_hosts(log, groups);
  if (group.size() > 1) log.say("%s", unowned_kinds_note(model.config(), partition).c_str());
  if (grid.dp == 1 && groups.micro_windows < groups.share)
    log.say("micro-batches: %lld windows each, %lld per step\n", (long long)groups.micro_windows,
            (long long)groups.share);
}

}  // namespace flextp
