// Text helpers shared by the OS implementations (internal to os/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dv::os::internal {

std::string Trim(std::string_view text);
// Strings from the OS are hashed into machine ids: keep them printable ASCII so that a stray
// byte can neither break canonical JSON's UTF-8 check nor hide in a report.
std::string Printable(std::string_view text);

// A sysfs cache size ("48K", "2048K", "1M", "32768"; trailing newline allowed) in bytes; -1 when
// the text is not one.
int64_t ParseCacheSize(std::string_view text);
// CPUs in a sysfs CPU list ("0", "0-3", "0,4-5,8"); 0 when the text is not one.
int64_t CountCpuList(std::string_view text);

}  // namespace dv::os::internal
