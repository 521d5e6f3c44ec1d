// The int64 edges of the DetLLM fixtures, row by row (docs/SPEC.md §8): every row whose
// quantization product a*m wraps int64 -- W1 (the Q quantization, one row per layer, q head and
// token) and W2 (the down-projection input, one row per layer and token) -- and every residual
// add whose alignment shift is 64 or more, in every pass of each fixture's recorded run (the
// prompt pass and the single-token decode passes), on every execution path. The expected rows are
// the lists DetLLM's fixtures publish (tests/data/detllm/README.md for tiny-w2 and tiny-w2b,
// tiny-a/TRACE.md for tiny-a); the engine's per-site wrap counters must count exactly them.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "engine/artifact.h"
#include "engine/model.h"
#include "tests/engine/test_support.h"
#include "tests/engine/trace_compare.h"

namespace dv {
namespace {

// pass 0 is the prompt pass, pass s >= 1 the decode pass that produces the logits of step s.
// token is the index within the pass (0 in a decode pass); head is -1 for a W2 row.
struct Row {
  int64_t pass, layer, head, token;
  bool operator<(const Row& o) const {
    return std::tie(pass, layer, head, token) < std::tie(o.pass, o.layer, o.head, o.token);
  }
  bool operator==(const Row& o) const { return !(*this < o) && !(o < *this); }
};

std::ostream& operator<<(std::ostream& os, const Row& r) {
  os << (r.pass == 0 ? "prompt" : "step " + std::to_string(r.pass)) << " layer " << r.layer;
  if (r.head >= 0) os << " head " << r.head;
  return os << " token " << r.token;
}

// What a run shows, gathered from each pass's trace.
struct Observed {
  std::set<Row> w1, w2;
  std::map<Row, int64_t> big_shifts;  // residual adds (head -1) whose shift rel is >= 64
  std::map<Row, int64_t> w2_rel;      // the MLP residual add's rel of every W2 row
  std::map<Row, int64_t> w2_product;  // down_am, the wrapped a*m, of every W2 row
  std::vector<WrapEvents> per_pass;   // the engine's counters, each pass's increment
  std::vector<std::string> saturation_failures;
};

const std::set<std::string> kKept = {
    "embed.k_res",   "attn.q_smooth", "attn.o_delta_k",   "attn.k_res_out", "attn.h_out",
    "mlp.down_wrap", "mlp.down_am",   "mlp.down_delta_k", "mlp.k_res_out",  "mlp.h_out"};

class KeepingSink : public TraceSink {
 public:
  void Record(const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& values) override {
    // "layer3.mlp.h_out" -> "mlp.h_out"
    const std::string leaf = name.rfind("layer", 0) == 0 ? name.substr(name.find('.') + 1) : name;
    if (kKept.count(leaf)) t[name] = {name, dims, values};
  }
  const std::vector<int64_t>& at(const std::string& name) const { return t.at(name).values; }
  std::map<std::string, test::Recorded> t;
};

void Gather(const KeepingSink& sink, const ModelConfig& c, int64_t pass, int64_t tokens,
            Observed& out) {
  const int64_t d = c.head_dim, H = c.hidden;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    // W1: a = max over the head's d values of |q_smooth| with the row mantissa 2^15 wraps when
    // a >= 2^48 (README, tiny-w2 section).
    const auto& qs = sink.at(p + "attn.q_smooth");
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < c.n_q_heads; ++h) {
        int64_t a = 0;
        for (int64_t j = 0; j < d; ++j) {
          const int64_t v = qs[static_cast<size_t>((t * c.n_q_heads + h) * d + j)];
          a = std::max(a, v < 0 ? -v : v);
        }
        if (a >= (int64_t{1} << 48)) out.w1.insert({pass, l, h, t});
      }
    }
    const auto& k_in = l == 0 ? sink.at("embed.k_res")
                              : sink.at("layer" + std::to_string(l - 1) + ".mlp.k_res_out");
    const auto& k_attn = sink.at(p + "attn.k_res_out");
    const auto& k_mlp = sink.at(p + "mlp.k_res_out");
    const auto& h_attn = sink.at(p + "attn.h_out");
    const auto& h_mlp = sink.at(p + "mlp.h_out");
    for (int64_t t = 0; t < tokens; ++t) {
      const auto i = static_cast<size_t>(t);
      const Row row{pass, l, -1, t};
      const int64_t rel_attn = sink.at(p + "attn.o_delta_k")[i] - k_in[i];
      const int64_t rel_mlp = sink.at(p + "mlp.down_delta_k")[i] - k_attn[i];
      if (rel_attn >= 64) out.big_shifts[{pass, l, -2, t}] = rel_attn;  // -2: the attention add
      if (rel_mlp >= 64) {
        out.big_shifts[row] = rel_mlp;
        // A shift of 64 or more aligns the delta to 0 or -1 (the sign fill): the residual moves
        // by at most one unit, renormalization leaves it, and k_res keeps its value.
        bool ok = k_mlp[i] == k_attn[i];
        for (int64_t j = 0; j < H; ++j) {
          const int64_t diff =
              h_mlp[static_cast<size_t>(t * H + j)] - h_attn[static_cast<size_t>(t * H + j)];
          ok = ok && (diff == 0 || diff == -1);
        }
        if (!ok) {
          std::ostringstream why;
          why << row << " (rel " << rel_mlp << "): the MLP delta was not dropped";
          out.saturation_failures.push_back(why.str());
        }
      }
      if (sink.at(p + "mlp.down_wrap")[i] != 0) {
        out.w2.insert(row);
        out.w2_rel[row] = rel_mlp;
        out.w2_product[row] = sink.at(p + "mlp.down_am")[i];
      }
    }
  }
}

// The fixture's recorded run of one prompt: the prompt pass, then steps - 1 decode passes.
Observed RunRecorded(const Artifact& artifact, Backend& backend, const std::vector<int32_t>& prompt,
                     int64_t steps) {
  IntQwen3 model(artifact.weights(), backend);
  const ModelConfig& c = model.config();
  KvCache cache(c, static_cast<int64_t>(prompt.size()) + steps - 1, model.backend());
  std::vector<int32_t> last(static_cast<size_t>(c.vocab));
  Observed out;
  int32_t next = 0;
  for (int64_t pass = 0; pass < steps; ++pass) {
    KeepingSink sink;
    ForwardRow row{&cache, pass == 0 ? prompt.data() : &next,
                   pass == 0 ? static_cast<int64_t>(prompt.size()) : 1, last.data(), nullptr};
    const WrapEvents before = model.wrap_events_by_site();
    model.Forward({&row, 1}, &sink);
    const WrapEvents after = model.wrap_events_by_site();
    out.per_pass.push_back({after.q_quant - before.q_quant, after.down_input - before.down_input,
                            after.other - before.other});
    Gather(sink, c, pass, row.n_tokens, out);
    next = model.GreedyPick(last.data());
  }
  return out;
}

// A published list of one prompt's rows: (pass, token, rel) of layer-0 W2 rows, (pass, layer,
// head, token) of W1 rows.
struct W2Row {
  int64_t pass, token, rel;  // rel: the MLP residual add's shift (0 when not published)
};
struct Expected {
  std::vector<Row> w1;
  std::vector<W2Row> w2;
  bool rel_published = false;
};

std::vector<W2Row> Prompt(std::initializer_list<int64_t> tokens) {
  std::vector<W2Row> v;
  for (int64_t t : tokens) v.push_back({0, t, 0});
  return v;
}
std::vector<W2Row> Steps(std::initializer_list<int64_t> steps) {
  std::vector<W2Row> v;
  for (int64_t s : steps) v.push_back({s, 0, 0});
  return v;
}
std::vector<W2Row> Join(std::vector<W2Row> a, const std::vector<W2Row>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void ExpectRun(const Observed& got, const Expected& want, const std::string& what) {
  std::set<Row> w1(want.w1.begin(), want.w1.end()), w2;
  std::map<Row, int64_t> big;
  for (const W2Row& r : want.w2) {
    const Row row{r.pass, 0, -1, r.token};
    w2.insert(row);
    if (want.rel_published) {
      ASSERT_TRUE(got.w2_rel.count(row)) << what << ": no W2 row at " << row;
      EXPECT_EQ(got.w2_rel.at(row), r.rel) << what << ": the MLP residual shift at " << row;
      if (r.rel >= 64) big[row] = r.rel;
    }
  }
  EXPECT_EQ(got.w1, w1) << what << ": W1 rows";
  EXPECT_EQ(got.w2, w2) << what << ": W2 rows";
  EXPECT_EQ(got.big_shifts, big) << what << ": residual adds that shift by 64 or more";
  EXPECT_TRUE(got.saturation_failures.empty())
      << what << ": " << (got.saturation_failures.empty() ? "" : got.saturation_failures[0]);
  // The engine counts one event per W1 and per W2 row, in the pass where it occurs, and no
  // other quantization wraps.
  for (size_t pass = 0; pass < got.per_pass.size(); ++pass) {
    const auto p = static_cast<int64_t>(pass);
    const auto in_pass = [p](const std::set<Row>& rows) {
      return std::count_if(rows.begin(), rows.end(), [p](const Row& r) { return r.pass == p; });
    };
    EXPECT_EQ(got.per_pass[pass].q_quant, in_pass(w1)) << what << ": W1 events of pass " << p;
    EXPECT_EQ(got.per_pass[pass].down_input, in_pass(w2)) << what << ": W2 events of pass " << p;
    EXPECT_EQ(got.per_pass[pass].other, 0) << what << ": other wrap events in pass " << p;
  }
}

class WrapRowsTest : public ::testing::Test {
 protected:
  // Runs `prompt_index` (0: the fixture prompt, 1 and 2: the co-prompts, each alone) of the
  // fixture on every execution path and compares with the published rows.
  void Check(const std::string& fixture, size_t prompt_index, const Expected& want,
             const std::function<void(const Observed&)>& extra = nullptr) {
    const std::string dir = test::FixtureDir(fixture);
    const auto expected = test::LoadJson(dir + "/expected.json");
    auto artifact = Artifact::Load(dir);
    const auto& layout = expected["batch"]["row_layout"][prompt_index];
    const auto prompt = layout.value("is_fixture_prompt", false)
                            ? expected["prompt_ids"].get<std::vector<int32_t>>()
                            : layout["prompt_ids"].get<std::vector<int32_t>>();
    for (const auto& [path, backend] : test::EveryExecutionPath()) {
      const Observed got =
          RunRecorded(*artifact, *backend, prompt, expected["steps"].get<int64_t>());
      const std::string what = fixture + " row " + std::to_string(prompt_index) + " on " + path;
      ExpectRun(got, want, what);
      if (extra) extra(got);
    }
  }
};

// tiny-a/TRACE.md: 11 W1 rows in the prompt pass and 5 in the decode passes, no W2 row.
TEST_F(WrapRowsTest, TinyASixteenW1Rows) {
  Expected want;
  want.w1 = {{0, 0, 0, 0},  {0, 0, 0, 1},  {0, 0, 0, 8},  {0, 0, 1, 1}, {0, 0, 1, 2},  {0, 0, 1, 8},
             {0, 0, 1, 15}, {0, 0, 2, 6},  {0, 0, 2, 9},  {0, 0, 3, 5}, {0, 1, 3, 12}, {9, 1, 3, 0},
             {12, 0, 2, 0}, {14, 0, 2, 0}, {15, 0, 1, 0}, {23, 1, 0, 0}};
  Check("tiny-a", 0, want);
}

// README, tiny-w2: 19 W2 rows of layer 0, none at W1; the MLP residual shifts of the 18 rows
// whose exact a*m lies in (2^63, 2^64) are 54..60, and the one row with a*m >= 2^64 (step 47)
// wraps to a positive product, 742876992798068288, with an ordinary shift of -1.
TEST_F(WrapRowsTest, TinyW2NineteenW2Rows) {
  Expected want;
  want.w2 = Join(Prompt({0, 15, 27, 29, 31}),
                 Steps({1, 2, 8, 11, 16, 18, 22, 33, 36, 42, 47, 48, 52, 53}));
  Check("tiny-w2", 0, want, [](const Observed& got) {
    for (const auto& [row, am] : got.w2_product) {
      const int64_t rel = got.w2_rel.at(row);
      if (row.pass == 47) {
        EXPECT_EQ(am, 742876992798068288) << row;
        EXPECT_EQ(rel, -1) << row;
      } else {
        EXPECT_LT(am, 0) << row;
        EXPECT_GE(rel, 54) << row;
        EXPECT_LE(rel, 60) << row;
      }
    }
  });
}

TEST_F(WrapRowsTest, TinyW2CoPromptsAlone) {
  Expected row1, row2;
  row1.w2 =
      Join(Prompt({3, 4, 6, 14}), Steps({11, 12, 16, 18, 20, 26, 35, 37, 42, 50, 59, 60, 61}));
  row2.w2 = Join(Prompt({0, 1, 7, 10, 11, 12, 18, 24, 30, 35, 39}),
                 Steps({13, 24, 31, 35, 39, 43, 46, 49, 57, 59}));
  Check("tiny-w2", 1, row1);
  Check("tiny-w2", 2, row2);
}

// README, tiny-w2b: 15 W2 rows of layer 0 with their MLP residual shifts; the 4 with a shift of
// 64 or more (prompt tokens 3 and 9, steps 1 and 24) are the only int64 shift counts >= 64 of
// the run, and in each of them the MLP delta is dropped (rather than swamping the residual, as
// a count taken mod 64 would make it: test_shift_rule.cc).
TEST_F(WrapRowsTest, TinyW2bFifteenW2RowsFourShiftsPast63) {
  Expected want;
  want.rel_published = true;
  want.w2 = {{0, 3, 64},  {0, 9, 65},  {0, 19, 63}, {1, 0, 66},  {5, 0, 62},
             {15, 0, 62}, {21, 0, 63}, {24, 0, 64}, {26, 0, 62}, {40, 0, 62},
             {41, 0, 60}, {42, 0, 61}, {43, 0, 62}, {44, 0, 60}, {47, 0, 61}};
  Check("tiny-w2b", 0, want, [](const Observed& got) {
    for (const auto& [row, am] : got.w2_product) EXPECT_LT(am, 0) << row;  // all in (2^63, 2^64)
  });
}

TEST_F(WrapRowsTest, TinyW2bCoPromptsAlone) {
  Expected row1, row2;
  row1.rel_published = row2.rel_published = true;
  row1.w2 = {{1, 0, 65}, {32, 0, 65}, {43, 0, 64}};
  row2.w2 = {{0, 5, 65}, {0, 13, 62}, {0, 25, 62}, {0, 29, 63}, {0, 32, 60},
             {2, 0, 61}, {4, 0, 63},  {26, 0, 60}, {29, 0, 61}, {30, 0, 63}};
  Check("tiny-w2b", 1, row1);
  Check("tiny-w2b", 2, row2);
}

}  // namespace
}  // namespace dv
