// flextp-logits: the logits of a checkpoint (flextp's, or an --export-hf model.safetensors: the
// same file format; or a Hugging Face GPT-2 directory, imported as train --init-from-hf does) for
// given token ids, written as safetensors ("ids" i32 [B, T], "logits" f32 [B, T, V]), so that
// other implementations can be compared with flextp (scripts/check_hf_export.py and
// tests/hf_transformers.py do so with Hugging Face transformers).
//   flextp-logits --load m.safetensors --ids "464,2068,7586;40,716,257" --out logits.safetensors
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/autograd.h"
#include "core/error.h"
#include "core/parse_flags.h"
#include "core/safetensors.h"
#include "core/temp_files.h"
#include "nn/gpt.h"
#include "store/checkpoint.h"
#include "store/hf_gpt2.h"

using namespace flextp;

int main(int argc, char** argv) {
  CLI::App app{"flextp-logits: logits of a checkpoint for token ids, as safetensors"};
  std::string load, ids_text, out;
  app.add_option("--load", load, "checkpoint (weights), or a Hugging Face GPT-2 directory")->required();
  app.add_option("--ids", ids_text, "rows of equal length: ids separated by ',' and rows by ';'")->required();
  app.add_option("--out", out, "safetensors file to write")->required();
  if (std::optional<int> status = parse_flags(app, argc, argv, "flextp-logits")) return *status;
  try {
    std::vector<std::vector<int32_t>> rows;
    std::stringstream all(ids_text);
    for (std::string row; std::getline(all, row, ';');) {
      rows.emplace_back();
      std::stringstream r(row);
      for (std::string id; std::getline(r, id, ',');) {
        size_t used = 0;
        int64_t v = -1;
        try {
          v = std::stoll(id, &used);
        } catch (const std::exception&) {
        }
        FLEXTP_CHECK(used == id.size() && v >= 0 && v <= INT32_MAX, "--ids: '", id, "' is not a token id");
        rows.back().push_back(static_cast<int32_t>(v));
      }
      FLEXTP_CHECK(!rows.back().empty() && rows.back().size() == rows.front().size(),
                   "--ids: every row needs the same, non-zero number of ids");
    }
    FLEXTP_CHECK(!rows.empty(), "--ids is empty");
    std::unique_ptr<GPT> loaded = load_weights_only(load);
    GPT& model = *loaded;
    const GPTConfig& c = model.config();
    model.set_training(false);
    std::vector<int32_t> flat;
    for (const auto& r : rows) {
      for (int32_t id : r) FLEXTP_CHECK(id < c.vocab_size, "--ids: ", id, " is outside the vocabulary of ", c.vocab_size);
      flat.insert(flat.end(), r.begin(), r.end());
    }
    int64_t b = static_cast<int64_t>(rows.size()), t = static_cast<int64_t>(rows.front().size());
    FLEXTP_CHECK(t <= c.n_positions, "--ids: rows of ", t, " exceed n_positions ", c.n_positions);
    Tensor ids = Tensor::from_vector(flat, {b, t});
    NoGradGuard ng;
    Tensor logits = model.logits(ids);
    try {
      make_directories(std::filesystem::path(out).parent_path());
    } catch (const Error& e) {
      throw Error("--out " + out + ": " + e.what());
    }
    write_safetensors(out, {{"ids", ids}, {"logits", logits}}, {});
    std::printf("wrote %s: logits [%lld, %lld, %lld]\n", out.c_str(), (long long)b, (long long)t, (long long)c.vocab_size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flextp-logits: error: %s\n", e.what());
    return 1;
  }
}
