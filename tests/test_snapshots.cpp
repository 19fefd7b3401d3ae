// Snapshots for recovery after losing a host: shards assemble into the checkpoint a save would
// write, bit for bit; the newest complete snapshot is chosen from what the hosts hold, and a shard
// cut short, a missing shard or another snapshot's shard never makes one, nor a changed shard (its
// checksum) or another run's; a directory serves one run at a time.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/safetensors.h"
#include "core/temp_files.h"
#include "optim/optimizer.h"
#include "parallel/tp/partition.h"
#include "parallel/tp/unit_gather.h"
#include "store/snapshot_shard.h"
#include "store/snapshot_store.h"
#include "tests/run_command.h"
#include "tests/small_gpt.h"
#include "tests/temp_dir.h"
#include "train/snapshots.h"

using namespace flextp;

namespace {
GPTConfig small() { return test::small_gpt(); }
void train_a_little(GPT& m, Optimizer& opt) { test::train_a_little(m, opt, 3); }

// Rank `rank` of `ranks` (an uneven split), holding `whole`'s values and state; its vocabulary
// units in reverse order, as a migration can leave them.
std::unique_ptr<GPT> rank_of(GPT& whole, const Partition& split, int rank) {
  auto m = std::make_unique<GPT>(small(), LocalUnits::of_rank(small(), split, rank));
  std::vector<Parameter*> from = whole.parameters(), to = m->parameters();
  for (size_t i = 0; i < to.size(); ++i) {
    Parameter& p = *to[i];
    if (&p == &m->wte) std::reverse(p.units.begin(), p.units.end());
    p.value = local_rows(p, from[i]->value).clone();
    for (const auto& [slot, t] : from[i]->state) p.state[slot] = local_rows(p, t).clone();
  }
  return m;
}

std::string write_shard(const std::string& path, GPT& m, const Optimizer& opt, const TrainState& s, int rank, int ranks,
                        int replica = 0, int replicas = 1) {
  write_file_atomic(path, shard_bytes(m, opt, s, {rank, ranks, replica, replicas}));
  return path;
}
}  // namespace

TEST_CASE("the shards of a snapshot assemble into the checkpoint a save writes, bit for bit") {
  test::TempDir dir("snap");
  GPT whole(small());
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  train_a_little(whole, opt);
  TrainState state{3, 42, {{"tokenizer", "byte"}}, "0123456789abcdef"};
  save_checkpoint(dir.file("saved.st"), whole, &opt, state);

  Partition split = Partition::proportional(unit_groups(small()), {1, 2});
  std::vector<std::string> shards;
  for (int r = 0; r < 2; ++r) {
    std::unique_ptr<GPT> part = rank_of(whole, split, r);
    shards.push_back(write_shard(dir.file("rank" + std::to_string(r)), *part, opt, state, r, 2));
    ShardInfo info = read_shard_info(shards.back());
    CHECK(info.step == 3);
    CHECK(info.place == ShardPlace{r, 2, 0, 1});
  }
  AdamW fresh({0.9, 0.999, 1e-8, 0.1});
  TrainState back = assemble_checkpoint(shards, fresh, dir.file("assembled.st"));
  CHECK(back.step == 3);
  CHECK(back.seed == 42);
  CHECK(back.run_id == "0123456789abcdef");
  CHECK(back.extra.at("tokenizer") == "byte");
  for (const std::string tail : {"", ".state"}) {
    SafetensorsFile a = read_safetensors(dir.file("saved.st" + tail)), b = read_safetensors(dir.file("assembled.st" + tail));
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& entry : a.tensors) {
      const std::string& name = entry.first;  // (clang: a structured binding cannot go into INFO's lambda)
      INFO(name << tail);
      REQUIRE(b.tensors.count(name));
      CHECK(entry.second.to_vector<float>() == b.tensors.at(name).to_vector<float>());
    }
    CHECK(a.metadata.at("step") == b.metadata.at("step"));
  }
  CHECK(read_safetensors(dir.file("assembled.st.state")).metadata.at("optimizer_steps") == "3");

  // The second replica's shards (data parallel) make the same checkpoint; one of each replica, none.
  std::vector<std::string> second;
  for (int r = 0; r < 2; ++r) {
    std::unique_ptr<GPT> part = rank_of(whole, split, r);
    second.push_back(write_shard(dir.file("second" + std::to_string(r)), *part, opt, state, r, 2, 1, 2));
  }
  AdamW again({0.9, 0.999, 1e-8, 0.1});
  assemble_checkpoint(second, again, dir.file("second.st"));
  SafetensorsFile a = read_safetensors(dir.file("saved.st.state")), b = read_safetensors(dir.file("second.st.state"));
  for (const auto& [name, t] : a.tensors) CHECK(t.to_vector<float>() == b.tensors.at(name).to_vector<float>());
  std::string first_of_two = write_shard(dir.file("first0"), *rank_of(whole, split, 0), opt, state, 0, 2, 0, 2);
  CHECK_THROWS_WITH(assemble_checkpoint({first_of_two, second[1]}, again, dir.file("mixed.st")),
                    doctest::Contains("not one replica's"));
}

TEST_CASE("a snapshot after skipped steps assembles the optimizer's step count, not the training step") {
  // Non-finite steps are skipped: step 5 with 3 optimizer steps taken (AdamW's bias correction
  // counts those).
  test::TempDir dir("snapskip");
  GPT whole(small());
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  train_a_little(whole, opt);
  REQUIRE(opt.steps_taken() == 3);
  TrainState state{5, 42, {}, "0123456789abcdef"};
  Partition split = Partition::proportional(unit_groups(small()), {1, 1});
  std::vector<std::string> shards;
  for (int r = 0; r < 2; ++r)
    shards.push_back(write_shard(dir.file("rank" + std::to_string(r)), *rank_of(whole, split, r), opt, state, r, 2));
  AdamW fresh({0.9, 0.999, 1e-8, 0.1});
  CHECK(assemble_checkpoint(shards, fresh, dir.file("assembled.st")).step == 5);
  CHECK(fresh.steps_taken() == 3);
  SafetensorsFile assembled = read_safetensors(dir.file("assembled.st.state"));
  CHECK(assembled.metadata.at("step") == "5");
  CHECK(assembled.metadata.at("optimizer_steps") == "3");
  AdamW loaded({0.9, 0.999, 1e-8, 0.1});
  GPT back(small());
  CHECK(load_checkpoint(dir.file("assembled.st"), back, &loaded).step == 5);
  CHECK(loaded.steps_taken() == 3);
}

TEST_CASE("shards that do not make one snapshot are refused, naming the problem") {
  test::TempDir dir("snapbad");
  GPT whole(small());
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  train_a_little(whole, opt);
  Partition split = Partition::even(unit_groups(small()), 2);
  std::unique_ptr<GPT> r0 = rank_of(whole, split, 0), r1 = rank_of(whole, split, 1);
  TrainState at3{3, 42, {}, "0123456789abcdef"}, at4{4, 42, {}, "0123456789abcdef"};
  std::string a = write_shard(dir.file("a"), *r0, opt, at3, 0, 2), b = write_shard(dir.file("b"), *r1, opt, at3, 1, 2);
  std::string b4 = write_shard(dir.file("b4"), *r1, opt, at4, 1, 2), a_again = write_shard(dir.file("a1"), *r0, opt, at3, 1, 2);
  AdamW fresh({0.9, 0.999, 1e-8, 0.1});
  CHECK_THROWS_WITH(assemble_checkpoint({a, b4}, fresh, dir.file("x.st")), doctest::Contains("not one replica's of one snapshot"));
  CHECK_THROWS_WITH(assemble_checkpoint({a}, fresh, dir.file("x.st")), doctest::Contains("not rank 0 of 1"));
  CHECK_THROWS_WITH(assemble_checkpoint({b, b}, fresh, dir.file("x.st")), doctest::Contains("holds rank 1 of 2, not rank 0"));
  CHECK_THROWS_WITH(assemble_checkpoint({a_again, b}, fresh, dir.file("x.st")), doctest::Contains("holds rank 1 of 2, not rank 0"));
  std::string half = write_shard(dir.file("half"), *r0, opt, at3, 0, 1);  // says it is a whole replica
  CHECK_THROWS_WITH(assemble_checkpoint({half}, fresh, dir.file("x.st")), doctest::Contains("a shard is missing"));
  SGD sgd({});
  CHECK_THROWS_WITH(assemble_checkpoint({a, b}, sgd, dir.file("x.st")), doctest::Contains("the run uses sgd"));
  CHECK_FALSE(std::filesystem::exists(dir.file("x.st")));
  // Cut short, as a write killed midway would leave it under a final name.
  std::string bytes = shard_bytes(*r1, opt, at3, {1, 2, 0, 1});
  std::string cut = dir.write("cut", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS(read_shard_info(cut));
  CHECK_THROWS(assemble_checkpoint({a, cut}, fresh, dir.file("x.st")));
}

TEST_CASE("a host lists only the snapshot files that read whole") {
  test::TempDir dir("snaplist");
  GPT whole(small());
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  train_a_little(whole, opt);
  TrainState at20{20, 42, {}, "0123456789abcdef"};
  std::filesystem::create_directories(dir.path / "step000020-aaaaaaaa");
  std::filesystem::create_directories(dir.path / "step000010-aaaaaaaa");
  std::filesystem::create_directories(dir.path / "other");
  write_shard(dir.file("step000020-aaaaaaaa/replica0of1-rank0of1.shard"), whole, opt, at20, 0, 1);
  write_shard(dir.file("step000010-aaaaaaaa/replica0of1-rank0of1.shard"), whole, opt, at20, 0, 1);  // its step is not 10
  write_shard(dir.file("step000020-aaaaaaaa/replica1of2-rank0of1.shard"), whole, opt, at20, 0, 1);  // its place is not
  std::string bytes = shard_bytes(whole, opt, at20, {0, 2, 0, 1});
  dir.write("step000020-aaaaaaaa/replica0of1-rank1of2.shard", bytes.substr(0, bytes.size() - 100));  // cut short
  dir.write("step000020-aaaaaaaa/replica0of1-rank0of2.shard.tmp.123", bytes);                          // a temporary
  write_shard(dir.file("other/replica0of1-rank0of1.shard"), whole, opt, at20, 0, 1);              // not a snapshot's
  save_checkpoint(dir.file("step000010-aaaaaaaa/whole.st"), whole, &opt, {10, 42, {}, "0123456789abcdef"});
  std::filesystem::create_directories(dir.path / "step000030-aaaaaaaa");
  save_checkpoint(dir.file("step000030-aaaaaaaa/whole.st"), whole, &opt, {30, 42, {}, "0123456789abcdef"});
  std::filesystem::remove(dir.file("step000030-aaaaaaaa/whole.st.state"));  // weights without their state
  CHECK(snapshot_files(dir.path.string()) ==
        std::vector<std::string>{"step000010-aaaaaaaa/whole.st", "step000020-aaaaaaaa/replica0of1-rank0of1.shard"});
  CHECK(snapshot_files(dir.file("missing")).empty());
  // One float changed (to 1000.0) where the bytes were: its checksum no longer matches.
  std::filesystem::create_directories(dir.path / "step000040-aaaaaaaa");
  std::string changed = shard_bytes(whole, opt, at20, {0, 1, 0, 1});
  const float big = 1000.0f;
  std::memcpy(&changed[changed.size() - 64], &big, sizeof big);
  dir.write("step000040-aaaaaaaa/replica0of1-rank0of1.shard", changed);
  std::vector<std::string> rejected;
  CHECK(snapshot_files(dir.path.string(), &rejected).size() == 2);
  // Each file not taken, with why: the one cut short, the checkpoint without its state, the changed one.
  REQUIRE(rejected.size() == 3);
  CHECK(rejected[0].rfind("step000020-aaaaaaaa/replica0of1-rank1of2.shard: ", 0) == 0);
  CHECK(rejected[1].rfind("step000030-aaaaaaaa/whole.st: cannot open checkpoint file ", 0) == 0);
  CHECK(rejected[2].rfind("step000040-aaaaaaaa/replica0of1-rank0of1.shard: its bytes do not match its checksum (a "
                          "changed or damaged file)", 0) == 0);
  // The directory is another run's: this run's files are not taken.
  set_snapshot_run(dir.path.string(), "fedcba9876543210");
  CHECK(snapshot_run(dir.path.string()) == "fedcba9876543210");
  rejected.clear();
  CHECK(snapshot_files(dir.path.string(), &rejected).empty());
  CHECK(rejected.size() == 5);
  CHECK(rejected[0] == "step000010-aaaaaaaa/whole.st: of run 0123456789abcdef, not of run fedcba9876543210 whose "
                       "snapshots the directory holds");
  CHECK(rejected[1].rfind("step000020-aaaaaaaa/replica0of1-rank0of1.shard: of run 0123456789abcdef, not of run ", 0) == 0);
}

TEST_CASE("a snapshot directory serves one run at a time; a run that died holds nothing") {
  test::TempDir dir("snaplock");
  const std::string d = dir.path.string();
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t holder = fork();
  if (holder == 0) {  // another run, which holds the directory until it is killed
    hold_snapshot_directory(d);
    (void)!write(ready[1], "x", 1);
    for (;;) pause();
  }
  char x;
  REQUIRE(read(ready[0], &x, 1) == 1);
  close(ready[0]), close(ready[1]);
  const std::string says = "the directory is in use by another run (pid " + std::to_string(holder) + " on ";
  CHECK_THROWS_WITH(hold_snapshot_directory(d), doctest::Contains(says.c_str()));
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  CHECK_NOTHROW(hold_snapshot_directory(d));  // its process is gone, and its lock with it
  CHECK_NOTHROW(hold_snapshot_directory(d));  // held already by this process
  // train into the directory this process holds: refused before its first step.
  test::Run other = test::run_command(test::train_binary() + " " + test::kTiny + " --data " + test::corpus(dir) +
                                      " --steps 2 --no-save --snapshot-dir " + d);
  CHECK(other.status == 1);
  CHECK_MESSAGE(other.output.find("is in use by another run (pid " + std::to_string(getpid())) != std::string::npos,
                other.output);
}

TEST_CASE("the newest snapshot with one replica's every shard held somewhere is chosen") {
  using Held = std::vector<std::vector<std::string>>;
  auto shard = [](int step, const char* attempt, int replica, int replicas, int rank, int ranks) {
    char name[96];
    std::snprintf(name, sizeof name, "step%06d-%s/replica%dof%d-rank%dof%d.shard", step, attempt, replica, replicas, rank,
                  ranks);
    return std::string(name);
  };
  // Tensor parallel over 4 ranks on 3 hosts; h1 lost: its own shards of step 30 are gone, their
  // copies on h2 did not arrive yet.
  Held held{{shard(20, "aaaaaaaa", 0, 1, 0, 4), shard(20, "aaaaaaaa", 0, 1, 1, 4), shard(20, "aaaaaaaa", 0, 1, 2, 4),
             shard(30, "aaaaaaaa", 0, 1, 0, 4), shard(30, "aaaaaaaa", 0, 1, 1, 4)},
            {},
            {shard(20, "aaaaaaaa", 0, 1, 3, 4), shard(30, "aaaaaaaa", 0, 1, 3, 4)}};
  std::optional<SnapshotChoice> c = newest_complete_snapshot(held);
  REQUIRE(c);
  CHECK(c->step == 20);
  CHECK(c->name == "step000020-aaaaaaaa");
  CHECK_FALSE(c->whole);
  CHECK(c->files == std::vector<std::string>{shard(20, "aaaaaaaa", 0, 1, 0, 4), shard(20, "aaaaaaaa", 0, 1, 1, 4),
                                             shard(20, "aaaaaaaa", 0, 1, 2, 4), shard(20, "aaaaaaaa", 0, 1, 3, 4)});
  held[2].push_back(shard(30, "aaaaaaaa", 0, 1, 2, 4));  // the copy landed: 30 is complete
  CHECK(newest_complete_snapshot(held)->step == 30);
  // Two replicas of 2: one whole replica is enough, half of each is not.
  c = newest_complete_snapshot({{shard(40, "aaaaaaaa", 1, 2, 0, 2)}, {shard(40, "aaaaaaaa", 1, 2, 1, 2), shard(40, "aaaaaaaa", 0, 2, 0, 2)}});
  REQUIRE(c);
  CHECK(c->files == std::vector<std::string>{shard(40, "aaaaaaaa", 1, 2, 0, 2), shard(40, "aaaaaaaa", 1, 2, 1, 2)});
  CHECK(newest_complete_snapshot({{shard(40, "aaaaaaaa", 0, 2, 0, 2), shard(40, "aaaaaaaa", 1, 2, 1, 2)}}) == std::nullopt);
  // Another attempt's shards of the same step do not complete this one's.
  CHECK(newest_complete_snapshot({{shard(40, "aaaaaaaa", 0, 1, 0, 2), shard(40, "bbbbbbbb", 0, 1, 1, 2)}}) == std::nullopt);
  // An assembled checkpoint is a snapshot by itself, and preferred at the same step.
  c = newest_complete_snapshot({{shard(40, "aaaaaaaa", 0, 1, 0, 1)}, {"step000040-bbbbbbbb/whole.st"}});
  REQUIRE(c);
  CHECK(c->whole);
  CHECK(c->files == std::vector<std::string>{"step000040-bbbbbbbb/whole.st"});
  CHECK(newest_complete_snapshot({{shard(50, "aaaaaaaa", 0, 1, 1, 2)}, {"step000040-bbbbbbbb/whole.st"}})->step == 40);
  CHECK(newest_complete_snapshot({{}, {}}) == std::nullopt);
  CHECK(newest_complete_snapshot({{"garbage", "step-x/replica0of1-rank0of1.shard", "stepx-aaaaaaaa/replica0of1-rank0of1.shard",
                                   "step000010-aaaaaaaa/replica0of1-rank0of1.shard.tmp.1",
                                   "step000010-aaaaaaaa/replica0of1-rank1of1.shard", "step10-aaaaaaaa/replica0of1-rank0of1.shard",
                                   "step000010-a/replica0of1-rank0of1.shard", "step000010-aaaaaaaX/replica0of1-rank0of1.shard"}}) ==
        std::nullopt);
}

TEST_CASE("train's snapshots on one process: refused where they cannot work, resumed where they are") {
  test::TempDir dir("snaptrain");
  const std::string base = test::train_binary() + " " + test::kTiny + " --data " + test::corpus(dir) + " --seed 7 ";
  auto train = [&](const std::string& args) { return test::run_command(base + args + " 2>&1"); };
  struct Refused {
    const char* args;
    const char* says;
  };
  for (const Refused& r :
       {Refused{"--resume-snapshot --steps 2", "--resume-snapshot needs --snapshot-dir DIR"},
        Refused{"--snapshot-dir s --snapshot-every 0 --steps 2", "--snapshot-every: '0' must be > 0"},
        Refused{"--snapshot-every 5 --steps 2", "--snapshot-every 5 needs --snapshot-dir DIR"},
        Refused{"--snapshot-dir s --eval-only --load m.st", "--eval-only trains nothing: --snapshot-dir s"}}) {
    test::Run run = train(r.args);
    CHECK_MESSAGE(run.status != 0, r.args);
    CHECK_MESSAGE(run.output.find(r.says) != std::string::npos, run.output);
  }
  dir.write("file", "x");
  test::Run under_file = train("--snapshot-dir " + dir.file("file/snap") + " --steps 2 --no-save");
  CHECK(under_file.status == 1);
  CHECK_MESSAGE(under_file.output.find("--snapshot-dir " + dir.file("file/snap") + ": ") != std::string::npos,
                under_file.output);

  // A run of 5 steps with a snapshot every 2 (one host: no copy), the last at step 4.
  const std::string snaps = " --snapshot-dir " + dir.file("snap") + " --snapshot-every 2";
  test::Run first = train("--steps 5 --no-save" + snaps);
  REQUIRE_MESSAGE(first.status == 0, first.output);
  CHECK_MESSAGE(first.output.find("one host, so no copy elsewhere") != std::string::npos, first.output);
  CHECK(first.output.find("no snapshot in this run") == std::string::npos);
  CHECK(snapshot_files(dir.file("snap")).size() == 2);  // steps 2 and 4: the one before the last stays
  // Another run into the same directory is refused before its first step...
  test::Run again = train("--steps 5 --no-save" + snaps);
  CHECK(again.status == 1);
  CHECK_MESSAGE(again.output.find("already holds snapshots") != std::string::npos, again.output);
  CHECK(again.output.find("continue them with --resume-snapshot") != std::string::npos);
  // ...and one that continues them starts at step 4 and ends as a run resumed by hand from step 4.
  test::Run resumed = train("--steps 5 --save " + dir.file("resumed.st") + snaps + " --resume-snapshot");
  REQUIRE_MESSAGE(resumed.status == 0, resumed.output);
  CHECK_MESSAGE(resumed.output.find("snapshot: resuming step 4 ") != std::string::npos, resumed.output);
  REQUIRE(train("--steps 5 --save " + dir.file("m.st") + " --save-every 4").status == 0);
  REQUIRE(train("--steps 5 --save " + dir.file("by-hand.st") + " --load " + dir.file("m-step000004.st")).status == 0);
  SafetensorsFile a = read_safetensors(dir.file("resumed.st")), b = read_safetensors(dir.file("by-hand.st"));
  for (const auto& [name, t] : a.tensors) CHECK(t.to_vector<float>() == b.tensors.at(name).to_vector<float>());
  // The newest snapshot's shard changed on disk (one bit): the restart takes the one before and
  // says why.
  const std::string snaps2 = " --snapshot-dir " + dir.file("snap2") + " --snapshot-every 2";
  REQUIRE(train("--steps 5 --no-save" + snaps2).status == 0);
  const std::string four = snapshot_files(dir.file("snap2")).back();
  REQUIRE(four.rfind("step000004-", 0) == 0);
  std::string bytes = read_file_bytes(dir.file("snap2/" + four));
  bytes[bytes.size() - 5] ^= 1;
  dir.write("snap2/" + four, bytes);
  test::Run fell_back = train("--steps 5 --no-save" + snaps2 + " --resume-snapshot");
  REQUIRE_MESSAGE(fell_back.status == 0, fell_back.output);
  CHECK_MESSAGE(fell_back.output.find("snapshot: not taken, on this host: step000004-") != std::string::npos,
                fell_back.output);
  CHECK(fell_back.output.find("rank0of1.shard: its bytes do not match its checksum") != std::string::npos);
  CHECK(fell_back.output.find("snapshot: resuming step 2 ") != std::string::npos);
  // With nothing to resume, --resume-snapshot starts at step 0 and says so.
  test::Run none = train("--steps 2 --no-save --snapshot-dir " + dir.file("empty") + " --resume-snapshot");
  REQUIRE_MESSAGE(none.status == 0, none.output);
  CHECK_MESSAGE(none.output.find("snapshot: none complete in " + dir.file("empty")) != std::string::npos, none.output);
  // Its snapshots every 20 steps reach none of its 2: it says so.
  CHECK_MESSAGE(none.output.find("no snapshot in this run: every 20 steps reaches none of steps 1 to 1") !=
                    std::string::npos,
                none.output);
}

TEST_CASE("snapshot storage: a disk that cannot take a snapshot costs the snapshot, not the run or its --save") {
  test::TempDir dir("snapdisk");
  const std::string base = test::train_binary() + " " + test::kTiny + " --data " + test::corpus(dir) + " --seed 7 ";
  // The sizes: a shard holds the weights and both Adam slots in one file; --save writes the weights
  // and the optimizer's state in two, each smaller. A file limit between them fails the shards only.
  REQUIRE(test::run_command(base + "--steps 3 --snapshot-every 2 --snapshot-dir " + dir.file("sizes") + " --save " +
                            dir.file("sizes.st"))
              .status == 0);
  const uintmax_t shard = std::filesystem::file_size(dir.file("sizes/" + snapshot_files(dir.file("sizes")).at(0)));
  const uintmax_t state = std::filesystem::file_size(dir.file("sizes.st.state"));
  REQUIRE(state < shard);
  test::Run full = test::run_with_file_limit(base + "--steps 5 --snapshot-every 2 --snapshot-dir " + dir.file("snap") +
                                                 " --save " + dir.file("m.st"),
                                             (state + shard) / 2, dir.file("full.log"), false);
  CHECK_MESSAGE(full.status == 0, full.output);
  CHECK_MESSAGE(full.output.find("snapshot: step 2 could not be written (") != std::string::npos, full.output);
  CHECK(full.output.find("the run goes on, but recovery after losing a host is off until a snapshot is written") !=
        std::string::npos);
  CHECK(full.output.find("saved " + dir.file("m.st") + " (step 5)") != std::string::npos);
  CHECK(snapshot_files(dir.file("snap")).empty());  // nothing half-written taken for a snapshot

  // A resume whose disk cannot take the assembled checkpoint says so, and what it needs.
  test::Run resume = test::run_with_file_limit(base + "--steps 5 --no-save --snapshot-every 2 --resume-snapshot " +
                                                   "--snapshot-dir " + dir.file("sizes"),
                                               state / 2, dir.file("resume.log"), false);
  CHECK(resume.status == 1);
  CHECK_MESSAGE(resume.output.find("snapshot: cannot assemble step 2's shards into " + dir.file("sizes")) !=
                    std::string::npos,
                resume.output);
  CHECK(resume.output.find("MB free in " + dir.file("sizes") + " beside its shards") != std::string::npos);

  // A directory the run cannot write is found before the first step, not at the first snapshot.
  const std::string ro = dir.file("ro");
  std::filesystem::create_directories(ro);
  const std::string run = base + "--steps 3 --snapshot-every 2 --snapshot-dir " + ro + " --save " + dir.file("ro.st");
  test::Run refused = geteuid() == 0  // root writes where the mode says no: a read-only mount instead
                          ? test::run_command("unshare -m sh -c 'mount --bind " + ro + " " + ro + " && mount -o remount,bind,ro " +
                                              ro + " && " + run + "'")
                          : (std::filesystem::permissions(ro, std::filesystem::perms::owner_read |
                                                                  std::filesystem::perms::owner_exec),
                             test::run_command(run));
  CHECK(refused.status == 1);
  CHECK_MESSAGE(refused.output.find("--snapshot-dir " + ro + ": cannot open " + ro + "/lock") != std::string::npos,
                refused.output);
  CHECK(refused.output.find("step     1") == std::string::npos);
}
