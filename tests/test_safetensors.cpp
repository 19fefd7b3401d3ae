// safetensors: round trip, and every kind of damaged file refused with the tensor and problem named.
#include <doctest/doctest.h>

#include "core/safetensors.h"
#include "tests/gradcheck.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {
std::string with_header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json + data;
}
}  // namespace

TEST_CASE("safetensors round trip keeps names, dtypes, shapes, values and metadata") {
  test::TempDir dir("st");
  Tensor a = Tensor::randn({3, 4}, 1), b = Tensor::randn({5}, 2, 0, 0, 1, DType::F64);
  Tensor c = Tensor::from_vector<int32_t>({1, -2, 3}, {3}), empty = Tensor::zeros({0, 2});
  write_safetensors(dir.file("x.safetensors"), {{"a", a}, {"b", b}, {"c", c}, {"e", empty}},
                    {{"step", "7"}});
  SafetensorsFile f = read_safetensors(dir.file("x.safetensors"));
  CHECK(f.metadata.at("step") == "7");
  CHECK(f.tensors.size() == 4);
  CHECK(f.tensors.at("a").to_vector<float>() == a.to_vector<float>());
  CHECK(f.tensors.at("b").to_vector<double>() == b.to_vector<double>());
  CHECK(f.tensors.at("c").to_vector<int32_t>() == c.to_vector<int32_t>());
  CHECK(f.tensors.at("e").shape() == Shape{0, 2});
  // The header is padded so data starts 8-byte aligned, as the format recommends.
  std::string bytes = test::read_bytes(dir.file("x.safetensors"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  CHECK(n % 8 == 0);
}

TEST_CASE("damaged safetensors files give clear errors") {
  test::TempDir dir("stbad");
  write_safetensors(dir.file("ok"), {{"w", Tensor::ones({4, 4})}});
  std::string good = test::read_bytes(dir.file("ok"));
  auto err = [&](const std::string& bytes) { return read_safetensors(dir.write("bad", bytes)); };

  CHECK_THROWS_WITH_AS(read_safetensors(dir.file("none")), doctest::Contains("cannot open"), Error);
  CHECK_THROWS_WITH_AS(err("abc"), doctest::Contains("too short"), Error);
  CHECK_THROWS_WITH_AS(err(good.substr(0, good.size() - 10)), doctest::Contains("'w' byte range"),
                       Error);
  std::string huge = good;
  huge[7] = '\x7f';  // header length in the exabytes
  CHECK_THROWS_WITH_AS(err(huge), doctest::Contains("header length"), Error);
  CHECK_THROWS_WITH_AS(err(with_header("{not json", "")), doctest::Contains("not valid JSON"), Error);
  CHECK_THROWS_WITH_AS(err(with_header("[1]", "")), doctest::Contains("not a JSON object"), Error);
  CHECK_THROWS_WITH_AS(
      err(with_header(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", "1234")),
      doctest::Contains("'w' has dtype F16"), Error);
  CHECK_THROWS_WITH_AS(
      err(with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678")),
      doctest::Contains("'w' has 8 bytes but its shape [3]"), Error);
  CHECK_THROWS_WITH_AS(
      err(with_header(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "12345678")),
      doctest::Contains("bad dimension"), Error);
  CHECK_THROWS_WITH_AS(
      err(with_header(R"({"w":{"dtype":"F32","shape":[1000000000000,1000000000000],"data_offsets":[0,8]}})", "12345678")),
      doctest::Contains("more elements than the file holds"), Error);
  CHECK_THROWS_WITH_AS(err(with_header(R"({"w":{"dtype":"F32"}})", "")),
                       doctest::Contains("needs dtype, shape and two data_offsets"), Error);
}

TEST_CASE("tensors' byte ranges must tile the data exactly: no alias, overlap, gap or tail") {
  test::TempDir dir("sttile");
  auto err = [&](const std::string& json, const std::string& data) {
    return read_safetensors(dir.write("bad", with_header(json, data)));
  };
  // Aliases would let a small file make the reader allocate many times its size.
  CHECK_THROWS_WITH_AS(err(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "12345678"),
                       doctest::Contains("tensor 'b' byte range [0, 8) overlaps tensor 'a' [0, 8)"), Error);
  CHECK_THROWS_WITH_AS(err(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", "123456789012"),
                       doctest::Contains("tensor 'b' byte range [4, 12) overlaps tensor 'a' [0, 8)"), Error);
  CHECK_THROWS_WITH_AS(err(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", "123456789012"),
                       doctest::Contains("data bytes [4, 8) belong to no tensor"), Error);
  CHECK_THROWS_WITH_AS(err(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "12345678"),
                       doctest::Contains("data bytes [4, 8) belong to no tensor"), Error);
  CHECK_THROWS_WITH_AS(err(R"({"__metadata__":{"step":"1"}})", "1234"),
                       doctest::Contains("data bytes [0, 4) belong to no tensor"), Error);
  // Tiled in any header order, with empty tensors anywhere: read.
  SafetensorsFile f = read_safetensors(dir.write("ok", with_header(
      R"({"b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},)"
      R"("a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", std::string("\x01\0\0\0\x02\0\0\0", 8))));
  CHECK(f.tensors.at("a").to_vector<int32_t>() == std::vector<int32_t>{1});
  CHECK(f.tensors.at("b").to_vector<int32_t>() == std::vector<int32_t>{2});
  CHECK(f.tensors.at("e").numel() == 0);
}

TEST_CASE("writing is atomic: a failed write leaves the old file") {
  test::TempDir dir("statomic");
  std::string path = dir.file("m.safetensors");
  write_safetensors(path, {{"w", Tensor::ones({2})}});
  std::string before = test::read_bytes(path);
  CHECK_THROWS_AS(write_safetensors(dir.file("missing-dir/m.safetensors"), {{"w", Tensor::ones({2})}}),
                  Error);
  CHECK_THROWS_WITH_AS(write_safetensors(path, {{"w", Tensor::ones({2})}, {"w", Tensor::ones({2})}}),
                       doctest::Contains("appears twice"), Error);
  CHECK(test::read_bytes(path) == before);
}
