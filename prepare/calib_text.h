// Calibration from plain text, as DetLLM calibrates on WikiText2: the whole file tokenized at
// once (no special tokens added), then cut into `samples` consecutive chunks of `len` tokens.
#pragma once

#include <cstdint>
#include <string>

#include "prepare/calibration_set.h"
#include "tokenizer/tokenizer.h"

namespace dv {

// Throws ArtifactError "<path>: ..." (unreadable, larger than 1 GiB, too few tokens) or the
// tokenizer's TokenizerError.
CalibrationSet TokenizeCalibrationText(const std::string& path, const tok::Tokenizer& tokenizer,
                                       int64_t samples, int64_t len, int64_t vocab);

}  // namespace dv
