#include "store/snapshot_shard.h"

#include <set>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "core/text_fields.h"
#include "parallel/comm/rank_agreement.h"
#include "parallel/tp/unit_rows.h"

namespace flextp {
namespace {

std::string units_key(const Parameter& p) { return "units." + p.name; }

std::string units_text(const std::vector<int64_t>& units) {
  std::string s;
  for (int64_t u : units) s += (s.empty() ? "" : ",") + std::to_string(u);
  return s;
}

// A shard's checksum: 16 hex digits of the fingerprint of its data (every byte after the header),
// written into its own metadata: the header is laid out with a placeholder of the same length,
// which the sum then replaces, so that the bytes are gathered once.
constexpr char kChecksumKey[] = "data_checksum";
const std::string kChecksumPlaceholder = std::string("\"") + kChecksumKey + "\":\"" + std::string(16, '0') + "\"";

size_t data_start(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 0; i < 8 && i < static_cast<int>(bytes.size()); ++i) n |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  return std::min<uint64_t>(8 + n, bytes.size());
}

std::string checksum_text(const std::string& bytes) {
  const size_t start = data_start(bytes);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fingerprint(bytes.data() + start, bytes.size() - start));
  return hex;
}

int64_t meta_number(const SafetensorsFile& f, const std::string& path, const std::string& key) {
  return metadata_int(f.metadata, path, key);
}

const Tensor& shard_tensor(const SafetensorsFile& f, const std::string& path, const std::string& name,
                           const Parameter& p, int64_t rows) {
  auto it = f.tensors.find(name);
  FLEXTP_CHECK(it != f.tensors.end(), path, ": tensor '", name, "' is missing");
  Shape want = p.value.shape();
  want[0] = rows;
  FLEXTP_CHECK(it->second.shape() == want && it->second.dtype() == p.value.dtype(), path, ": tensor '", name,
               "' is ", dtype_name(it->second.dtype()), " ", shape_str(it->second.shape()), ", the model needs ",
               dtype_name(p.value.dtype()), " ", shape_str(want));
  return it->second;
}

}  // namespace

std::string shard_bytes(GPT& model, const Optimizer& optimizer, const TrainState& state, const ShardPlace& place) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> meta = config_metadata(model.config());
  for (Parameter* p : model.parameters()) {
    tensors.push_back({p->name, p->value});
    for (const std::string& s : optimizer.slot_names()) {
      auto it = p->state.find(s);  // before the first step: zeros, as a checkpoint has them
      tensors.push_back({p->name + "." + s, it != p->state.end() ? it->second : Tensor::zeros(p->value.shape(), p->value.dtype())});
    }
    if (!p->replicated()) meta[units_key(*p)] = units_text(p->units);
  }
  // The unit sizes lay out the rows (a checkpoint, whole, needs none of them).
  const GPTConfig& c = model.config();
  meta["mlp_unit"] = std::to_string(c.mlp_unit), meta["vocab_unit"] = std::to_string(c.vocab_unit);
  meta["vocab_pad"] = std::to_string(c.vocab_pad);
  put_train_state(meta, state, &optimizer);
  meta["rank"] = std::to_string(place.rank), meta["ranks"] = std::to_string(place.ranks);
  meta["replica"] = std::to_string(place.replica), meta["replicas"] = std::to_string(place.replicas);
  meta[kChecksumKey] = std::string(16, '0');
  std::string bytes = safetensors_bytes(tensors, meta);
  const size_t at = bytes.find(kChecksumPlaceholder);
  FLEXTP_CHECK(at != std::string::npos && at < data_start(bytes), "a shard's header has no checksum's place");
  bytes.replace(at + kChecksumPlaceholder.size() - 17, 16, checksum_text(bytes));
  return bytes;
}

ShardInfo read_shard_info(const std::string& path) {
  SafetensorsFile f = read_safetensors(path);
  auto sum = f.metadata.find(kChecksumKey);
  FLEXTP_CHECK(sum != f.metadata.end(), path, ": no checksum (a shard of an older flextp)");
  FLEXTP_CHECK(checksum_text(read_file_bytes(path)) == sum->second, path,
               ": its bytes do not match its checksum (a changed or damaged file)");
  auto number = [&](const char* key) { return static_cast<int>(meta_number(f, path, key)); };
  auto run = f.metadata.find("run_id");
  ShardInfo info{meta_number(f, path, "step"), {number("rank"), number("ranks"), number("replica"), number("replicas")},
                 run == f.metadata.end() ? "" : run->second};
  const ShardPlace& p = info.place;
  FLEXTP_CHECK(p.rank >= 0 && p.rank < p.ranks && p.replica >= 0 && p.replica < p.replicas, path, ": rank ", p.rank,
               " of ", p.ranks, " in replica ", p.replica, " of ", p.replicas, " is no place");
  return info;
}

namespace {

std::string text_of(const SafetensorsFile& f, const std::string& key) {
  auto it = f.metadata.find(key);
  return it == f.metadata.end() ? std::string("(none)") : it->second;
}

// Shard r holds rank r of as many as there are shards, of the same step, run and replica.
void check_one_replica(const std::vector<SafetensorsFile>& files, const std::vector<std::string>& shards) {
  const SafetensorsFile& first = files[0];
  for (size_t r = 0; r < files.size(); ++r) {
    const SafetensorsFile& f = files[r];
    FLEXTP_CHECK(meta_number(f, shards[r], "rank") == static_cast<int64_t>(r) &&
                     meta_number(f, shards[r], "ranks") == static_cast<int64_t>(files.size()),
                 shards[r], ": holds rank ", text_of(f, "rank"), " of ", text_of(f, "ranks"), ", not rank ", r, " of ",
                 files.size());
    for (const char* key : {"step", "run_id", "optimizer_steps", "replica", "replicas"})
      FLEXTP_CHECK(text_of(f, key) == text_of(first, key), shards[r], ": its ", key, " ", text_of(f, key), " is not ",
                   shards[0], "'s ", text_of(first, key), ": the shards are not one replica's of one snapshot");
  }
}

// The model a shard is of, with the unit sizes that lay out its rows; checked before a model of it
// is built: sizes the file does not back stop here.
GPTConfig shard_config(const SafetensorsFile& first, const std::string& path) {
  GPTConfig c = config_of_metadata(first.metadata, path);
  auto ln = first.tensors.find("ln_f.weight");
  FLEXTP_CHECK(ln != first.tensors.end(), path, ": tensor 'ln_f.weight' is missing");
  c.dtype = ln->second.dtype();
  c.mlp_unit = meta_number(first, path, "mlp_unit"), c.vocab_unit = meta_number(first, path, "vocab_unit");
  c.vocab_pad = meta_number(first, path, "vocab_pad");
  try {
    c.validate();
  } catch (const Error& e) {
    FLEXTP_FAIL(path, ": ", e.what());
  }
  return c;
}

}  // namespace

TrainState assemble_checkpoint(const std::vector<std::string>& shards, Optimizer& optimizer, const std::string& path) {
  NoGradGuard ng;
  FLEXTP_CHECK(!shards.empty(), "a snapshot of no shards");
  std::vector<SafetensorsFile> files;
  for (const std::string& s : shards) files.push_back(read_safetensors(s));
  const SafetensorsFile& first = files[0];
  check_one_replica(files, shards);
  const TrainState state = train_state_of(first.metadata, shards[0], &optimizer);
  GPT model(shard_config(first, shards[0]));  // one rank: every unit, in id order, so that its values are the logical tensors
  for (Parameter* p : model.parameters()) {
    std::vector<Tensor*> targets{&p->value};
    for (const std::string& s : optimizer.slot_names()) targets.push_back(&p->slot(s));
    std::set<int64_t> covered;  // over the shards: each unit once
    for (size_t r = 0; r < files.size(); ++r) {
      std::vector<int64_t> units;
      if (!p->replicated()) {
        auto it = files[r].metadata.find(units_key(*p));
        FLEXTP_CHECK(it != files[r].metadata.end(), shards[r], ": metadata has no '", units_key(*p), "'");
        for (const std::string& field : it->second.empty() ? std::vector<std::string>{} : split_fields(it->second, ',')) {
          std::optional<int64_t> u = whole_int(field);
          FLEXTP_CHECK(u && *u >= 0 && *u < p->group().units && covered.insert(*u).second, shards[r], ": unit '", field,
                       "' of ", p->name, " is not a unit of it, or another shard holds it too");
          units.push_back(*u);
        }
      } else if (r > 0) {
        continue;  // the same on every rank: rank 0's
      }
      int64_t rows = 0;
      for (int64_t u : units) rows += p->rows_of_unit(u);
      if (p->replicated()) rows = p->value.size(0);
      for (size_t t = 0; t < targets.size(); ++t) {
        const std::string name = t == 0 ? p->name : p->name + "." + optimizer.slot_names()[t - 1];
        const Tensor& local = shard_tensor(files[r], shards[r], name, *p, rows);
        if (p->replicated())
          targets[t]->copy_from(local);
        else
          put_unit_rows(*p, local, units, *targets[t]);
      }
    }
    FLEXTP_CHECK(p->replicated() || static_cast<int64_t>(covered.size()) == p->group().units, "the shards of step ",
                 text_of(first, "step"), " hold ", covered.size(), " of the ", p->group().units, " units of ", p->name,
                 ": a shard is missing");
  }
  save_checkpoint(path, model, &optimizer, state, nullptr);
  return state;
}

}  // namespace flextp
