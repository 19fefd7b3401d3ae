#include "train/snapshots.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/safetensors.h"
#include "core/temp_files.h"
#include "core/text_fields.h"
#include "core/timer.h"
#include "store/snapshot_shard.h"

namespace flextp {
namespace {

namespace fs = std::filesystem;
constexpr char kWhole[] = "whole.st";

// "step000020-1a2b3c4d" (six digits or more, eight hex digits) -> 20; none for any other name, so
// that no other file of the directory is taken for (or pruned as) a snapshot.
std::optional<int64_t> snapshot_step(const std::string& name) {
  size_t dash = name.find('-');
  if (name.rfind("step", 0) != 0 || dash == std::string::npos || dash < 10 || name.size() != dash + 9 ||
      name.find_first_not_of("0123456789abcdef", dash + 1) != std::string::npos)
    return std::nullopt;
  return whole_int(name.substr(4, dash - 4));
}

std::string snapshot_name(int64_t step, const std::string& attempt) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "step%06lld-", (long long)step);
  return digits + attempt;
}

std::string shard_name(const ShardPlace& p) {
  return "replica" + std::to_string(p.replica) + "of" + std::to_string(p.replicas) + "-rank" + std::to_string(p.rank) +
         "of" + std::to_string(p.ranks) + ".shard";
}

// "replica1of2-rank0of2.shard" -> its place; none for any other name.
std::optional<ShardPlace> shard_place(const std::string& file) {
  int d = 0, dn = 0, t = 0, tn = 0, used = 0;
  if (std::sscanf(file.c_str(), "replica%dof%d-rank%dof%d.shard%n", &d, &dn, &t, &tn, &used) != 4 ||
      used != static_cast<int>(file.size()))
    return std::nullopt;
  ShardPlace p{t, tn, d, dn};
  if (p.rank < 0 || p.rank >= p.ranks || p.replica < 0 || p.replica >= p.replicas || shard_name(p) != file)
    return std::nullopt;
  return p;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FLEXTP_CHECK(in, "cannot read ", path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  return text.empty() ? std::vector<std::string>{} : split_fields(text, '\n');
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += (s.empty() ? "" : "\n") + l;
  return s;
}

// Placed ranks by host, hosts in the order of their first rank (one host when `hosts` is empty).
std::vector<std::vector<int>> ranks_by_host(const std::vector<std::string>& hosts, int ranks) {
  std::vector<std::string> order;
  std::vector<std::vector<int>> by;
  for (int r = 0; r < ranks; ++r) {
    const std::string h = r < static_cast<int>(hosts.size()) ? hosts[r] : "";
    size_t i = 0;
    while (i < order.size() && order[i] != h) ++i;
    if (i == order.size()) order.push_back(h), by.emplace_back();
    by[i].push_back(r);
  }
  return by;
}

// The first rank of each host: it lists and prunes the host's directory, and receives its files.
std::vector<int> host_leads(const std::vector<std::string>& hosts, int ranks) {
  std::vector<int> leads;
  for (const std::vector<int>& on : ranks_by_host(hosts, ranks)) leads.push_back(on[0]);
  return leads;
}

// A file that came from another host, written where its own host keeps it.
void keep_file(const std::string& path, const std::string& bytes) {
  make_directories(fs::path(path).parent_path().string());
  write_file_atomic(path, bytes);
}

bool holds(const std::vector<std::string>& files, const std::string& f) {
  return std::find(files.begin(), files.end(), f) != files.end();
}

}  // namespace

std::vector<std::string> snapshot_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const fs::directory_entry& d : fs::directory_iterator(dir, ec)) {
    const std::string name = d.path().filename().string();
    std::optional<int64_t> step = snapshot_step(name);
    if (!step || !d.is_directory(ec)) continue;
    for (const fs::directory_entry& f : fs::directory_iterator(d.path(), ec)) {
      const std::string file = f.path().filename().string(), path = f.path().string();
      try {
        if (std::optional<ShardPlace> place = shard_place(file)) {
          ShardInfo info = read_shard_info(path);  // the whole file: one cut short does not parse
          if (info.step == *step && info.place == *place) files.push_back(name + "/" + file);
        } else if (file == kWhole) {
          std::map<std::string, std::string> w = read_safetensors_metadata(path),
                                             s = read_safetensors_metadata(path + ".state");
          if (w["step"] == std::to_string(*step) && s["step"] == w["step"] && s["save_id"] == w["save_id"])
            files.push_back(name + "/" + file);
        }
      } catch (const std::exception&) {  // unreadable: not part of any complete snapshot
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::optional<SnapshotChoice> newest_complete_snapshot(const std::vector<std::vector<std::string>>& held) {
  struct Seen {
    bool whole = false;
    std::map<std::pair<int, int>, std::map<int, std::set<int>>> shards;  // (replicas, ranks) -> replica -> ranks held
  };
  std::map<std::string, Seen> seen;
  for (const std::vector<std::string>& files : held)
    for (const std::string& f : files) {
      size_t slash = f.find('/');
      if (slash == std::string::npos || !snapshot_step(f.substr(0, slash))) continue;
      Seen& s = seen[f.substr(0, slash)];
      std::string file = f.substr(slash + 1);
      if (file == kWhole) s.whole = true;
      if (std::optional<ShardPlace> p = shard_place(file)) s.shards[{p->replicas, p->ranks}][p->replica].insert(p->rank);
    }
  std::optional<SnapshotChoice> best;
  for (const auto& [name, s] : seen) {
    SnapshotChoice c{name, *snapshot_step(name), {}, s.whole};
    if (s.whole) {
      c.files = {name + "/" + kWhole};
    } else {
      // One replica whose every tensor-parallel rank's shard is held (replicas hold the same values).
      for (const auto& [shape, replicas] : s.shards)
        for (const auto& [replica, ranks] : replicas)
          if (c.files.empty() && static_cast<int>(ranks.size()) == shape.second)
            for (int r = 0; r < shape.second; ++r)
              c.files.push_back(name + "/" + shard_name({r, shape.second, replica, shape.first}));
      if (c.files.empty()) continue;  // a shard is missing: cut off, or on a lost host
    }
    if (!best || c.step > best->step || (c.step == best->step && c.whole && !best->whole)) best = c;
  }
  return best;
}

std::string prepare_snapshots(const CheckpointOptions& o, Optimizer& fresh, ByteMail* mail,
                              const std::vector<std::string>& hosts, std::string& said) {
  const double t0 = now_ms();
  const int rank = mail ? mail->rank() : 0, ranks = mail ? mail->size() : 1;
  const std::vector<int> leads = host_leads(hosts, ranks);
  const bool lead = std::find(leads.begin(), leads.end(), rank) != leads.end();
  std::string mine;
  if (lead) {
    try {
      make_directories(o.snapshot_dir);
    } catch (const Error& e) {
      FLEXTP_FAIL("--snapshot-dir ", o.snapshot_dir, ": ", e.what());
    }
    mine = join_lines(snapshot_files(o.snapshot_dir));
  }
  std::vector<std::vector<std::string>> held;
  for (const std::string& text : mail ? mail->all_gather(mine) : std::vector<std::string>{mine}) held.push_back(lines_of(text));
  auto host_of = [&](int r) { return r < static_cast<int>(hosts.size()) ? hosts[r] : std::string("this host"); };
  if (!o.resume_snapshot) {
    for (int r = 0; r < ranks; ++r)
      FLEXTP_CHECK(held[r].empty(), "--snapshot-dir ", o.snapshot_dir, " on ", host_of(r), " already holds snapshots (",
                   held[r][0], ", ...): continue them with --resume-snapshot, or give an empty directory");
    return "";
  }
  std::optional<SnapshotChoice> choice = newest_complete_snapshot(held);
  if (!choice) {
    said = "snapshot: none complete in " + o.snapshot_dir + " on the hosts left: starting " +
           (!o.load.empty() ? "from --load " + o.load : !o.init_from_hf.empty() ? "from --init-from-hf " + o.init_from_hf
                                                                             : std::string("at step 0")) + "\n";
    return "";
  }
  // Rank 0 gathers the snapshot's files (those its host lacks, each from the first rank that
  // holds it), assembles the checkpoint and sends it to every other host.
  const fs::path dir(o.snapshot_dir);
  std::vector<std::pair<int, std::string>> to_rank0;  // (holder, file), in the order sent
  for (const std::string& f : choice->files)
    if (!holds(held[0], f))
      for (int r = 1; r < ranks; ++r)
        if (holds(held[r], f)) {
          if (choice->whole) to_rank0.push_back({r, f + ".state"});  // listed with its weights: the state first
          to_rank0.push_back({r, f});
          break;
        }
  std::set<int> from_hosts{0};
  for (size_t i = 0; i < to_rank0.size(); ++i) {  // labelled by their place in the list
    from_hosts.insert(to_rank0[i].first);
    if (rank == to_rank0[i].first)
      mail->send(0, static_cast<int>(i), std::make_shared<const std::string>(read_bytes((dir / to_rank0[i].second).string())));
    if (rank == 0) mail->expect(to_rank0[i].first, static_cast<int>(i));
  }
  if (mail)
    for (const ByteMail::Letter& l : mail->finish()) keep_file((dir / to_rank0[l.label].second).string(), l.bytes);
  const std::string whole = choice->name + "/" + kWhole, whole_path = (dir / whole).string();
  if (rank == 0 && !choice->whole) {
    std::vector<std::string> shards;
    for (const std::string& f : choice->files) shards.push_back((dir / f).string());
    assemble_checkpoint(shards, fresh, whole_path);
  }
  int copies = 0;
  const std::vector<std::string> pair{whole_path + ".state", whole_path};  // labels 0 and 1
  std::vector<std::shared_ptr<const std::string>> read(2);                 // once, for every host
  for (int l : leads) {
    if (l == 0 || (choice->whole && holds(held[l], whole))) continue;
    ++copies;
    for (int label : {0, 1}) {
      if (rank == 0 && !read[label]) read[label] = std::make_shared<const std::string>(read_bytes(pair[label]));
      if (rank == 0) mail->send(l, label, read[label]);
      if (rank == l) mail->expect(0, label);
    }
  }
  if (mail) {
    std::vector<ByteMail::Letter> letters = mail->finish();
    std::sort(letters.begin(), letters.end(), [](const auto& a, const auto& b) { return a.label < b.label; });
    for (const ByteMail::Letter& l : letters) keep_file(pair[l.label], l.bytes);  // the state first, as a save
    mail->barrier();
  }
  std::string sources;
  for (int r : from_hosts) sources += (sources.empty() ? "" : ", ") + host_of(r);
  char line[512];
  std::snprintf(line, sizeof line, "snapshot: resuming step %lld (%s, %s %s), copied to %d other host(s), in %.2f s\n",
                (long long)choice->step, choice->name.c_str(),
                choice->whole ? "the checkpoint of an earlier recovery on" : "shards of",
                sources.c_str(), copies, (now_ms() - t0) / 1000);
  said = line;
  return whole_path;
}

Snapshots::Snapshots(const CheckpointOptions& o, GPT& model, const Optimizer& opt, TrainState state, ByteMail* mail,
                     const std::vector<std::string>& hosts, const Grid& grid, TrainLog& log, int64_t start)
    : o_(o), model_(model), opt_(opt), state_(std::move(state)), mail_(mail), log_(log),
      place_{grid.tp_rank, grid.tp, grid.dp_rank, grid.dp},
      every_(o.snapshot_every > 0 ? o.snapshot_every : kDefaultSnapshotEvery), kept_from_(start) {
  if (o_.snapshot_dir.empty()) return;
  const int rank = mail ? mail->rank() : 0, ranks = mail ? mail->size() : 1;
  std::vector<std::vector<int>> by = ranks_by_host(hosts, ranks);
  const int m = static_cast<int>(by.size());
  // Replicas hold the same values: replica 0's ranks write shards and send copies, the others
  // only keep the copies they are sent (one shard of each unit, twice, for half the work).
  for (int j = 0; j < m; ++j)
    for (size_t i = 0; i < by[j].size(); ++i) {
      const std::vector<int>& next = by[(j + 1) % m];
      const bool writes = by[j][i] < grid.tp;  // world rank r is in replica r / tp
      int partner = m > 1 && writes ? next[i % next.size()] : -1;  // the same place on the next host
      if (by[j][i] == rank) partner_ = partner, host_lead_ = i == 0;
      if (partner == rank) senders_.push_back(by[j][i]);
    }
  // One attempt id and one run id for all shards: each rank of a new run drew its own run id, of
  // which rank 0's is the one its checkpoints carry.
  attempt_ = random_hex_id().substr(0, 8);
  if (mail) attempt_ = mail->all_gather(attempt_)[0], state_.run_id = mail->all_gather(state_.run_id)[0];
  if (m < 2)
    log_.say("snapshots every %lld steps in %s; one host, so no copy elsewhere: losing it loses them\n",
             (long long)every_, o_.snapshot_dir.c_str());
  else
    log_.say("snapshots every %lld steps in %s on each host, each shard copied to the next host\n",
             (long long)every_, o_.snapshot_dir.c_str());
}

Snapshots::~Snapshots() = default;

void Snapshots::write_later(const std::string& path, std::shared_ptr<const std::string> bytes) {
  writes_.push_back(std::async(std::launch::async, [path, bytes] { write_file_atomic(path, *bytes, false); }));
}

void Snapshots::wait_writes() {
  for (std::future<void>& w : writes_) w.get();  // a write's error (a full disk) ends the run here
  writes_.clear();
}

void Snapshots::keep_letters(std::vector<ByteMail::Letter> letters) {
  for (ByteMail::Letter& l : letters)  // world rank r is rank r % tp of replica r / tp
    write_later((fs::path(current_) / shard_name({l.from % place_.ranks, place_.ranks, l.from / place_.ranks,
                                                  place_.replicas}))
                    .string(),
                std::make_shared<const std::string>(std::move(l.bytes)));
}

void Snapshots::take(int64_t step) {
  const double t0 = now_ms();
  if (mail_) keep_letters(mail_->finish());
  wait_writes();
  if (mail_) mail_->barrier();  // every copy of the last snapshot is on disk: it is complete on the hosts
  std::error_code ec;
  if (host_lead_)  // keep the last complete snapshot (and newer ones of other attempts) until this one is
    for (const fs::directory_entry& d : fs::directory_iterator(o_.snapshot_dir, ec)) {
      std::optional<int64_t> s = snapshot_step(d.path().filename().string());
      if (s && *s < kept_from_) fs::remove_all(d.path(), ec);
    }
  kept_from_ = step;
  current_ = (fs::path(o_.snapshot_dir) / snapshot_name(step, attempt_)).string();
  make_directories(current_);
  state_.step = step;
  for (int s : senders_) mail_->expect(s, 0);
  if (place_.replica != 0) return;  // it keeps copies only
  // Written to disk and sent to the next host while the next steps compute: the step waits only
  // for the bytes to be gathered.
  auto bytes = std::make_shared<const std::string>(shard_bytes(model_, opt_, state_, place_));
  write_later((fs::path(current_) / shard_name(place_)).string(), bytes);
  // For the tests of a host lost during a snapshot: FLEXTP_FAULT_SLOW_SNAPSHOT=STEP:MS holds the
  // snapshot of that step open for MS ms, its own shard written and no copy sent yet.
  if (const char* fault = std::getenv("FLEXTP_FAULT_SLOW_SNAPSHOT"); fault && std::atoll(fault) == step) {
    wait_writes();
    if (const char* ms = std::strchr(fault, ':')) std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms + 1)));
  }
  if (partner_ >= 0) mail_->send(partner_, 0, bytes);
  log_.say("step %5lld | snapshot: %.2f MB a rank, %.1f ms%s\n", (long long)step, bytes->size() / 1e6, now_ms() - t0,
           partner_ >= 0 ? "; written and copied to the next host during the next steps" : "; written during the next steps");
}

void Snapshots::after_step(int64_t step, bool last) {
  if (o_.snapshot_dir.empty()) return;
  if (step % every_ == 0 && !last)
    take(step);
  else if (mail_)
    keep_letters(mail_->progress());
}

void Snapshots::finish() {
  if (!o_.snapshot_dir.empty() && mail_) keep_letters(mail_->finish());
  wait_writes();
}

}  // namespace flextp
