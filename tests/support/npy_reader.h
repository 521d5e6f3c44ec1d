// Reads a whole .npy file (format 1.0 / 2.0, little-endian, C order) for tests: the float
// engine's reference logits (tests/data/float) and the files `generate --dump-logits` writes.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/scratch_files.h"

namespace dv::test_files {

struct NpyArray {
  std::string header;  // the dict text
  std::string descr;   // "<f4", "<f8", "<i4", "<i8"
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // little-endian elements

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  uint64_t Element(size_t i, size_t size) const {
    uint64_t v = 0;
    for (size_t b = size; b-- > 0;) v = (v << 8) | data[i * size + b];
    return v;
  }
  std::vector<double> ToFloat64() const {
    std::vector<double> v(static_cast<size_t>(numel()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (descr == "<f4") {
        v[i] = std::bit_cast<float>(static_cast<uint32_t>(Element(i, 4)));
      } else if (descr == "<f8") {
        v[i] = std::bit_cast<double>(Element(i, 8));
      } else {
        throw std::runtime_error("npy: " + descr + " is not a float type");
      }
    }
    return v;
  }
  std::vector<int64_t> ToInt64() const {
    std::vector<int64_t> v(static_cast<size_t>(numel()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (descr == "<i4") {
        v[i] = static_cast<int32_t>(static_cast<uint32_t>(Element(i, 4)));
      } else if (descr == "<i8") {
        v[i] = static_cast<int64_t>(Element(i, 8));
      } else {
        throw std::runtime_error("npy: " + descr + " is not an integer type");
      }
    }
    return v;
  }
};

inline NpyArray ReadNpy(const std::string& path) {
  const std::string b = ReadFile(path);
  auto fail = [&](const std::string& what) { throw std::runtime_error(path + ": " + what); };
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) fail("not a .npy file");
  const auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(b[i])); };
  size_t header_len = 0, offset = 0;
  if (b[6] == 1) {
    header_len = byte(8) | (byte(9) << 8);
    offset = 10;
  } else if (b[6] == 2 && b.size() >= 12) {
    header_len = byte(8) | (byte(9) << 8) | (byte(10) << 16) | (byte(11) << 24);
    offset = 12;
  } else {
    fail("unsupported .npy version");
  }
  if (header_len > b.size() - offset) fail("truncated header");
  NpyArray a;
  a.header = b.substr(offset, header_len);
  std::smatch m;
  if (!std::regex_search(a.header, m, std::regex("'descr': *'<([fi][48])'"))) fail("descr");
  a.descr = "<" + m[1].str();
  if (!std::regex_search(a.header, std::regex("'fortran_order': *False"))) fail("fortran order");
  if (!std::regex_search(a.header, m, std::regex("'shape': *\\(([0-9, ]*)\\)"))) fail("shape");
  const std::string dims = m[1];
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    a.shape.push_back(std::stoll(it->str()));
  }
  const size_t size = static_cast<size_t>(a.descr[2] - '0');
  if (b.size() - offset - header_len != static_cast<size_t>(a.numel()) * size) {
    fail("data size does not match the shape");
  }
  a.data.assign(b.begin() + static_cast<std::ptrdiff_t>(offset + header_len), b.end());
  return a;
}

}  // namespace dv::test_files
