// Text helpers shared by the OS implementations (internal to os/).
#pragma once

#include <string>
#include <string_view>

namespace dv::os::internal {

std::string Trim(std::string_view text);
// Strings from the OS are hashed into machine ids: keep them printable ASCII so that a stray
// byte can neither break canonical JSON's UTF-8 check nor hide in a report.
std::string Printable(std::string_view text);

}  // namespace dv::os::internal
