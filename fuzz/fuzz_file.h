#pragma once
// libFuzzer targets whose reader takes a path: the input is written to a per-process file first.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

namespace flextp::fuzz {

inline std::string as_file(const uint8_t* data, size_t size, const char* suffix) {
  std::string path = "/tmp/flextp-fuzz-" + std::to_string(::getpid()) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                               static_cast<std::streamsize>(size));
  return path;
}

}  // namespace flextp::fuzz
