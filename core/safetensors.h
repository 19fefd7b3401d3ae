#pragma once
// safetensors files: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian data. Used for weights (Hugging Face
// names) and for optimizer state. Reading checks every field against the file and names the
// tensor and the problem; writing goes to a temporary file that is renamed into place.
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace flextp {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;  // on the CPU
  std::map<std::string, std::string> metadata;
};

// Atomic: a crash mid-write leaves any previous file at `path` intact.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The bytes such a file holds (a snapshot's shard also travels to another host as them).
std::string safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

SafetensorsFile read_safetensors(const std::string& path);
// The __metadata__ of a safetensors file, reading its header only.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

// Writes `bytes` to path through a temporary file, fsync and rename. Without `durable` the fsyncs
// are left out: the file is whole or absent after a killed process, not after a power cut (a
// snapshot's shard, which guards against losing a host, has a copy on another).
void write_file_atomic(const std::string& path, const std::string& bytes, bool durable = true);
// The whole file's bytes; throws naming a file that cannot be read.
std::string read_file_bytes(const std::string& path);

}  // namespace flextp
