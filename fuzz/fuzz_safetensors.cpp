// Fuzzes the safetensors reader: any bytes either load or give flextp::Error; never a crash, a
// hang, a leak or an allocation the file cannot back.
#include "core/error.h"
#include "core/safetensors.h"
#include "fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = flextp::fuzz::as_file(data, size, ".safetensors");
  try {
    flextp::SafetensorsFile f = flextp::read_safetensors(path);
    for (const auto& [name, t] : f.tensors) (void)t.nbytes();
  } catch (const flextp::Error&) {
  }
  return 0;
}
