// A batch's LM head writes every gathered row's logits into that row's buffer, whatever the
// buffers' layout: one block in row order (the product goes straight into it, as GenerateGreedy
// and the bench lay them out), separate buffers, the block in reverse order or with gaps (the
// product goes through the workspace and is copied). The expected logits are each row's own,
// computed alone in a batch of one.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/model.h"
#include "tests/engine/test_support.h"

namespace dv {
namespace {

constexpr int kRows = 4;

class LmHeadRowsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(LmHeadRowsTest, EveryBufferLayoutGetsEachRowsOwnLogits) {
  test::TinyModel tiny(GetParam());
  const ModelConfig& c = tiny.config();
  Backend& backend = *tiny.backend;
  IntQwen3& model = tiny.model;
  const auto vocab = static_cast<size_t>(c.vocab);
  const std::vector<std::vector<int32_t>> prompts = {{5, 9, 13}, {21, 4}, {7, 7, 7, 7, 30}, {11}};
  constexpr int kDecodes = 2;  // decode steps after the prompts, feeding tokens 3 and 8

  // Each row alone: the prompt, then the decode steps; its logits after every call.
  std::vector<std::vector<std::vector<int32_t>>> alone(kRows);
  for (size_t r = 0; r < kRows; ++r) {
    KvCache cache(c, 16, backend);
    std::vector<int32_t> logits(vocab);
    ForwardRow row{&cache, prompts[r].data(), static_cast<int64_t>(prompts[r].size()),
                   logits.data(), nullptr};
    model.Forward(std::span(&row, 1));
    alone[r].push_back(logits);
    for (int step = 0; step < kDecodes; ++step) {
      const int32_t id = 3 + 5 * step;
      ForwardRow next{&cache, &id, 1, logits.data(), nullptr};
      model.Forward(std::span(&next, 1));
      alone[r].push_back(logits);
    }
  }

  // Where row r's logits go in a block of kRows + 1 rows' room: in order, reversed, spaced.
  const std::vector<std::vector<size_t>> layouts = {{0, 1, 2, 3}, {3, 2, 1, 0}, {0, 2, 3, 4}};
  for (size_t layout = 0; layout <= layouts.size(); ++layout) {
    SCOPED_TRACE(layout == layouts.size() ? "separate buffers"
                                          : "block layout " + std::to_string(layout));
    std::vector<int32_t> block((kRows + 1) * vocab, -1);
    std::vector<std::vector<int32_t>> separate(kRows, std::vector<int32_t>(vocab, -1));
    std::vector<int32_t*> out(kRows);
    for (size_t r = 0; r < kRows; ++r) {
      out[r] =
          layout == layouts.size() ? separate[r].data() : block.data() + layouts[layout][r] * vocab;
    }
    std::vector<std::unique_ptr<KvCache>> caches;
    std::vector<ForwardRow> rows;
    for (size_t r = 0; r < kRows; ++r) {
      caches.push_back(std::make_unique<KvCache>(c, 16, backend));
      rows.push_back({caches[r].get(), prompts[r].data(), static_cast<int64_t>(prompts[r].size()),
                      out[r], nullptr});
    }
    std::vector<int32_t> ids(kRows);
    for (int call = 0; call <= kDecodes; ++call) {
      if (call > 0) {
        for (size_t r = 0; r < kRows; ++r) {
          ids[r] = 3 + 5 * (call - 1);
          rows[r].ids = &ids[r];
          rows[r].n_tokens = 1;
        }
      }
      model.Forward(rows);
      for (size_t r = 0; r < kRows; ++r) {
        ASSERT_EQ(std::vector<int32_t>(out[r], out[r] + vocab), alone[r][static_cast<size_t>(call)])
            << "row " << r << ", call " << call;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, LmHeadRowsTest, ::testing::Values("reference", "cpu"));

}  // namespace
}  // namespace dv
