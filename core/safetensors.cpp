#include <atomic>
#include "core/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "core/injected_faults.h"
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

// A header, read as the parser meets its values: no JSON tree is built. A header is an object
// of objects whose arrays hold numbers (three levels): anything deeper is refused where it starts
// (100 MB of '[' took the tree 3.9 GB), and a header of a million small entries costs those
// entries, not a tree of maps that is 30 times the header's size.
constexpr int kMaxHeaderDepth = 3;
// A header may list any number of tensors that own bytes, as the data holds them, and this many
// empty ones: without a bound, a 100 MB header of empty tensors cost 2.3 GB of entries.
constexpr uint64_t kMaxEmptyTensors = 4096;

// One entry of the header as written, checked once it is complete.
struct RawEntry {
  std::string name;
  bool object = false, has_dtype = false, has_shape = false, has_offsets = false;
  std::string dtype, bad_dimension;  // bad_dimension: the first dimension that is no count
  Shape shape;
  std::vector<uint64_t> offsets;
  bool offsets_unsigned = true;
};

class HeaderReader : public json::json_sax_t {
 public:
  // `data_bytes`: the bytes after the header, which bound the entries a file can hold.
  HeaderReader(const std::string& path, uint64_t data_bytes, std::map<std::string, std::string>& metadata,
               std::vector<RawEntry>& entries)
      : path_(path), data_bytes_(data_bytes), metadata_(metadata), entries_(entries) {}

  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return --depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      FLEXTP_CHECK(names_.insert(k).second, path_, ": '", k, "' appears twice in the header");
      name_ = k;
    } else if (depth_ == 2) {
      field_ = k;
    }
    return true;
  }
  bool string(string_t& v) override { return scalar("\"" + v + "\"", &v, nullptr); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(std::to_string(v), nullptr, &v); }
  bool number_integer(number_integer_t v) override { return scalar(std::to_string(v), nullptr, nullptr); }
  bool number_float(number_float_t, const string_t& text) override { return scalar(text, nullptr, nullptr); }
  bool boolean(bool v) override { return scalar(v ? "true" : "false", nullptr, nullptr); }
  bool null() override { return scalar("null", nullptr, nullptr); }
  bool binary(binary_t&) override { return scalar("binary", nullptr, nullptr); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    FLEXTP_FAIL(path_, ": header is not valid JSON: ", e.what());
    return false;
  }

 private:
  bool metadata() const { return name_ == "__metadata__"; }

  // An entry that is an object or a value of another kind.
  void entry(bool object) {
    FLEXTP_CHECK(!metadata() || object, path_, ": __metadata__ is not an object");
    if (metadata()) return;
    // Each tensor of a dtype flextp reads owns 4 bytes or more unless it is empty.
    FLEXTP_CHECK(entries_.size() < data_bytes_ / 4 + kMaxEmptyTensors, path_, ": the header lists more tensors than its ",
                 data_bytes_, " data bytes can hold (4 bytes or more each, and at most ", kMaxEmptyTensors,
                 " empty ones)");
    RawEntry e;
    e.name = name_, e.object = object;
    entries_.push_back(std::move(e));
  }

  bool open(bool object) {
    FLEXTP_CHECK(depth_ > 0 || object, path_, ": header is not a JSON object");
    FLEXTP_CHECK(depth_ < kMaxHeaderDepth, path_, ": header nests deeper than ", kMaxHeaderDepth,
                 " levels (a safetensors header is an object of tensor entries): not a safetensors file");
    if (depth_ == 1) entry(object);
    if (depth_ == 2) {
      FLEXTP_CHECK(!metadata(), path_, ": metadata '", field_, "' is not a string");
      if (field_ == "shape") entries_.back().has_shape = !object;
      if (field_ == "data_offsets") entries_.back().has_offsets = !object;
    }
    ++depth_;
    return true;
  }

  // A value that is not an object or an array; `text` spells it for messages.
  bool scalar(const std::string& text, const string_t* str, const number_unsigned_t* count) {
    FLEXTP_CHECK(depth_ > 0, path_, ": header is not a JSON object");
    if (depth_ == 1) {
      entry(false);
    } else if (depth_ == 2 && metadata()) {
      FLEXTP_CHECK(str, path_, ": metadata '", field_, "' is not a string");
      metadata_[field_] = *str;
    } else if (depth_ == 2 && field_ == "dtype") {
      entries_.back().has_dtype = str != nullptr;
      if (str) entries_.back().dtype = *str;
    } else if (depth_ == 3 && field_ == "shape") {
      RawEntry& e = entries_.back();
      if (count && *count <= static_cast<uint64_t>(INT64_MAX)) e.shape.push_back(static_cast<int64_t>(*count));
      else if (e.bad_dimension.empty()) e.bad_dimension = text;
    } else if (depth_ == 3 && field_ == "data_offsets") {
      RawEntry& e = entries_.back();
      e.offsets.push_back(count ? *count : 0);
      e.offsets_unsigned = e.offsets_unsigned && count != nullptr;
    }
    return true;
  }

  const std::string& path_;
  const uint64_t data_bytes_;
  std::map<std::string, std::string>& metadata_;
  std::vector<RawEntry>& entries_;
  std::set<std::string> names_;
  int depth_ = 0;
  std::string name_, field_;  // the entry (a key at depth 1) and its field (a key at depth 2)
};

// An open safetensors file, read up to its data: the header's JSON text (after its 8-byte
// little-endian length), checked to fit the file.
struct OpenedFile {
  std::ifstream in;
  uint64_t file_size = 0;
  std::string header;
  uint64_t data_start() const { return 8 + header.size(); }
  uint64_t data_bytes() const { return file_size - data_start(); }
};

OpenedFile open_safetensors(const std::string& path) {
  OpenedFile f{std::ifstream(path, std::ios::binary | std::ios::ate), 0, {}};
  FLEXTP_CHECK(f.in, "cannot open checkpoint file ", path, ": ", errno_text());
  f.file_size = static_cast<uint64_t>(f.in.tellg());
  f.in.seekg(0);
  FLEXTP_CHECK(f.file_size >= 8, path, ": file of ", f.file_size,
               " bytes is too short for a safetensors header (truncated?)");
  unsigned char len_bytes[8];
  f.in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(len_bytes[i]) << (8 * i);
  FLEXTP_CHECK(header_len <= kMaxHeaderBytes && header_len <= f.file_size - 8, path,
               ": header length ", header_len, " does not fit the file of ", f.file_size,
               " bytes (not a safetensors file, or truncated)");
  f.header.assign(header_len, '\0');
  f.in.read(f.header.data(), static_cast<std::streamsize>(header_len));
  return f;
}

// The header's entries as written, and its metadata.
std::vector<RawEntry> read_header(const std::string& path, const OpenedFile& f,
                                  std::map<std::string, std::string>& metadata) {
  std::vector<RawEntry> entries;
  HeaderReader reader(path, f.data_bytes(), metadata, entries);
  json::sax_parse(f.header, &reader);
  return entries;
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FLEXTP_CHECK(in, "cannot read ", path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file_atomic(const std::string& path, const std::string& bytes, bool durable) {
  static std::atomic<int> writes{0};  // snapshots write from threads of their own
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
    if (done >= bytes.size() / 2) injected_fault::kill_in_write(this_write);
  }
  bool synced = !durable || ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    FLEXTP_FAIL("cannot move ", tmp, " to ", path, ": ", why);
  }
  // The rename itself must reach the disk for the new file to survive a power cut.
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = durable ? ::open(dir.c_str(), O_RDONLY | O_DIRECTORY) : -1;
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  injected_fault::kill_after_write(this_write);
}

std::string safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
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
  return bytes;
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, safetensors_bytes(tensors, metadata));
}

namespace {

// A tensor's entry, checked: its dtype, shape and byte range [begin, end) within the data.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

Entry checked_entry(const RawEntry& entry, const std::string& path, uint64_t data_size) {
  const std::string& name = entry.name;
  bool ok = entry.object && entry.has_dtype && entry.has_shape && entry.has_offsets && entry.offsets.size() == 2;
  FLEXTP_CHECK(ok, path, ": tensor '", name, "' needs dtype, shape and two data_offsets");
  DType dtype = parse_dtype(entry.dtype, name, path);
  FLEXTP_CHECK(entry.bad_dimension.empty(), path, ": tensor '", name, "' has a bad dimension ", entry.bad_dimension);
  Shape shape;
  uint64_t count = 1;
  for (int64_t d : entry.shape) {
    uint64_t dim = static_cast<uint64_t>(d);
    FLEXTP_CHECK(dim == 0 || count <= data_size / dim, path, ": tensor '", name,
                 "' claims more elements than the file holds");
    count *= dim;
    shape.push_back(d);
  }
  FLEXTP_CHECK(entry.offsets_unsigned, path, ": tensor '", name, "' has non-integer data_offsets");
  uint64_t begin = entry.offsets[0], end = entry.offsets[1];
  FLEXTP_CHECK(begin <= end && end <= data_size, path, ": tensor '", name, "' byte range [",
               begin, ", ", end, ") lies outside the ", data_size, " data bytes (truncated file?)");
  FLEXTP_CHECK(end - begin == count * dtype_size(dtype), path, ": tensor '", name, "' has ",
               end - begin, " bytes but its shape ", shape_str(shape), " and dtype need ",
               count * dtype_size(dtype));
  return {name, dtype, shape, begin, end};
}

// The ranges tile the data exactly, as the format requires: aliased or overlapping ranges
// would let a small file claim many times its size, and bytes of no tensor mean damage.
void check_tiling(const std::vector<Entry>& entries, const std::string& path, uint64_t data_size) {
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
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path) {
  OpenedFile f = open_safetensors(path);
  std::ifstream& in = f.in;
  const uint64_t data_start = f.data_start(), data_size = f.data_bytes();
  SafetensorsFile out;
  // Every entry is checked, and the ranges against each other, before any tensor is allocated.
  std::vector<Entry> entries;
  for (const RawEntry& entry : read_header(path, f, out.metadata)) entries.push_back(checked_entry(entry, path, data_size));
  check_tiling(entries, path, data_size);
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
  std::map<std::string, std::string> metadata;
  read_header(path, open_safetensors(path), metadata);
  return metadata;
}

}  // namespace flextp
