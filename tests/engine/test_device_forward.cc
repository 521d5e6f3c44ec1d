// The device-resident forward program (engine/backends/device_forward.h) on a host emulation of
// its executor against IntQwen3 on the reference backend, alone and behind IntQwen3's seam for
// backends with their own pass (Backend::MakeResidentForward): every call's logits (every token's,
// or the last one's), the row scales, the wrap events and the ArithmeticError of a division by
// zero must be the same, for batches of rows of different lengths, prefill split across calls,
// greedy decode, on the DetLLM fixtures (tiny-w2 and tiny-w2b wrap int64), the synthetic model
// and the no-QK-Norm (Llama) artifact, at block sizes 1, 5 and 32, with and without recorded
// replays of the decode calls (the emulation of CUDA graphs).
//
// The emulated executor is as plain as it can be: zero-filled heap memory, memcpy for the
// copies, MatmulI8Ref for the GEMMs (at the device's row strides), every block of a launch
// on HostBlock one after another. What it shares with the CUDA executor is the program itself.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/artifact.h"
#include "engine/backends/device_forward.h"
#include "engine/backends/reference_backend.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/model_source.h"
#include "tests/engine/test_support.h"
#include "tests/engine/trace_compare.h"

namespace dv {
namespace {

using device::Pad4;

class HostExec {
 public:
  HostExec(int threads, bool graphs) : threads_(threads), graphs_(graphs) {}
  void* Alloc(size_t bytes) { return std::calloc(bytes, 1); }
  void Free(void* p) { std::free(p); }
  void Upload(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
  void Download(void* dst, const void* src, size_t bytes) {
    std::memcpy(dst, src, bytes);
    ++downloads_;  // on a GPU, each one waits for the device
  }
  void Zero(void* dst, size_t bytes) { std::memset(dst, 0, bytes); }

  struct Weight final : PackedWeight {
    std::vector<int8_t> w8t;
  };
  // A copy, as the device's: the program may pack a matrix it made for the call (the stacked
  // q/k/v and gate/up weights) and free it afterwards.
  std::unique_ptr<PackedWeight> Pack(const int8_t* w8t, int64_t k, int64_t n) {
    auto w = std::make_unique<Weight>();
    w->w8t.assign(w8t, w8t + k * n);
    w->k = k;
    w->n = n;
    return w;
  }
  void Gemm(const int8_t* a, int64_t m, const PackedWeight& pw, int32_t* c) {
    const auto& w = static_cast<const Weight&>(pw);
    Enqueue([this, a, m, &w, c] {
      // MatmulI8Ref one row at a time: the device's row strides are padded to 4.
      for (int64_t t = 0; t < m; ++t) {
        MatmulI8Ref(a + t * Pad4(w.k), 1, w.k, w.w8t.data(), w.n, c + t * Pad4(w.n));
      }
      ++gemms_;
    });
  }
  int64_t GemmRows(int64_t m) const { return m; }
  template <typename Step>
  void Launch(int64_t items, const Step& step) {
    // As a kernel launch: the step's arguments are taken by value now.
    Enqueue([this, items, step] {
      block::HostBlock b(threads_);
      for (int64_t i = 0; i < items; ++i) step(b, i);
      ++launches_;
    });
  }
  // With graphs on, as the CUDA executor's graphs: the first call of a shape runs eagerly, the
  // second records what it enqueues (the operations with their arguments as they were then)
  // and runs that, later calls replay the recording without calling enqueue. A program that
  // passed a per-call value by value to a step or GEMM would compute with a stale one here, as
  // on the device.
  template <typename F>
  void Run(int64_t tokens, int64_t gathered, F enqueue) {
    if (!graphs_ || seen_.insert({tokens, gathered}).second) {
      enqueue();
      return;
    }
    auto& recorded = recordings_[{tokens, gathered}];
    if (recorded.empty()) {
      recording_ = &recorded;
      enqueue();
      recording_ = nullptr;
    } else {
      ++replays_;
    }
    for (const auto& op : recorded) op();
  }
  void Forget() {
    recordings_.clear();
    seen_.clear();
  }
  void Finish() {}

  int64_t gemms() const { return gemms_; }
  int64_t launches() const { return launches_; }
  int64_t replays() const { return replays_; }
  int64_t downloads() const { return downloads_; }

 private:
  void Enqueue(std::function<void()> op) {
    if (recording_ != nullptr) {
      recording_->push_back(std::move(op));
    } else {
      op();
    }
  }

  int threads_;
  bool graphs_;
  int64_t gemms_ = 0, launches_ = 0, replays_ = 0, downloads_ = 0;
  std::set<std::pair<int64_t, int64_t>> seen_;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::function<void()>>> recordings_;
  std::vector<std::function<void()>>* recording_ = nullptr;
};

// A step that stores the value it was launched with.
struct StoreStep {
  int64_t* cell;
  int64_t value;
  void operator()(block::HostBlock& /*block*/, int64_t /*item*/) const { *cell = value; }
};

// The emulation's replays run what was recorded, with the arguments as they were then, as a
// CUDA graph does: a program that handed a step a per-call value by value (instead of
// uploading it to a fixed buffer first) gets the recorded call's value from the third call of a
// shape on, so the comparisons below would catch it. Without graphs each call runs its own.
TEST(DeviceForwardExecutor, ReplaysHoldTheRecordedArguments) {
  for (const bool graphs : {true, false}) {
    SCOPED_TRACE(graphs ? "graphs" : "eager");
    HostExec exec(1, graphs);
    int64_t cell = 0;
    for (int64_t call = 1; call <= 4; ++call) {
      exec.Run(1, 1, [&] { exec.Launch(1, StoreStep{&cell, call}); });
      EXPECT_EQ(cell, graphs && call > 2 ? 2 : call) << "call " << call;
    }
    EXPECT_EQ(exec.replays(), graphs ? 2 : 0);
    // Another shape is recorded on its own.
    exec.Run(2, 1, [&] { exec.Launch(1, StoreStep{&cell, 7}); });
    EXPECT_EQ(cell, 7);
  }
}

// (block threads, graphs)
class DeviceForwardTest : public ::testing::TestWithParam<std::pair<int, bool>> {
 protected:
  // Runs the same calls through IntQwen3 (reference backend) and the program: rows of the given
  // prompts, prefilled in pieces of `split` tokens (0: whole), then `steps` greedy decode calls
  // of every row at once. Row 0 asks for every token's logits and scales in prefill.
  void Compare(const ModelWeights& w, const std::vector<std::vector<int32_t>>& prompts,
               int64_t split, int64_t steps, int64_t attend_items = 4096) {
    auto ref_backend = MakeReferenceBackend();
    IntQwen3 model(w, *ref_backend);
    HostExec exec(GetParam().first, GetParam().second);
    device::DeviceForward<HostExec> program(w, exec);
    program.set_attend_items(attend_items);
    const int64_t V = w.config.vocab;
    const int64_t capacity = 80;
    std::vector<std::unique_ptr<KvCache>> ca, cb;
    for (size_t r = 0; r < prompts.size(); ++r) {
      ca.push_back(std::make_unique<KvCache>(w.config, capacity, *ref_backend));
      cb.push_back(std::make_unique<KvCache>(w.config, capacity, *ref_backend));
    }
    WrapEvents wraps;
    std::vector<int32_t> next(prompts.size());
    int call = 0;
    auto run = [&](const std::vector<std::vector<int32_t>>& ids, bool all) {
      const size_t n = ids.size();
      std::vector<std::vector<int32_t>> la(n, std::vector<int32_t>(static_cast<size_t>(V))), lb(la);
      const size_t t0 = ids[0].size();
      std::vector<int32_t> aa(all ? t0 * static_cast<size_t>(V) : 0), ab(aa);
      std::vector<int64_t> ma(all ? t0 : 0), mb(ma), ka(ma), kb(ma);
      std::vector<ForwardRow> ra(n), rb(n);
      for (size_t r = 0; r < n; ++r) {
        ra[r] = {ca[r].get(), ids[r].data(), static_cast<int64_t>(ids[r].size()), la[r].data()};
        rb[r] = {cb[r].get(), ids[r].data(), static_cast<int64_t>(ids[r].size()), lb[r].data()};
      }
      if (all) {
        ra[0].all_logits = aa.data(), rb[0].all_logits = ab.data();
        ra[0].all_scale_m = ma.data(), rb[0].all_scale_m = mb.data();
        ra[0].all_scale_k = ka.data(), rb[0].all_scale_k = kb.data();
      }
      model.Forward(ra);
      const int64_t downloads = exec.downloads(), gemms = exec.gemms();
      const int64_t launches = exec.launches();
      program.Forward(rb, &wraps);
      // The results come back in one copy: one wait for the device a call.
      ASSERT_EQ(exec.downloads(), downloads + 1) << "call " << call;
      // A layer is four GEMMs (q/k/v and gate/up stacked) and five launches besides attention;
      // the embedding with the first RMSNorm adds a launch, the LM head a GEMM (every call here
      // wants logits), and the gather of the wanted rows a launch unless every token is wanted
      // (decode). As many launches and GEMMs as graph nodes: what a decode step pays for on a
      // GPU.
      int64_t tokens = 0;
      for (const auto& r : ids) tokens += static_cast<int64_t>(r.size());
      const auto wanted = static_cast<int64_t>((all ? t0 : 1) + n - 1);
      const int64_t layers = w.config.n_layers, heads = tokens * w.config.n_q_heads;
      const int64_t attend_launches = (heads + attend_items - 1) / attend_items;
      ASSERT_EQ(exec.gemms() - gemms, 4 * layers + 1) << "call " << call;
      ASSERT_EQ(exec.launches() - launches,
                1 + layers * (5 + attend_launches) + (wanted == tokens ? 0 : 1))
          << "call " << call;
      for (size_t r = 0; r < n; ++r) {
        ASSERT_EQ(la[r], lb[r]) << "call " << call << ", row " << r;
        ASSERT_EQ(ca[r]->length(), cb[r]->length());
        next[r] = model.GreedyPick(la[r].data());
      }
      ASSERT_EQ(aa, ab) << "call " << call << ": every token's logits";
      ASSERT_EQ(ma, mb) << "call " << call;
      ASSERT_EQ(ka, kb) << "call " << call;
      const WrapEvents& want = model.wrap_events_by_site();
      ASSERT_EQ(want.q_quant, wraps.q_quant) << "call " << call;
      ASSERT_EQ(want.down_input, wraps.down_input) << "call " << call;
      ASSERT_EQ(want.other, wraps.other) << "call " << call;
      ++call;
    };
    // Prefill, in pieces.
    size_t longest = 0;
    for (const auto& p : prompts) longest = std::max(longest, p.size());
    const size_t piece = split > 0 ? static_cast<size_t>(split) : longest;
    for (size_t at = 0; at < longest; at += piece) {
      std::vector<std::vector<int32_t>> ids;
      for (const auto& p : prompts) {
        // Rows whose prompt is done by now decode their greedy token instead.
        if (at < p.size()) {
          ids.emplace_back(p.begin() + static_cast<std::ptrdiff_t>(at),
                           p.begin() + static_cast<std::ptrdiff_t>(std::min(p.size(), at + piece)));
        } else {
          ids.push_back({next[ids.size()]});
        }
      }
      ASSERT_NO_FATAL_FAILURE(run(ids, at == 0));
    }
    for (int64_t s = 0; s < steps; ++s) {
      std::vector<std::vector<int32_t>> ids;
      for (const int32_t t : next) ids.push_back({t});
      ASSERT_NO_FATAL_FAILURE(run(ids, false));
    }
    EXPECT_GT(exec.launches(), 0);
    // Decode calls of one shape after the second are replays.
    if (GetParam().second) {
      EXPECT_GE(exec.replays(), steps - 2);
    }
  }
};

const std::vector<std::vector<int32_t>> kPrompts = {
    {11, 48, 85, 122, 159, 196, 233, 270, 307, 344, 381, 418, 455},
    {5, 9},
    {700, 3, 14, 15, 92, 65, 35}};

TEST_P(DeviceForwardTest, DetllmFixtures) {
  for (const std::string& fixture : test::kDetllmFixtures) {
    SCOPED_TRACE(fixture);
    const auto artifact = Artifact::Load(test::FixtureDir(fixture));
    std::vector<std::vector<int32_t>> prompts = kPrompts;
    const int64_t V = artifact->weights().config.vocab;
    for (auto& p : prompts) {
      for (auto& id : p) id = static_cast<int32_t>(id % V);
    }
    ASSERT_NO_FATAL_FAILURE(Compare(artifact->weights(), prompts, 0, 12));
  }
}

TEST_P(DeviceForwardTest, SyntheticSplitPrefillAndAttentionInChunks) {
  const auto artifact = LoadSynthetic("qwen3-tiny", 0);
  ASSERT_NO_FATAL_FAILURE(Compare(artifact->weights(), kPrompts, 4, 10));
  // Attention launched a few items at a time (its scratch reused across launches).
  ASSERT_NO_FATAL_FAILURE(Compare(artifact->weights(), kPrompts, 0, 4, 3));
}

TEST_P(DeviceForwardTest, LlamaVariantWithoutQkNorm) {
  const auto artifact = Artifact::Load(test::DataDir() + "/llama/llama-tiny-int");
  ASSERT_FALSE(artifact->weights().config.qk_norm);
  std::vector<std::vector<int32_t>> prompts = kPrompts;
  for (auto& p : prompts) {
    for (auto& id : p) id = static_cast<int32_t>(id % artifact->weights().config.vocab);
  }
  ASSERT_NO_FATAL_FAILURE(Compare(artifact->weights(), prompts, 5, 8));
}

// A K- or V-cache denominator that wraps to 0 (docs/SPEC.md §2.3): both refuse the call with
// the same one-line error, and neither row's cache advances. V: the shift xk + v.k - vq_k passes
// 63 for every token (qwen3-tiny); K: on the Llama variant (no QK-Norm, where the K row scale is
// the token's own) the shift k_row_k - kq_k of one channel does.
TEST_P(DeviceForwardTest, DivisionByZeroIsTheSameError) {
  const auto qwen = LoadSynthetic("qwen3-tiny", 0);
  const auto llama = Artifact::Load(test::DataDir() + "/llama/llama-tiny-int");
  for (const bool k_side : {false, true}) {
    SCOPED_TRACE(k_side ? "K cache" : "V cache");
    ModelWeights w = (k_side ? llama : qwen)->weights();
    if (k_side) {
      ASSERT_FALSE(w.config.qk_norm);
      w.layers[1].kq_k[3] = -kMaxArtifactShift;
    } else {
      w.layers[1].vq_k[0] = -kMaxArtifactShift;
    }
    auto backend = MakeReferenceBackend();
    IntQwen3 model(w, *backend);
    HostExec exec(GetParam().first, GetParam().second);
    device::DeviceForward<HostExec> program(w, exec);
    KvCache a(w.config, 16, *backend), b(w.config, 16, *backend);
    const std::vector<int32_t> ids = {1, 2, 3};
    std::vector<int32_t> la(static_cast<size_t>(w.config.vocab)), lb(la);
    ForwardRow ra{&a, ids.data(), 3, la.data()}, rb{&b, ids.data(), 3, lb.data()};
    std::string want, got;
    try {
      model.Forward(std::span(&ra, 1));
    } catch (const ArithmeticError& e) {
      want = e.what();
    }
    WrapEvents wraps;
    try {
      program.Forward(std::span(&rb, 1), &wraps);
    } catch (const ArithmeticError& e) {
      got = e.what();
    }
    ASSERT_FALSE(want.empty()) << "the reference did not divide by zero: the test lost its point";
    EXPECT_NE(want.find(k_side ? "K-cache" : "V-cache"), std::string::npos) << want;
    EXPECT_EQ(want, got);
    EXPECT_EQ(a.length(), 0);
    EXPECT_EQ(b.length(), 0);
  }
}

// A host backend with a resident pass, as the cuda backend is: the reference backend's products
// and row operations for traced calls, the program on the emulated executor for the others.
class ResidentHostBackend final : public Backend {
 public:
  ResidentHostBackend(int threads, bool graphs)
      : ref_(MakeReferenceBackend()), threads_(threads), graphs_(graphs) {}
  std::string_view Name() const override { return "reference-resident"; }
  int NumThreads() const override { return 1; }
  std::unique_ptr<PackedWeight> PackWeight(const int8_t* w8t, int64_t k, int64_t n) override {
    ++host_packs;
    return ref_->PackWeight(w8t, k, n);
  }
  void MatmulI8(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) override {
    ref_->MatmulI8(a, m, w, c);
  }
  void ParallelFor(int64_t n, RangeFn body) override { ref_->ParallelFor(n, body); }
  std::unique_ptr<ResidentForward> MakeResidentForward(const ModelWeights& w) override {
    return std::make_unique<Program>(w, threads_, graphs_, &resident_calls);
  }
  int64_t host_packs = 0, resident_calls = 0;

 private:
  struct Program final : ResidentForward {
    Program(const ModelWeights& w, int threads, bool graphs, int64_t* counter)
        : exec(threads, graphs), program(w, exec), calls(counter) {}
    void Forward(std::span<ForwardRow> rows, WrapEvents* wraps) override {
      ++*calls;
      program.Forward(rows, wraps);
    }
    HostExec exec;
    device::DeviceForward<HostExec> program;
    int64_t* calls;
  };
  std::unique_ptr<Backend> ref_;
  int threads_;
  bool graphs_;
};

// IntQwen3 hands every untraced call to a backend's resident pass and runs a traced one itself,
// packing the weights for it only then, over the same K/V caches: greedy generation (batch,
// split prefill) gives the reference's chains, and a traced call after resident ones gives the
// reference's logits and trace.
TEST_P(DeviceForwardTest, IntQwen3UsesTheResidentPass) {
  const auto artifact = Artifact::Load(test::FixtureDir("tiny-w2"));
  const ModelWeights& w = artifact->weights();
  auto ref = MakeReferenceBackend();
  ResidentHostBackend resident(GetParam().first, GetParam().second);
  IntQwen3 a(w, *ref), b(w, resident);
  EXPECT_EQ(resident.host_packs, 0);
  std::vector<std::vector<int32_t>> rows = kPrompts;
  for (auto& r : rows) {
    for (auto& id : r) id = static_cast<int32_t>(id % w.config.vocab);
  }
  GenerationOptions go;
  go.max_new = 10;
  go.split = 3;
  go.keep_logits = true;
  const auto want = GenerateGreedy(a, rows, go);
  const auto got = GenerateGreedy(b, rows, go);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(want[r].logits_chain, got[r].logits_chain) << "row " << r;
  }
  EXPECT_GT(resident.resident_calls, 10);
  EXPECT_EQ(resident.host_packs, 0);
  EXPECT_EQ(a.wrap_events(), b.wrap_events());

  // One row prefilled by the resident pass, then one traced token on the host path.
  KvCache ca(w.config, 32, *ref), cb(w.config, 32, resident);
  std::vector<int32_t> la(static_cast<size_t>(w.config.vocab)), lb(la);
  const std::vector<int32_t>& prompt = rows[0];
  ForwardRow pa{&ca, prompt.data(), static_cast<int64_t>(prompt.size()), la.data()};
  ForwardRow pb{&cb, prompt.data(), static_cast<int64_t>(prompt.size()), lb.data()};
  a.Forward(std::span(&pa, 1));
  b.Forward(std::span(&pb, 1));
  ASSERT_EQ(la, lb);
  const int32_t next = a.GreedyPick(la.data());
  ForwardRow ta{&ca, &next, 1, la.data()}, tb{&cb, &next, 1, lb.data()};
  test::RecordingSink sa, sb;
  a.Forward(std::span(&ta, 1), &sa);
  b.Forward(std::span(&tb, 1), &sb);
  EXPECT_GT(resident.host_packs, 0);  // packed for the traced call
  EXPECT_EQ(la, lb);
  ASSERT_EQ(sa.tensors.size(), sb.tensors.size());
  for (size_t i = 0; i < sa.tensors.size(); ++i) {
    EXPECT_EQ(sa.tensors[i].name, sb.tensors[i].name);
    EXPECT_EQ(sa.tensors[i].values, sb.tensors[i].values) << sa.tensors[i].name;
  }
}

// The resident pass takes IntQwen3's rows as checked: a token id outside the vocabulary, an
// empty row or a full cache is refused by IntQwen3 before the pass is called.
TEST(DeviceForwardRows, IntQwen3ChecksTheRowsBeforeTheResidentPass) {
  const auto artifact = Artifact::Load(test::FixtureDir("tiny-w2"));
  const ModelWeights& w = artifact->weights();
  const auto V = static_cast<int32_t>(w.config.vocab);
  auto refuse = [&](std::vector<int32_t> ids, int64_t n_tokens, int64_t capacity) {
    ResidentHostBackend resident(1, false);
    IntQwen3 model(w, resident);
    KvCache cache(w.config, capacity, resident);
    std::vector<int32_t> logits(static_cast<size_t>(V));
    ForwardRow row{&cache, ids.data(), n_tokens, logits.data()};
    model.Forward(std::span(&row, 1));
    std::fprintf(stderr, "resident calls: %lld\n", static_cast<long long>(resident.resident_calls));
    std::exit(0);
  };
  EXPECT_DEATH(refuse({1, V, 2}, 3, 8), "check failed: .*token id " + std::to_string(V) +
                                            ", vocabulary " + std::to_string(V));
  EXPECT_DEATH(refuse({-1}, 1, 8), "token id -1, vocabulary");
  EXPECT_DEATH(refuse({1}, 0, 8), "a forward row needs at least one token");
  EXPECT_DEATH(refuse({1, 2, 3}, 3, 2), "K/V cache capacity 2 exceeded");
  // The same call with valid rows reaches the pass (so the refusals above were IntQwen3's).
  EXPECT_EXIT(refuse({1, 2, 3}, 3, 8), ::testing::ExitedWithCode(0), "resident calls: 1");
}

INSTANTIATE_TEST_SUITE_P(BlockSizesAndGraphs, DeviceForwardTest,
                         ::testing::Values(std::pair{1, false}, std::pair{5, true},
                                           std::pair{32, false}, std::pair{32, true}),
                         [](const ::testing::TestParamInfo<std::pair<int, bool>>& p) {
                           return std::to_string(p.param.first) + "_threads" +
                                  (p.param.second ? "_graphs" : "");
                         });

}  // namespace
}  // namespace dv
