// A DB file built privately beside its destination and put in place whole (internal to db/):
// a new result DB and a merge's new output never exist half-written under their own name, so a
// process killed while making one leaves either nothing or a complete file.
#pragma once

#include <string>

namespace dv::db {

// A temporary file "<destination><infix><pid>-<n>.tmp" in the destination's folder (so that
// link(2) can put it in place), removed with its journal and log unless it was placed.
class StagedFile {
 public:
  StagedFile(const std::string& destination, const char* infix);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  const std::string& Path() const { return path_; }

  // fsync(2)s the staged file and gives it the destination's name with link(2), which refuses to
  // replace a file; the directory is synced after. Returns false when the destination exists
  // (another process created it meanwhile); throws DbError "<destination>: ..." otherwise.
  bool PlaceIfAbsent(const std::string& destination) const;

 private:
  void Remove() const;

  std::string path_;
};

// A process killed by SIGKILL cannot remove its staged file: removes the staged files for
// `destination` with this infix whose process is gone.
void RemoveStaleStagedFiles(const std::string& destination, const char* infix);

// A log or journal without its database would be replayed onto a new file: throws DbError.
void RequireNoOrphanedLog(const std::string& path);

}  // namespace dv::db
