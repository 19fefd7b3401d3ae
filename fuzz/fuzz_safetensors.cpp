// Fuzzes the safetensors reader, and the checkpoint config read from a file's metadata: any bytes
// either load or give flextp::Error; never a crash, a hang, a leak or an allocation the file cannot
// back (a model config its tensors do not back is refused before anyone builds it).
#include <cstdlib>

#include "core/error.h"
#include "core/safetensors.h"
#include "store/checkpoint.h"
#include "fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = flextp::fuzz::as_file(data, size, ".safetensors");
  try {
    flextp::SafetensorsFile f = flextp::read_safetensors(path);
    for (const auto& [name, t] : f.tensors) (void)t.nbytes();
  } catch (const flextp::Error&) {
    return 0;
  }
  try {
    flextp::GPTConfig c = flextp::read_checkpoint_config(path);
    // What a config passed here promises the model that is built from it next.
    if (c.n_layer <= 0 || c.n_embd <= 0 || c.n_embd % c.n_head != 0 || c.vocab_size <= 0 || c.n_positions <= 0)
      std::abort();
  } catch (const flextp::Error&) {
  }
  return 0;
}
