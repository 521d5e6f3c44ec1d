// Bounded whole-file reads refuse what is not a regular file (without blocking on a FIFO) and
// what is larger than the bound; atomic writes leave the old file or the whole new one.
#include "base/file_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/expected_error.h"
#include "base/sha256.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

using test_files::ScratchDir;

std::string ReadError(const std::string& path, size_t max_bytes) {
  std::string out, error;
  EXPECT_FALSE(ReadFileBounded(path, max_bytes, out, error)) << path;
  EXPECT_TRUE(out.empty());
  return error;
}

TEST(ReadFileBounded, ReadsRegularFilesUpToTheBound) {
  ScratchDir dir("file_io");
  test_files::WriteFile(dir.File("a"), "hello");
  EXPECT_EQ(ReadFileBounded(dir.File("a"), 5), "hello");
  EXPECT_EQ(ReadError(dir.File("a"), 4), "larger than 4 bytes (5 bytes)");
  test_files::WriteFile(dir.File("empty"), "");
  EXPECT_EQ(ReadFileBounded(dir.File("empty"), 0), "");
  const std::string big(3 * kMiB + 17, 'x');
  test_files::WriteFile(dir.File("big"), big);
  EXPECT_EQ(ReadFileBounded(dir.File("big"), 4 * kMiB), big);
  EXPECT_EQ(ReadError(dir.File("big"), 2 * kMiB), "larger than 2 MiB (3145745 bytes)");
}

TEST(ReadFileBounded, RefusesWhatIsNotARegularFile) {
  ScratchDir dir("file_io");
  EXPECT_EQ(ReadError(dir.File("missing"), 100), "no such file");
  EXPECT_EQ(ReadError(dir.Path().string(), 100), "a folder, not a regular file");
  ASSERT_EQ(::mkfifo(dir.File("fifo").c_str(), 0600), 0);
  EXPECT_EQ(ReadError(dir.File("fifo"), 100), "a FIFO, not a regular file");  // and no hang
  EXPECT_EQ(ReadError("/dev/zero", 100), "a character device, not a regular file");
  EXPECT_EQ(NonRegularKind(dir.File("fifo")), "a FIFO");
  EXPECT_EQ(NonRegularKind("/dev/null"), "a character device");
  EXPECT_EQ(NonRegularKind(dir.File("missing")), "");
  try {
    ReadFileBounded(dir.File("fifo"), 100);
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()), dir.File("fifo") + ": a FIFO, not a regular file");
    EXPECT_EQ(e.exit_code(), kExitError);
  }
}

// Files that report size 0 (procfs) are read to their end.
TEST(ReadFileBounded, ReadsProcFiles) {
  if (!PathExists("/proc/self/status")) GTEST_SKIP() << "no /proc";
  const std::string status = ReadFileBounded("/proc/self/status", kMiB);
  EXPECT_NE(status.find("Name:"), std::string::npos);
}

TEST(WriteFileAtomic, ReplacesWholeAndLeavesNoTemporary) {
  ScratchDir dir("file_io");
  const std::string path = dir.File("out.json");
  WriteFileAtomic(path, std::string_view("first"));
  WriteFileAtomic(path, std::string_view("second, longer"));
  EXPECT_EQ(ReadFileBounded(path, 100), "second, longer");
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.Path())) {
    ++entries;
    (void)e;
  }
  EXPECT_EQ(entries, 1u);
  try {
    WriteFileAtomic(dir.File("no/such/folder/x"), std::string_view("x"));
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir.File("no/such/folder/x") + ": cannot create", 0), 0u)
        << e.what();
  }
}

TEST(Sha256, KnownVectorsAndFiles) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 incremental;
  incremental.Update("a").Update("bc");
  EXPECT_EQ(incremental.FinalHex(), Sha256Hex("abc"));
  incremental.Reset().Update("");
  EXPECT_EQ(incremental.FinalHex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ScratchDir dir("file_io");
  const std::string big(2 * kMiB + 3, 'q');  // more than one read piece
  test_files::WriteFile(dir.File("big"), big);
  EXPECT_EQ(Sha256FileHex(dir.File("big")), Sha256Hex(big));
  EXPECT_THROW(Sha256FileHex(dir.File("missing")), FileError);
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'A')));
  EXPECT_EQ(HexLower(std::vector<uint8_t>{0x00, 0xab, 0xff}), "00abff");
}

}  // namespace
}  // namespace dv
