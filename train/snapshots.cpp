#include "train/snapshots.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <set>
#include <thread>

#include "core/injected_faults.h"
#include "core/safetensors.h"
#include "core/temp_files.h"
#include "core/text_fields.h"
#include "core/timer.h"
#include "parallel/comm/host_files.h"
#include "store/snapshot_store.h"
#include "train/flags.h"

namespace flextp {
namespace {

namespace fs = std::filesystem;

bool holds(const std::vector<std::string>& files, const std::string& f) {
  return std::find(files.begin(), files.end(), f) != files.end();
}

std::string host_of(const std::vector<std::string>& hosts, int r) {
  return r < static_cast<int>(hosts.size()) ? hosts[r] : std::string("this host");
}

// What each rank's host holds (`held[r]`), and the files it did not take, with why
// (`rejected[r]`), a collective: the first rank of each host makes the directory, holds it for
// this run (a second run there is refused) and lists it; the others list nothing.
struct Held {
  std::vector<std::vector<std::string>> files, rejected;
};
Held list_held(const std::string& dir, ByteMail* mail, bool host_lead) {
  std::string mine;
  if (host_lead) {
    try {
      make_directories(dir);
    } catch (const Error& e) {
      FLEXTP_FAIL("--snapshot-dir ", dir, ": ", e.what());
    }
    with_flag("--snapshot-dir " + dir, [&] { hold_snapshot_directory(dir); });
    std::vector<std::string> rejected;
    for (const std::string& f : snapshot_files(dir, &rejected)) mine += (mine.empty() ? "" : "\n") + f;
    for (const std::string& r : rejected) mine += (mine.empty() ? "!" : "\n!") + r;  // no file's name starts so
  }
  Held held;
  for (const std::string& text : mail ? mail->all_gather(mine) : std::vector<std::string>{mine}) {
    held.files.emplace_back(), held.rejected.emplace_back();
    for (const std::string& line : text.empty() ? std::vector<std::string>{} : split_fields(text, '\n'))
      (line[0] == '!' ? held.rejected.back().push_back(line.substr(1)) : held.files.back().push_back(line));
  }
  return held;
}

// A run that does not resume them must not write among snapshots: another run's, or this one's.
void refuse_held(const CheckpointOptions& o, const Held& held, const std::vector<std::string>& hosts) {
  for (int r = 0; r < static_cast<int>(held.files.size()); ++r) {
    const std::vector<std::string>& any = held.files[r].empty() ? held.rejected[r] : held.files[r];
    FLEXTP_CHECK(any.empty(), "--snapshot-dir ", o.snapshot_dir, " on ", host_of(hosts, r), " already holds snapshots (",
                 any[0], ", ...): continue them with --resume-snapshot, or give an empty directory");
  }
}

// One line for each file a restart did not take: the snapshot it belongs to is not complete.
std::string rejected_lines(const Held& held, const std::vector<std::string>& hosts) {
  std::string lines;
  for (int r = 0; r < static_cast<int>(held.rejected.size()); ++r)
    for (const std::string& why : held.rejected[r])
      lines += "snapshot: not taken, on " + host_of(hosts, r) + ": " + why + "\n";
  return lines;
}

std::string starting_without_snapshot(const CheckpointOptions& o) {
  return "snapshot: none complete in " + o.snapshot_dir + " on the hosts left: starting " +
         (!o.load.empty() ? "from --load " + o.load : !o.init_from_hf.empty() ? "from --init-from-hf " + o.init_from_hf
                                                                           : std::string("at step 0")) + "\n";
}

// The files of `c` that rank 0's host lacks, each from the first rank that holds it (an assembled
// checkpoint is listed with its weights: its state goes first).
std::vector<FileCopy> to_rank0(const SnapshotChoice& c, const std::vector<std::vector<std::string>>& held,
                               const fs::path& dir) {
  std::vector<FileCopy> copies;
  for (const std::string& f : c.files)
    if (!holds(held[0], f))
      for (int r = 1; r < static_cast<int>(held.size()); ++r)
        if (holds(held[r], f)) {
          if (c.whole) copies.push_back({r, 0, (dir / (f + ".state")).string()});
          copies.push_back({r, 0, (dir / f).string()});
          break;
        }
  return copies;
}

// The assembled checkpoint `whole` (state first), from rank 0 to every other host that lacks it.
std::vector<FileCopy> to_hosts(const SnapshotChoice& c, const std::vector<std::vector<std::string>>& held,
                               const std::vector<int>& leads, const fs::path& dir, const std::string& whole) {
  std::vector<FileCopy> copies;
  for (int l : leads)
    if (l != 0 && !(c.whole && holds(held[l], whole)))
      for (const std::string& file : {whole + ".state", whole}) copies.push_back({0, l, (dir / file).string()});
  return copies;
}

std::string resumed_line(const SnapshotChoice& c, const std::vector<FileCopy>& gathered, int copies,
                         const std::vector<std::string>& hosts, double ms) {
  std::set<int> from_hosts{0};
  for (const FileCopy& f : gathered) from_hosts.insert(f.from);
  std::string sources;
  for (int r : from_hosts) sources += (sources.empty() ? "" : ", ") + host_of(hosts, r);
  char line[512];
  std::snprintf(line, sizeof line, "snapshot: resuming step %lld (%s, %s %s), copied to %d other host(s), in %.2f s\n",
                (long long)c.step, c.name.c_str(), c.whole ? "the checkpoint of an earlier recovery on" : "shards of",
                sources.c_str(), copies, ms / 1000);
  return line;
}

}  // namespace

std::string prepare_snapshots(const CheckpointOptions& o, Optimizer& fresh, ByteMail* mail,
                              const std::vector<std::string>& hosts, std::string& said) {
  const double t0 = now_ms();
  const int rank = mail ? mail->rank() : 0, ranks = mail ? mail->size() : 1;
  const std::vector<int> leads = host_leads(hosts, ranks);
  const Held listed = list_held(o.snapshot_dir, mail, std::find(leads.begin(), leads.end(), rank) != leads.end());
  if (!o.resume_snapshot) {
    refuse_held(o, listed, hosts);
    return "";
  }
  const std::vector<std::vector<std::string>>& held = listed.files;
  said = rejected_lines(listed, hosts);
  std::optional<SnapshotChoice> choice = newest_complete_snapshot(held);
  if (!choice) {
    said += starting_without_snapshot(o);
    return "";
  }
  // Rank 0 gathers the snapshot's files, assembles the checkpoint and sends it to every other host.
  const fs::path dir(o.snapshot_dir);
  const std::vector<FileCopy> gathered = to_rank0(*choice, held, dir);
  copy_files(mail, gathered);
  const std::string whole = whole_checkpoint_file(choice->name), whole_path = (dir / whole).string();
  if (rank == 0 && !choice->whole) {
    std::vector<std::string> shards;
    uintmax_t bytes = 0;
    for (const std::string& f : choice->files) shards.push_back((dir / f).string()), bytes += fs::file_size(shards.back());
    try {
      assemble_checkpoint(shards, fresh, whole_path);
    } catch (const std::exception& e) {  // a full disk: say what it takes
      FLEXTP_FAIL("snapshot: cannot assemble step ", choice->step, "'s shards into ", whole_path, ": ", e.what(),
                  "; the whole checkpoint needs about ", (bytes >> 20) + 1, " MB free in ", o.snapshot_dir,
                  " beside its shards");
    }
  }
  const std::vector<FileCopy> sent = to_hosts(*choice, held, leads, dir, whole);
  copy_files(mail, sent);
  if (mail) mail->barrier();  // every host holds the checkpoint before any rank loads it
  said += resumed_line(*choice, gathered, static_cast<int>(sent.size() / 2), hosts, now_ms() - t0);
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
  // The directory's snapshots are this run's from now on: a restart takes no other run's file.
  if (host_lead_) set_snapshot_run(o_.snapshot_dir, state_.run_id);
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

bool Snapshots::wait_writes() {
  std::string failed;
  for (std::future<void>& w : writes_) try {
      w.get();
    } catch (const std::exception& e) {
      if (failed.empty()) failed = e.what();
    }
  writes_.clear();
  if (!failed.empty())
    log_.say("snapshot: step %lld could not be written (%s); the run goes on, but recovery after losing a host "
             "is off until a snapshot is written\n", (long long)writing_, failed.c_str());
  return failed.empty();
}

bool Snapshots::all_written(bool mine) {
  if (!mail_) return mine;
  for (const std::string& ok : mail_->all_gather(mine ? "1" : "0"))  // also the barrier a snapshot needs
    if (ok != "1") return false;
  return true;
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
  // Every copy of the last snapshot is on disk (or failed): it is complete on the hosts, or the
  // one before stays the last complete one.
  const bool written = all_written(wait_writes());
  if (written && writing_ >= 0) {
    if (off_) log_.say("snapshot: step %lld written: recovery after losing a host is on again\n", (long long)writing_);
    kept_from_ = writing_, off_ = false;
  }
  off_ = off_ || !written;
  if (host_lead_)  // keep the last complete snapshot (and newer ones of other attempts) until this one is
    remove_snapshots_before(o_.snapshot_dir, kept_from_);
  writing_ = step;
  current_ = (fs::path(o_.snapshot_dir) / snapshot_name(step, attempt_)).string();
  try {
    make_directories(current_);
  } catch (const std::exception&) {  // its shard's write fails too, and says so
  }
  state_.step = step;
  for (int s : senders_) mail_->expect(s, 0);
  if (place_.replica != 0) return;  // it keeps copies only
  // Written to disk and sent to the next host while the next steps compute: the step waits only
  // for the bytes to be gathered.
  auto bytes = std::make_shared<const std::string>(shard_bytes(model_, opt_, state_, place_));
  write_later((fs::path(current_) / shard_name(place_)).string(), bytes);
  if (int64_t held_ms = injected_fault::slow_snapshot_ms(step)) {  // a host lost during a snapshot
    (void)wait_writes();
    std::this_thread::sleep_for(std::chrono::milliseconds(held_ms));
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

void Snapshots::say_if_none_before(int64_t steps) const {
  if (o_.snapshot_dir.empty() || (steps - 1) / every_ > kept_from_ / every_) return;
  log_.say("no snapshot in this run: every %lld steps reaches none of steps %lld to %lld (the last is saved, not "
           "snapshotted); recovery after losing a host is off: give a smaller --snapshot-every\n",
           (long long)every_, (long long)kept_from_ + 1, (long long)steps - 1);
}

void Snapshots::finish() {
  if (!o_.snapshot_dir.empty() && mail_) keep_letters(mail_->finish());
  (void)wait_writes();
}

}  // namespace flextp
