// IntQwen3's forward profile (`detverify bench`'s "a step" line): which calls and products it
// counts, and the weight bytes it says they read, against the model's shape (the bytes are its
// linear layers' k x n, counted here from the config, not from the packed weights the profile
// reads them from). Times are the machine's; only their order is checked.
#include <gtest/gtest.h>

#include <vector>

#include "engine/model.h"
#include "tests/engine/test_support.h"

namespace dv {
namespace {

struct Shape {
  int64_t layer_bytes = 0;  // every decoder layer's q, k, v, o, gate, up and down, k x n int8
  int64_t head_bytes = 0;   // the LM head, hidden x vocab
};

Shape BytesOf(const ModelConfig& c) {
  const int64_t q = c.n_q_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  const int64_t attention = c.hidden * q + 2 * c.hidden * kv + q * c.hidden;
  const int64_t mlp = 2 * c.hidden * c.intermediate + c.intermediate * c.hidden;
  return {c.n_layers * (attention + mlp), c.hidden * c.vocab};
}

class ForwardProfileTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ForwardProfileTest, CountsCallsProductsAndWeightBytes) {
  test::TinyModel tiny(GetParam());
  const ModelConfig& c = tiny.config();
  Backend& backend = *tiny.backend;
  IntQwen3& model = tiny.model;
  const Shape shape = BytesOf(c);

  std::vector<int32_t> ids = {5, 9, 13, 17, 21};
  KvCache a(c, 16, backend), b(c, 16, backend);
  std::vector<int32_t> la(static_cast<size_t>(c.vocab)), lb(la.size());
  ForwardProfile p;
  model.set_profile(&p);
  // A prefill of two rows whose last logits share one LM head product: one call.
  ForwardRow rows[] = {{&a, ids.data(), 5, la.data(), nullptr},
                       {&b, ids.data(), 3, lb.data(), nullptr}};
  model.Forward(rows);
  EXPECT_EQ(p.calls, 1);
  EXPECT_EQ(p.layer_bytes, shape.layer_bytes);
  EXPECT_EQ(p.head_bytes, shape.head_bytes);
  // Two decode steps of one row.
  for (int step = 0; step < 2; ++step) {
    ForwardRow one[] = {{&a, ids.data() + step, 1, la.data(), nullptr}};
    model.Forward(one);
  }
  EXPECT_EQ(p.calls, 3);
  EXPECT_EQ(p.layer_bytes, 3 * shape.layer_bytes);
  EXPECT_EQ(p.head_bytes, 3 * shape.head_bytes);
  // A row that wants every token's logits gets its own LM head product, beside the one the
  // others' last tokens share: the head is read twice in this call.
  std::vector<int32_t> all(static_cast<size_t>(2 * c.vocab));
  ForwardRow mixed[] = {{&a, ids.data(), 2, nullptr, all.data()},
                        {&b, ids.data(), 1, lb.data(), nullptr}};
  model.Forward(mixed);
  EXPECT_EQ(p.calls, 4);
  EXPECT_EQ(p.layer_bytes, 4 * shape.layer_bytes);
  EXPECT_EQ(p.head_bytes, 5 * shape.head_bytes);
  // The products are part of their calls.
  EXPECT_GT(p.layer_ns, 0);
  EXPECT_GT(p.head_ns, 0);
  EXPECT_LE(p.layer_ns + p.head_ns, p.total_ns);

  // Detached: nothing more is added.
  model.set_profile(nullptr);
  const ForwardProfile before = p;
  ForwardRow again[] = {{&b, ids.data(), 1, lb.data(), nullptr}};
  model.Forward(again);
  EXPECT_EQ(p.calls, before.calls);
  EXPECT_EQ(p.total_ns, before.total_ns);
  EXPECT_EQ(p.layer_bytes, before.layer_bytes);
}

// The reference backend and the cpu backend (its team region) alike.
INSTANTIATE_TEST_SUITE_P(Backends, ForwardProfileTest, ::testing::Values("reference", "cpu"));

}  // namespace
}  // namespace dv
