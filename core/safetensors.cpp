#include "core/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "core/temp_files.h"

namespace flextp {
namespace {

using json = nlohmann::json;

// Above this, a header is not a real one (Hugging Face uses 100 MB as its limit).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

const char* st_dtype(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::I32: return "I32";
    case DType::BF16: return "BF16";
  }
  return "?";
}

DType parse_dtype(const std::string& s, const std::string& name, const std::string& path) {
  if (s == "F32") return DType::F32;
  if (s == "F64") return DType::F64;
  if (s == "I32") return DType::I32;
  FLEXTP_FAIL(path, ": tensor '", name, "' has dtype ", s, ", which flextp does not read (F32, F64, I32)");
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

namespace {
// Fault injection for the tests of interrupted saves: FLEXTP_FAULT_KILL_IN_WRITE=N kills the
// process (SIGKILL, nothing flushed) halfway through the Nth atomic write, and
// FLEXTP_FAULT_KILL_AFTER_WRITE=N right after the Nth write is in place.
bool fault_now(const char* variable, int count) {
  const char* v = std::getenv(variable);
  return v != nullptr && std::atoi(v) == count;
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes) {
  static int writes = 0;
  const int this_write = ++writes;
  remove_stale_temporaries(path);  // of earlier saves killed mid-write
  std::string tmp = temporary_path(path);
  int fd = create_new_file(tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, std::min<size_t>(bytes.size() - done, 1 << 20));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      FLEXTP_FAIL("cannot write ", tmp, ": ", why, " (disk full?)");
    }
    done += static_cast<size_t>(n);
    if (done >= bytes.size() / 2 && fault_now("FLEXTP_FAULT_KILL_IN_WRITE", this_write)) ::kill(::getpid(), SIGKILL);
  }
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    FLEXTP_FAIL("cannot move ", tmp, " to ", path, ": ", why);
  }
  // The rename itself must reach the disk for the new file to survive a power cut.
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  if (fault_now("FLEXTP_FAULT_KILL_AFTER_WRITE", this_write)) ::kill(::getpid(), SIGKILL);
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    FLEXTP_CHECK(!header.contains(name), "write_safetensors: tensor name '", name, "' appears twice");
    header[name] = {{"dtype", st_dtype(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  uint64_t n = text.size();
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  bytes += text;
  bytes.reserve(bytes.size() + offset);
  for (const auto& [name, t] : tensors) {
    Tensor host = t.to(Device::cpu());
    bytes.append(static_cast<const char*>(host.raw()), host.nbytes());
  }
  write_file_atomic(path, bytes);
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  FLEXTP_CHECK(in, "cannot open checkpoint file ", path, ": ", errno_text());
  uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  FLEXTP_CHECK(file_size >= 8, path, ": file of ", file_size,
               " bytes is too short for a safetensors header (truncated?)");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(len_bytes[i]) << (8 * i);
  FLEXTP_CHECK(header_len <= kMaxHeaderBytes && header_len <= file_size - 8, path,
               ": header length ", header_len, " does not fit the file of ", file_size,
               " bytes (not a safetensors file, or truncated)");
  std::string text(header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    FLEXTP_FAIL(path, ": header is not valid JSON: ", e.what());
  }
  FLEXTP_CHECK(header.is_object(), path, ": header is not a JSON object");
  uint64_t data_start = 8 + header_len, data_size = file_size - data_start;

  // Every entry is checked, and the ranges against each other, before any tensor is allocated.
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  SafetensorsFile out;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      FLEXTP_CHECK(entry.is_object(), path, ": __metadata__ is not an object");
      for (auto& [k, v] : entry.items()) {
        FLEXTP_CHECK(v.is_string(), path, ": metadata '", k, "' is not a string");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    bool ok = entry.is_object() && entry.contains("dtype") && entry["dtype"].is_string() &&
              entry.contains("shape") && entry["shape"].is_array() &&
              entry.contains("data_offsets") && entry["data_offsets"].is_array() &&
              entry["data_offsets"].size() == 2;
    FLEXTP_CHECK(ok, path, ": tensor '", name, "' needs dtype, shape and two data_offsets");
    DType dtype = parse_dtype(entry["dtype"].get<std::string>(), name, path);
    Shape shape;
    uint64_t count = 1;
    for (auto& d : entry["shape"]) {
      FLEXTP_CHECK(d.is_number_unsigned() || (d.is_number_integer() && d.get<int64_t>() >= 0),
                   path, ": tensor '", name, "' has a bad dimension ", d.dump());
      uint64_t dim = d.get<uint64_t>();
      FLEXTP_CHECK(dim == 0 || count <= data_size / dim, path, ": tensor '", name,
                   "' claims more elements than the file holds");
      count *= dim;
      shape.push_back(static_cast<int64_t>(dim));
    }
    auto& offs = entry["data_offsets"];
    FLEXTP_CHECK(offs[0].is_number_unsigned() && offs[1].is_number_unsigned(), path, ": tensor '",
                 name, "' has non-integer data_offsets");
    uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    FLEXTP_CHECK(begin <= end && end <= data_size, path, ": tensor '", name, "' byte range [",
                 begin, ", ", end, ") lies outside the ", data_size, " data bytes (truncated file?)");
    FLEXTP_CHECK(end - begin == count * dtype_size(dtype), path, ": tensor '", name, "' has ",
                 end - begin, " bytes but its shape ", shape_str(shape), " and dtype need ",
                 count * dtype_size(dtype));
    entries.push_back({name, dtype, shape, begin, end});
  }
  // The ranges tile the data exactly, as the format requires: aliased or overlapping ranges
  // would let a small file claim many times its size, and bytes of no tensor mean damage.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries)
    if (e.end > e.begin) by_offset.push_back(&e);  // empty tensors own no bytes, wherever they are
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : by_offset) {
    FLEXTP_CHECK(e->begin >= covered, path, ": tensor '", e->name, "' byte range [", e->begin, ", ", e->end,
                 ") overlaps tensor '", previous->name, "' [", previous->begin, ", ", previous->end, ")");
    FLEXTP_CHECK(e->begin == covered, path, ": data bytes [", covered, ", ", e->begin, ") belong to no tensor");
    covered = e->end;
    previous = e;
  }
  FLEXTP_CHECK(covered == data_size, path, ": data bytes [", covered, ", ", data_size, ") belong to no tensor");
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    in.seekg(static_cast<std::streamoff>(data_start + e.begin));
    in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(e.end - e.begin));
    FLEXTP_CHECK(in, path, ": could not read the data of tensor '", e.name, "'");
    out.tensors[e.name] = t;
  }
  return out;
}

// The header alone: a look at many checkpoints (--keep-last) reads none of their tensors.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  FLEXTP_CHECK(in, "cannot open checkpoint file ", path, ": ", errno_text());
  uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char len_bytes[8] = {};
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(len_bytes[i]) << (8 * i);
  FLEXTP_CHECK(in && header_len <= kMaxHeaderBytes && header_len <= file_size - 8, path,
               ": not a safetensors file (its header length ", header_len, " does not fit the file of ", file_size,
               " bytes)");
  std::string text(header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  std::map<std::string, std::string> metadata;
  try {
    json header = json::parse(text);
    if (header.is_object() && header.contains("__metadata__") && header["__metadata__"].is_object())
      for (auto& [k, v] : header["__metadata__"].items())
        if (v.is_string()) metadata[k] = v.get<std::string>();
  } catch (const json::exception& e) {
    FLEXTP_FAIL(path, ": header is not valid JSON: ", e.what());
  }
  return metadata;
}

}  // namespace flextp
