// Fuzzes the llm.c token-shard reader, and what --data makes of a plain path: a shard by its magic,
// else UTF-8 text, else refused.
#include "core/error.h"
#include "data/token_files.h"
#include "fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = flextp::fuzz::as_file(data, size, ".bin");
  try {
    std::vector<int32_t> tokens = flextp::read_shards(path);
    (void)tokens;
  } catch (const flextp::Error&) {
  }
  try {
    flextp::ByteTokenizer bytes;
    std::vector<int32_t> tokens = flextp::load_tokens(path, bytes);
    (void)tokens;
  } catch (const flextp::Error&) {
  }
  return 0;
}
