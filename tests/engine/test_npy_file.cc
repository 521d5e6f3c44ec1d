// The .npy writer of `generate --dump-logits`: header bytes exactly as numpy.save (numpy 2.4.6)
// writes them for the same arrays, little-endian elements on any host, and the file appearing
// only when complete. (scripts/float_engine/make_float_reference.py also opens real dumps with
// numpy.load.)
#include <gtest/gtest.h>

#include <bit>
#include <filesystem>

#include "base/expected_error.h"
#include "engine/npy_file.h"
#include "tests/support/npy_reader.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

using test_files::ScratchDir;

std::string NumpyHeader(const std::string& dict_and_padding) {
  std::string h = "\x93NUMPY";
  h += std::string("\x01\x00", 2);
  h.push_back(static_cast<char>(dict_and_padding.size() & 0xff));
  h.push_back(static_cast<char>(dict_and_padding.size() >> 8));
  return h + dict_and_padding;
}

TEST(NpyFile, HeaderBytesAsNumpyWritesThem) {
  // io.BytesIO(); numpy.save(b, numpy.zeros((3, 5), numpy.int32)); etc.
  EXPECT_EQ(NpyHeader(NpyElement::kInt32, 3, 5),
            NumpyHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (3, 5), }" +
                        std::string(58, ' ') + "\n"));
  EXPECT_EQ(NpyHeader(NpyElement::kFloat32, 512, 151936),
            NumpyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (512, 151936), }" +
                        std::string(51, ' ') + "\n"));
  EXPECT_EQ(NpyHeader(NpyElement::kInt32, 7, 1024),
            NumpyHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (7, 1024), }" +
                        std::string(55, ' ') + "\n"));
  for (int64_t rows : {1, 99, 123456}) {
    EXPECT_EQ(NpyHeader(NpyElement::kFloat32, rows, 8).size() % 64, 0u);
  }
}

TEST(NpyFile, WritesLittleEndianRowsAtomically) {
  ScratchDir d("npy");
  const std::string path = d.File("logits.npy");
  {
    NpyWriter w(path, NpyElement::kInt32, 2, 3);
    w.AppendRow(std::vector<int32_t>{1, -2, 0x01020304});
    EXPECT_FALSE(std::filesystem::exists(path)) << "visible before Finish";
    w.AppendRow(std::vector<int32_t>{INT32_MIN, INT32_MAX, 0});
    w.Finish();
  }
  const auto a = test_files::ReadNpy(path);
  EXPECT_EQ(a.descr, "<i4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.ToInt64(), (std::vector<int64_t>{1, -2, 0x01020304, INT32_MIN, INT32_MAX, 0}));
  EXPECT_EQ(a.data[8], 0x04) << "little-endian";
  EXPECT_EQ(a.data[11], 0x01);

  const std::string fpath = d.File("f.npy");
  NpyWriter f(fpath, NpyElement::kFloat32, 1, 4);
  const float row[4] = {1.5f, -0.0f, 3.25e-3f, 65504.0f};
  f.AppendRow(row, 4);
  f.Finish();
  const auto b = test_files::ReadNpy(fpath);
  EXPECT_EQ(b.descr, "<f4");
  EXPECT_EQ(b.ToFloat64(), (std::vector<double>{1.5, -0.0, 3.25e-3f, 65504.0}));
  EXPECT_EQ(b.data[3], 0x3f) << "1.5f = 0x3fc00000, little-endian";
}

TEST(NpyFile, IncompleteArraysNeverAppear) {
  ScratchDir d("npy");
  const std::string path = d.File("x.npy");
  {
    NpyWriter w(path, NpyElement::kInt32, 3, 2);
    w.AppendRow(std::vector<int32_t>{1, 2});
    EXPECT_EQ(w.rows_written(), 1);
  }  // destroyed unfinished (an exception unwinding the generation): the temporary goes
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(d.Path())) << "no temporary left behind";
  // A folder that is not there: an expected failure naming the file.
  try {
    NpyWriter w(d.File("no/such/dir/x.npy"), NpyElement::kInt32, 1, 1);
    ADD_FAILURE() << "created a file in a missing folder";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/dir/x.npy: cannot create"), std::string::npos)
        << e.what();
  }
}

// The shape is the caller's promise: a row of the wrong width, or Finish before the last row,
// is a broken invariant (DV_CHECK), never a half-written array.
TEST(NpyFileDeathTest, ShapeMismatchIsAnInvariant) {
  ScratchDir d("npy");
  const std::string path = d.File("x.npy");
  EXPECT_DEATH(
      {
        NpyWriter w(path, NpyElement::kInt32, 3, 2);
        w.AppendRow(std::vector<int32_t>{1, 2, 3});
      },
      "check failed: .*a row of 3 elements, the array has 2 columns");
  EXPECT_DEATH(
      {
        NpyWriter w(path, NpyElement::kInt32, 3, 2);
        w.AppendRow(std::vector<int32_t>{1, 2});
        w.Finish();
      },
      "check failed: .*1 of 3 rows written");
}

}  // namespace
}  // namespace dv
